"""What the format tests share: a declaration, the `Source` a declared source becomes (built here by hand, as
`tasks.ingest.declared.source` builds it), its adapter run on rows, and its synthetic rows run through the ingest's
preparation, checked against their manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemas.pair import CandidatePair, Rejection
from tasks.ingest.declared.formats import FORMATS
from tasks.ingest.declared.model import Declaration
from tasks.ingest.prepare import PreparedBatch, prepare_batch
from tasks.ingest.read import RawBatch, read_jsonl
from tasks.ingest.sources import SOURCES, AdapterContext
from tasks.ingest.sources.base import Source
from tasks.ingest.synth import write_synth
from tasks.ingest.synth_rows import SynthManifest


def declaration(fmt: str, name: str = "my-prefs", **kw: Any) -> Declaration:
    return Declaration(name=name, origin=Path("/tmp/sources.toml"), format=fmt, license="cc-by-4.0", **kw)


def source_of(decl: Declaration) -> Source:
    fmt = FORMATS[decl.format]
    assert fmt.check(decl) == [], fmt.check(decl)
    return Source(name=decl.name, hub_id=f"local/{decl.name}", config=None, splits=decl.splits,
                  license=decl.license, raw_schema=fmt.raw_schema(decl), kind="pairs", adapt=fmt.adapter(decl),
                  source_id=fmt.source_id(decl), clear_label=fmt.clear_label(decl),
                  names_models=fmt.names_models(decl), synth=fmt.synth(decl),
                  finite_checked_by_adapter=fmt.finite_checked(decl))


def adapt(decl: Declaration, row: dict[str, Any], settings) -> tuple[list[CandidatePair], list[Rejection]]:
    """What the format's adapter alone makes of one row (no raw schema, no pair schema)."""
    made = list(FORMATS[decl.format].adapter(decl)(row, AdapterContext(settings, "train", "t:1")))
    return [r for r in made if isinstance(r, CandidatePair)], [r for r in made if isinstance(r, Rejection)]


def prepare(decl: Declaration, rows: list[dict[str, Any]], settings) -> PreparedBatch:
    """The ingest's preparation of a batch of rows (raw schema, adapter, pair schema) as a declared source."""
    return prepare_batch(RawBatch("train", rows, [f"t:{i + 1}" for i in range(len(rows))]), source_of(decl),
                         settings, "t", first=False)


def reasons_of(prepared: PreparedBatch) -> dict[int, list[str]]:
    """row index -> its quarantine reasons."""
    return {int(q.position.rsplit(":", 1)[1]) - 1: q.reasons for q in prepared.quarantined}


def synth_through_ingest(decl: Declaration, tmp_path: Path, settings, monkeypatch, n: int = 600, seed: int = 3,
                         **kw: Any) -> tuple[SynthManifest, list[str], list[PreparedBatch]]:
    """Synthetic rows of `decl` (every bad kind planted), written by the synth machinery and prepared as an ingest
    would: each bad row must get its reason, every other row its pairs."""
    monkeypatch.setitem(SOURCES, decl.name, source_of(decl))
    path = tmp_path / "rows.jsonl"
    m = write_synth(path, decl.name, n, seed=seed, pair_bytes=kw.pop("pair_bytes", 900),
                    bad_rate=kw.pop("bad_rate", 0.12), **kw)
    lines = path.read_text().splitlines()
    prepared = [prepare_batch(b, SOURCES[decl.name], settings, str(path)) for b in read_jsonl(path, batch_size=200)]
    return m, lines, prepared


def check_manifest(m: SynthManifest, prepared: list[PreparedBatch], expected_bad_kinds: set[str]
                   ) -> dict[int, list[str]]:
    """Every planted bad row got its reason, and no other row was quarantined (but the rows that make no pair by
    design); returns the quarantine reasons by row index."""
    quarantined: dict[int, list[str]] = {}
    for p in prepared:
        quarantined |= {int(q.position.rsplit(":", 1)[1]) - 1: q.reasons for q in p.quarantined}
    assert {k for k, _ in m.bad_rows.values()} == expected_bad_kinds
    for i, (kind, reason) in m.bad_rows.items():
        assert i in quarantined, kind
        assert any(r.startswith(reason) for r in quarantined[i]), (kind, reason, quarantined[i])
    assert set(quarantined) <= set(m.bad_rows) | set(m.no_clear_preference), \
        {i: quarantined[i] for i in set(quarantined) - set(m.bad_rows)}
    return quarantined


def lines_as_rows(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]

"""Seeded synthetic rows with planted duplicates, near duplicates, contamination and bad rows, in the shape of
each registered source that declares them (`Source.synth`, made of `tasks.ingest.synth_rows`). Tests and
benchmarks use them; the manifest is the ground truth.

Rows are generated in a stream (no 100k-row list in memory); a duplicate copies one of the last
`_WINDOW` good rows.
"""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common.errors import InvalidInputError
from tasks.ingest.declared.model import AUTO
from tasks.ingest.declared.source import format_name
from tasks.ingest.read import file_revision
from tasks.ingest.sources import SOURCES, declared_sources
from tasks.ingest.synth_rows import SynthManifest, SynthRows, TextMaker

_WINDOW = 500


def synth_class(kind: str) -> type[SynthRows]:
    """The synthetic rows of the source called `kind`, as it declares them (`Source.synth`): a built-in source's, or
    a declared one's (its format's rows under its declaration's column names)."""
    source = SOURCES.get(kind) or declared_sources().get(kind)
    if source is None or source.synth is None:
        auto = source is not None and format_name(source) == AUTO
        raise InvalidInputError(f"no synthetic rows of {kind!r}" + (": its format is auto (told from its rows); "
                                "declare its format to make rows of it" if auto else
                                f": one of {', '.join(synth_kinds())}"))
    return source.synth


def synth_kinds() -> tuple[str, ...]:
    """The sources that declare synthetic rows, in the registry's order (the built-in ones, then the declared)."""
    return tuple(name for name, source in {**SOURCES, **declared_sources()}.items() if source.synth is not None)


def synth_lines(
    kind: str,
    n: int,
    seed: int = 0,
    *,
    pair_bytes: int = 6000,
    exact_dup_rate: float = 0.03,
    near_dup_rate: float = 0.03,
    bad_rate: float = 0.02,
    contamination_rate: float = 0.0,
    eval_prompts: list[str] | None = None,
    near_edit_range: tuple[float, float] = (0.005, 0.04),
    manifest: SynthManifest | None = None,
) -> Iterator[str]:
    """Yield `n` JSONL lines; fill `manifest` (if given) with what was planted where."""
    gen = synth_class(kind)(seed, pair_bytes, eval_prompts or [])
    m = manifest if manifest is not None else SynthManifest(kind, seed)
    m.kind, m.seed = kind, seed
    recent: deque[tuple[int, dict[str, Any]]] = deque(maxlen=_WINDOW)
    bad_kinds = list(gen.BAD_KINDS)
    n_bad = 0
    for i in range(n):
        roll = gen.rng.random()
        if roll < bad_rate:
            bad_kind = bad_kinds[n_bad % len(bad_kinds)]
            n_bad += 1
            row = gen.bad(bad_kind)
            m.bad_rows[i] = (bad_kind, gen.BAD_KINDS[bad_kind])
            if gen.last_pairs:
                m.pairs[i] = gen.last_pairs
            yield row if isinstance(row, str) else json.dumps(row)
            continue
        roll -= bad_rate
        if recent and roll < exact_dup_rate:
            j, g = gen.rng.choice(recent)
            m.exact_duplicates.append((i, j))
            _count_pairs(m, i, g)
            yield json.dumps(gen.render(g, swap=gen.rng.random() < 0.5))
            continue
        roll -= exact_dup_rate
        if recent and roll < near_dup_rate:
            j, g = gen.rng.choice(recent)
            rate = gen.rng.uniform(*near_edit_range)
            m.near_duplicates.append((i, j, rate))
            _count_pairs(m, i, g)
            yield json.dumps(gen.render(gen.near(g, rate), swap=gen.rng.random() < 0.5))
            continue
        roll -= near_dup_rate
        contaminate = None
        if gen.eval_prompts and roll < contamination_rate:
            contaminate = gen.rng.randrange(len(gen.eval_prompts))
            m.contaminated.append((i, contaminate))
        g = gen.good(contaminate)
        if len(g["history"]) > 1:
            m.valid_multi_turn.append(i)
        if g.get("pairs") == 0:  # every completion ties: no pair, and nothing a duplicate should copy
            m.no_clear_preference.append(i)
        else:
            _count_pairs(m, i, g)
            recent.append((i, g))
        yield json.dumps(gen.render(g))
    m.rows = n


def _count_pairs(m: SynthManifest, i: int, g: dict[str, Any]) -> None:
    """Row `i` makes the pairs of the neutral row `g` (recorded for the kinds that make several a row)."""
    if "pairs" in g:
        m.pairs[i] = g["pairs"]


def synth_eval_prompts(n: int, seed: int = 1) -> list[str]:
    """Prompts of a made-up evaluation set (for planting contamination)."""
    tm = TextMaker(seed + 10_000)
    rng = random.Random(seed)
    return [tm.text(rng.randint(80, 600)) + "?" for _ in range(n)]


def write_synth(path: Path, kind: str, n: int, seed: int = 0, **kwargs: Any) -> SynthManifest:
    """Write `n` rows to `path` (JSONL) and the manifest beside it (`<path>.manifest.json`), which records the
    file's revision: what marks an ingest of it as reading synthetic rows."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    manifest = SynthManifest(kind, seed)
    with path.open("w", encoding="utf-8") as f:
        for line in synth_lines(kind, n, seed, manifest=manifest, **kwargs):
            f.write(line)
            f.write("\n")
    manifest.revision = file_revision(path)
    manifest_path(path).write_text(manifest.to_json())
    return manifest


def manifest_path(path: Path) -> Path:
    return Path(str(path) + ".manifest.json")


def written_by_synth(path: Path, revision: str) -> bool:
    """Whether the file at `path`, read at `revision`, is rows `curate synth` wrote: the manifest beside it records
    that very revision (a file edited since, or a manifest of other bytes, is not)."""
    try:
        found = json.loads(manifest_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(found, dict) and bool(revision) and found.get("revision") == revision


def write_eval_set(path: Path, prompts: list[str]) -> None:
    """Write prompts as an RM-Bench-shaped JSONL file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for i, p in enumerate(prompts):
            f.write(json.dumps({"id": i, "prompt": p, "domain": "chat", "chosen": ["c"], "rejected": ["r"]}) + "\n")

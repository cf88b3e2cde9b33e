"""The pairing rule of rated responses, shared by UltraFeedback and the declared `rated` format: what each makes of
the same rows is pinned (pair ids, labels, metadata, and the reasons and details of what the rule rejects), so
sharing the rule changed no pair of either."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from common.settings import Settings
from tasks.ingest.declared.formats import FORMATS
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import read_jsonl
from tasks.ingest.sources import SOURCES
from tasks.ingest.sources.base import Source
from tasks.ingest.synth import synth_lines
from tests.tasks.ingest.declared.formats.helpers import declaration, source_of

BUILT_IN = next(n for n, s in SOURCES.items() if s.hub_id == "openbmb/UltraFeedback")
GRID = {"built_in": [1.0, 2.1, 3.1, 4.1, 4.1, 5.0], "declared": [0.6, 0.7, 0.7, 0.8, 1.0]}


def _written(name: str, edge: list[dict], tmp_path: Path) -> Path:
    """Synthetic rows of `name` (a fifth of them bad), then the rows of ties, caps and near gaps in `edge`."""
    path = tmp_path / "rows.jsonl"
    lines = list(synth_lines(name, 300, seed=11, bad_rate=0.2, pair_bytes=600))
    path.write_text("\n".join([*lines, *(json.dumps(r) for r in edge)]) + "\n")
    return path


def _edge(grid: list[float], row) -> list[dict]:
    rng = random.Random(5)
    rows = []
    for i in range(200):
        scores = [rng.choice(grid) for _ in range(rng.choice([1, 2, 3, 4, 6]))]
        rows.append(row(i, [(rng.choice(["a", "b", "c", f"r{k}"]), s, rng.choice([6.0, 7.0, 8.0]))
                            for k, s in enumerate(scores)]))
    return rows


def _digest(source: Source, path: Path, cap: int) -> tuple[int, str]:
    settings = Settings(max_completions_per_row=cap)
    made = []
    for batch in read_jsonl(path, batch_size=128):
        prepared = prepare_batch(batch, source, settings, str(path))
        made += [[p.source_id, i, p.history, p.response_a, p.response_b, p.human_label, p.raw_label, p.metadata]
                 for p, i in zip(prepared.pairs, prepared.pair_ids)]
        made += [[q.position, q.reasons, q.detail] for q in prepared.quarantined if q.stage != "read"]
    pairs = sum(len(m) == 8 for m in made)
    return pairs, hashlib.sha256(json.dumps(made, sort_keys=True, default=repr).encode()).hexdigest()[:16]


@pytest.mark.parametrize(("cap", "expected"), [(16, (587, "971d4b648f7c2067")), (3, (377, "1b8a163f4cadb52c"))])
def test_ultrafeedback_makes_the_pairs_it_made_before_the_rule_was_shared(tmp_path, cap, expected):
    edge = _edge(GRID["built_in"], lambda i, items: {
        "instruction": f"question {i}", "models": [f"m{k}" for k in range(len(items))],
        "completions": [{"model": f"m{k}", "response": t, "fine-grained_score": s, "overall_score": o}
                        for k, (t, s, o) in enumerate(items)]})
    assert _digest(SOURCES[BUILT_IN], _written(BUILT_IN, edge, tmp_path), cap) == expected


@pytest.mark.parametrize(("label", "cap", "expected"), [
    ({"scale": [0, 1], "min_gap": 0.1}, 16, (647, "27d6280e7660b6dc")),
    ({"scale": [0, 1], "min_gap": 0.1, "direction": "lower"}, 3, (414, "bf742c95800bf738")),
])
def test_the_rated_format_makes_the_pairs_it_made_before_the_rule_was_shared(tmp_path, monkeypatch, label, cap,
                                                                             expected):
    decl = declaration("rated", label=label, models={"response": "model"})
    monkeypatch.setitem(SOURCES, decl.name, source_of(decl))
    edge = _edge(GRID["declared"], lambda i, items: {
        "prompt": f"question {i}", "responses": [{"response": t, "score": s, "model": f"m{k}"}
                                                 for k, (t, s, _) in enumerate(items)]})
    assert FORMATS["rated"].name == decl.format
    assert _digest(SOURCES[decl.name], _written(decl.name, edge, tmp_path), cap) == expected

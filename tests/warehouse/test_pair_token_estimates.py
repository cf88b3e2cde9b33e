"""Each pair's token estimates by part (migrations 019 and 020): the ingest stores them, pairs ingested before are
filled once in SQL by the same estimate, and a version's lengths are read from them by its chosen side."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pytest

from schemas.pair import CandidatePair
from tasks.curate.select import ROW_SCHEMA
from tasks.ingest.normalize import pair_text_facts
from tests.warehouse.older import warehouse_before
from warehouse.store import Warehouse

# Digits of other scripts are not ASCII digits; combining marks, emoji, CJK and control characters are text.
ALPHABET = "ab 0123456789٣໒\n\t中é🙂\u0301\u200b\x01\"'\\{}[]"


def _text(rng: random.Random, longest: int = 60) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, longest)))


def _pairs(n: int, seed: int) -> list[tuple[str, list[dict], str, str]]:
    rng = random.Random(seed)
    out = [(f"p{i:04d}", [{"role": rng.choice(["user", "assistant", "system"]), "content": _text(rng)}
                          for _ in range(rng.randrange(0, 5))], _text(rng), _text(rng, 3000)) for i in range(n)]
    out.append(("p-empty", [], "", ""))
    out.append(("p-digits", [{"role": "user", "content": "1" * 1000}], "12", "x" * 3001))
    return out


def _warehouse_before_019(path, pairs) -> None:
    con = warehouse_before(path, 19)
    for pair_id, history, a, b in pairs:
        con.execute("INSERT INTO candidate_pairs (pair_id, source, source_id, source_revision, history, response_a, "
                    "response_b, both_bad, est_tokens, ingest_run_id, ingested_at) "
                    "VALUES (?, 's', ?, 'r', ?, ?, ?, false, 1, 'run', now())", [pair_id, pair_id, history, a, b])
    con.close()


def test_pairs_ingested_before_get_the_ingest_estimate_of_each_part(warehouse_path):
    pairs = _pairs(400, seed=19)
    _warehouse_before_019(warehouse_path, pairs)
    with Warehouse(warehouse_path) as wh:
        assert wh.schema_version() >= 20
        got = {r[0]: r[1:] for r in wh.query(
            "SELECT pair_id, prompt_tokens, response_a_tokens, response_b_tokens FROM candidate_pairs")}
    for pair_id, history, a, b in pairs:
        facts = pair_text_facts(CandidatePair("s", pair_id, history, a, b))
        assert got[pair_id] == (facts.prompt_tokens, facts.response_a_tokens, facts.response_b_tokens), pair_id
    assert got["p-empty"] == (0, 8, 8) and got["p-digits"] == (8 + 1000, 8 + 2, 8 + 1001)


def test_a_pair_without_its_estimates_is_refused(warehouse_path):
    with Warehouse(warehouse_path) as wh, pytest.raises(duckdb.ConstraintException, match="prompt_tokens"):
        wh.con.execute("INSERT INTO candidate_pairs (pair_id, source, source_id, source_revision, history, "
                       "response_a, response_b, both_bad, est_tokens, ingest_run_id, ingested_at) VALUES "
                       "('p', 's', 'p', 'r', [], 'a', 'b', false, 1, 'run', now())")


def test_a_versions_lengths_follow_its_chosen_side(warehouse_path):
    row = {"margin": 2.5, "confidence": 1.0, "p_correct": 0.9, "orders_agree": True, "scores_agree": True,
           "spread": 0.0, "verdicts": 2, "human_label": None, "human_agrees": None, "source": "s",
           "source_revision": "r", "domain": None, "language": None, "split": "train"}
    with Warehouse(warehouse_path) as wh:
        for pair_id, tokens in (("p1", (30, 5, 700)), ("p2", (40, 6, 800)), ("p3", (1, 1, 1))):
            wh.con.execute("INSERT INTO candidate_pairs (pair_id, source, source_id, source_revision, history, "
                           "response_a, response_b, both_bad, est_tokens, prompt_tokens, response_a_tokens, "
                           "response_b_tokens, ingest_run_id, ingested_at) VALUES "
                           "(?, 's', ?, 'r', [], 'a', 'b', false, 1, ?, ?, ?, 'run', now())",
                           [pair_id, pair_id, *tokens])
        rows = pa.Table.from_pylist([{**row, "pair_id": "p2", "source_id": "p2", "chosen_side": "b"},
                                     {**row, "pair_id": "p1", "source_id": "p1", "chosen_side": "a"}],
                                    schema=ROW_SCHEMA)
        got = wh.versions.token_estimates(rows).to_pylist()
    assert sorted((r["prompt"], r["chosen"], r["rejected"]) for r in got) == [(30, 5, 700), (40, 800, 6)]

"""What the warehouse computes for a version where the texts are: the same numbers as the Python definitions
(`markdown_marks`, `len`, `prompt_json`), and row digests that see every field."""

from __future__ import annotations

import random

import pyarrow as pa

from tasks.curate.bias import MARKDOWN_RE2, markdown_marks
from tasks.curate.pool import prompt_json
from tasks.curate.select import ROW_SCHEMA
from warehouse.store import Warehouse

# Characters Python and RE2 could read differently: every ASCII control, Unicode spaces and digits, markers.
TRICKY = [chr(c) for c in range(1, 0x80)] + ["\x85", "\xa0", "\u1680", "\u2003", "\u2028", "\u2029", "\u202f",
                                              "\u3000", "\u0663", "\uff11", "é", "😀", "e\u0301", "\ufeff"]
STARTS = ["# ", "## ", "   # ", "    # ", "- ", "* ", "+ ", "1. ", "12) ", "\u0663. ", "\xa0- ", "\u2003* ", "-x",
          "**b**", "__u__", "** x **", "#no", ""]


def _text(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 6)):
        body = "".join(rng.choice(TRICKY) if rng.random() < 0.3 else rng.choice("ab *_#\n") for _ in range(12))
        lines.append(rng.choice(STARTS) + body)
    return rng.choice(["\n", "\r\n", "\n\n", "\x85", "\u2028"]).join(lines)


def _insert_pairs(wh: Warehouse, pairs: list[tuple[str, list[dict], str, str]]) -> None:
    for pair_id, history, a, b in pairs:
        wh.con.execute(
            "INSERT INTO candidate_pairs (pair_id, source, source_id, source_revision, history, response_a, "
            "response_b, both_bad, est_tokens, prompt_tokens, response_a_tokens, response_b_tokens, ingest_run_id, "
            "ingested_at) VALUES (?, 'helpsteer3', ?, 'r', ?, ?, ?, false, 1, 0, 0, 0, 'run', now())",
            [pair_id, pair_id, history, a, b])


def test_lengths_markdown_marks_and_prompt_json_match_the_python_definitions(warehouse_path):
    rng = random.Random(7)
    pairs = [(f"p{i:04d}", [{"role": rng.choice(["user", "assistant"]), "content": _text(rng)}
                            for _ in range(rng.randint(1, 3))], _text(rng), _text(rng)) for i in range(400)]
    pairs.append(("p9999", [{"role": "user", "content": "".join(chr(c) for c in range(1, 0x80))}], "", "- x"))
    with Warehouse(warehouse_path) as wh:
        _insert_pairs(wh, pairs)
        table, verdicts = wh.versions.judged_pool("no-config", MARKDOWN_RE2)
    assert verdicts.num_rows == 0
    got = {r["pair_id"]: r for r in table.to_pylist()}
    assert list(got) == sorted(got)
    marked = 0
    for pair_id, history, a, b in pairs:
        r = got[pair_id]
        assert (r["len_a"], r["len_b"]) == (len(a), len(b)), pair_id
        assert (r["md_a"], r["md_b"]) == (markdown_marks(a), markdown_marks(b)), (pair_id, a, b)
        assert r["prompt_json"] == prompt_json(history), pair_id
        marked += r["md_a"] > 0
    assert marked > 100  # the texts do carry markdown


def test_row_digests_see_every_field_and_null_apart_from_empty(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        _insert_pairs(wh, [("p1", [{"role": "user", "content": "q"}], "A", "B"),
                           ("p2", [{"role": "user", "content": "q"}], "A", "B")])
        row = {"pair_id": "p1", "chosen_side": "a", "margin": 2.5, "confidence": 1.0, "p_correct": 0.9,
               "orders_agree": True, "scores_agree": True, "spread": 0.0, "verdicts": 2, "human_label": 2.0,
               "human_agrees": True, "source": "helpsteer3", "source_id": "p1", "source_revision": "r",
               "domain": "general", "language": "english", "split": "train"}

        def digest(**change) -> str:
            return wh.versions.row_digests(pa.Table.from_pylist([{**row, **change}], schema=ROW_SCHEMA))[0]

        base = digest()
        assert digest() == base
        changes = [{"chosen_side": "b"}, {"margin": 2.4999}, {"p_correct": None}, {"orders_agree": None},
                   {"domain": None}, {"domain": ""}, {"split": "validation"}, {"human_label": -2.0}, {"pair_id": "p2"}]
        digests = [digest(**c) for c in changes]
        assert base not in digests and len(set(digests)) == len(digests)
        both = wh.versions.row_digests(pa.Table.from_pylist([{**row, "pair_id": "p2"}, row], schema=ROW_SCHEMA))
        assert both == [base, digest(pair_id="p2")]  # in pair id order


def test_a_row_no_reviewer_decided_digests_as_before_the_review_columns(warehouse_path):
    """Versions built before rows stored their reviewers keep their content hashes: a row without reviewers has
    the digest it had then (pinned: computed before migration 021), and a reviewed row's digest sees who decided."""
    with Warehouse(warehouse_path) as wh:
        _insert_pairs(wh, [("p1", [{"role": "user", "content": "q"}], "A", "B")])
        row = {"pair_id": "p1", "chosen_side": "a", "margin": 2.5, "confidence": 1.0, "p_correct": 0.9,
               "orders_agree": True, "scores_agree": True, "spread": 0.0, "verdicts": 2, "human_label": 2.0,
               "human_agrees": True, "source": "helpsteer3", "source_id": "p1", "source_revision": "r",
               "domain": "general", "language": "english", "split": "train"}

        def digest(**change) -> str:
            return wh.versions.row_digests(pa.Table.from_pylist([{**row, **change}], schema=ROW_SCHEMA))[0]

        assert digest() == "d8059c2bd5983574a6a877567932b3d5"
        assert digest(p_correct=None, domain=None) == "8104ae4e638119b7d2e53f0181543fd9"
        reviewed = [digest(reviewers=1, reviewers_choice="a"), digest(reviewers=3, reviewers_choice="a"),
                    digest(reviewers=1, reviewers_choice="b")]
        assert len(set(reviewed)) == 3 and digest() not in reviewed

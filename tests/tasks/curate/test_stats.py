"""A version's record of its sources' facts: each source of the judged pool, its labelled pairs, and what its facts
say of the labels, as the card reads them."""

from __future__ import annotations

from tasks.curate.pool import JudgedPair, JudgedPool
from tasks.curate.stats import source_facts_stats
from tasks.ingest.source_facts import SourceFacts


def test_each_source_of_the_pool_with_its_labels_and_where_its_facts_came_from():
    def pair(i: int, source: str, label: float | None) -> JudgedPair:
        return JudgedPair(f"p{i:03d}", source, str(i), "r", [{"role": "user", "content": f"q{i}"}], "a", "b", label,
                          False, None, None, False)

    pool = JudgedPool.of([pair(0, "s", 2.0), pair(1, "s", None), pair(2, "s", -1.0), pair(3, "t", None),
                          pair(4, "u", 3.0)])
    facts = {"s": SourceFacts("s", clear_label=2.0, origin="warehouse"),
             "t": SourceFacts("t", human_labels=False, origin="this build")}
    assert source_facts_stats(pool, facts) == {
        "s": {"pairs": 3, "labelled": 2, "human_labels": True, "clear_label": 2.0, "facts": "warehouse"},
        "t": {"pairs": 1, "labelled": 0, "human_labels": False, "clear_label": 1.0, "facts": "this build"},
        "u": {"pairs": 1, "labelled": 1, "human_labels": True, "clear_label": 1.0, "facts": "assumed"}}
    assert source_facts_stats(JudgedPool.of([]), facts) == {}

"""The dashboard views agree with the base tables they summarize (on a warehouse with every kind of record)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


def test_funnel_counts_come_from_the_runs_and_tables(dashboard_warehouse):
    warehouse, _, summary = dashboard_warehouse
    with Warehouse(warehouse, read_only=True) as wh:
        funnel = {r[0]: r for r in wh.query(
            "SELECT source, read, valid, quarantined, unique_pairs, for_curation, judged, kept FROM dash_funnel "
            "WHERE version = 2")}
        curation = Counter(s for (s,) in wh.query("SELECT source FROM pairs_for_curation"))
        kept = Counter(s for (s,) in wh.query("SELECT source FROM dataset_rows WHERE name = 'dash' AND version = 2"))
    for source in ("helpsteer3", "arena"):
        ingest = summary["ingest"][source]
        read, valid, quarantined, unique, for_curation, judged, kept_n = funnel[source][1:]
        assert (read, valid, quarantined) == (ingest["read"], ingest["valid"], ingest["quarantined_rows"])
        assert read > valid and for_curation == curation[source] and kept_n == kept[source] > 0
        assert unique >= for_curation >= judged >= kept_n


def test_agreement_failures_throughput_and_costs(dashboard_warehouse):
    warehouse, _, summary = dashboard_warehouse
    with Warehouse(warehouse, read_only=True) as wh:
        pairs = wh.query("SELECT source, domain, margin_a, human_label, both_bad FROM dash_pair_verdicts")
        agreement = {(r[0], r[1]): r[2:5] for r in wh.query(
            "SELECT source, domain, pairs, comparable, agree FROM dash_agreement")}
        failures = dict(wh.query("SELECT failure_reason, judgments FROM dash_judge_failures"))
        direct = dict(wh.query("SELECT failure_reason, count(*) FROM judgments WHERE status = 'failed' GROUP BY 1"))
        throughput = wh.query("SELECT judgments, tokens_in, tokens_out FROM dash_judge_throughput")
        totals = wh.query("SELECT count(*), sum(tokens_in), sum(tokens_out) FROM judgments")[0]
        costs = wh.query("SELECT version, kept, judgments, tokens_in + tokens_out FROM dash_version_costs ORDER BY version")
        versions = wh.query("SELECT version, parent_version, added, removed, flipped, row_count FROM dash_versions ORDER BY version")
        stats = json.loads(wh.query("SELECT stats FROM dataset_versions WHERE name = 'dash' AND version = 1")[0][0])
    expected: dict = {}
    for source, domain, margin, human, both_bad in pairs:
        e = expected.setdefault((source, domain), [0, 0, 0])
        e[0] += 1
        if human not in (None, 0) and margin != 0 and not both_bad:
            e[1] += 1
            e[2] += (human > 0) == (margin > 0)
    assert {k: tuple(v) for k, v in expected.items()} == agreement
    assert failures == direct and sum(failures.values()) == sum(summary["judge"]["failed"].values()) > 0
    assert [sum(c) for c in zip(*throughput)] == list(totals)
    assert [c[2] for c in costs] == [totals[0]] * 2 and costs[0][3] == totals[1] + totals[2]
    assert stats["cost"]["tokens_in"] + stats["cost"]["tokens_out"] == costs[0][3]
    (v1, _, a1, r1, f1, n1), (v2, parent, added, removed, flipped, n2) = versions
    assert (v1, a1, r1, f1) == (1, n1, 0, 0) and parent == 1 and n2 - n1 == added - removed and added > 0

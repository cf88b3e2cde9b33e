"""The sources' facts stored beside their pairs (`source_facts`, migration 023): recorded once per run, read back
whole, filled for the built-in sources of a warehouse made before the table existed."""

from __future__ import annotations

import json
from datetime import datetime

from tasks.ingest.source_facts import SourceFacts, stored_facts
from tasks.ingest.sources import PAIR_SOURCES, known_facts
from tests.warehouse.older import warehouse_before
from warehouse.store import Warehouse


def _pair(con, pair_id: str, source: str) -> None:
    con.execute("INSERT INTO candidate_pairs (pair_id, source, source_id, source_revision, history, response_a, "
                "response_b, human_label, both_bad, est_tokens, prompt_tokens, response_a_tokens, response_b_tokens, "
                "ingest_run_id, ingested_at) VALUES (?, ?, ?, 'r', [], 'a', 'b', 2.0, false, 1, 1, 1, 1, 'run', now())",
                [pair_id, source, pair_id])


def _run(con, run_id: str, source: str, started: datetime) -> None:
    con.execute("INSERT INTO ingest_runs (run_id, source, location, source_revision, started_at, status) "
                "VALUES (?, ?, 'file', 'r', ?, 'completed')", [run_id, source, started])


def test_facts_are_recorded_once_per_run_and_the_first_run_stays(warehouse_path):
    facts = SourceFacts("s", clear_label=2.0, license="x", label_meaning={"scale": "-3..3"})
    with Warehouse(warehouse_path) as wh:
        assert wh.sources.source_facts() == {}
        wh.sources.record_source_facts("s", facts.to_json(), facts.meaning_digest(), "run-1")
        wh.sources.record_source_facts("s", facts.to_json(), facts.meaning_digest(), "run-1")  # the same run again
        one = wh.sources.source_facts()
        wh.sources.record_source_facts("s", facts.to_json(), facts.meaning_digest(), "run-2")
        two = wh.sources.source_facts()
        assert wh.query("SELECT count(*) FROM source_facts")[0][0] == 1
        assert not wh.sources.has_pairs("s")
        _pair(wh.con, "p1", "s")
        assert wh.sources.has_pairs("s") and not wh.sources.has_pairs("t") and wh.sources.pair_sources() == ["s"]
    assert one["s"]["first_run_id"] == one["s"]["last_run_id"] == "run-1"
    assert two["s"]["first_run_id"] == "run-1" and two["s"]["last_run_id"] == "run-2"
    assert two["s"]["first_at"] == one["s"]["first_at"] <= two["s"]["last_at"]
    assert SourceFacts.from_json(two["s"]["facts"]) == SourceFacts("s", clear_label=2.0, license="x",
                                                                   label_meaning={"scale": "-3..3"}, origin="warehouse")


def test_a_warehouse_made_before_gets_the_facts_its_built_in_sources_state(warehouse_path):
    con = warehouse_before(warehouse_path, 23)
    for k, name in enumerate(PAIR_SOURCES):
        _pair(con, f"p{k}", name)
        _run(con, f"{name}-old", name, datetime(2026, 1, 1 + k))
        _run(con, f"{name}-new", name, datetime(2026, 2, 1 + k))
    _pair(con, "p-other", "another-build-s-source")  # a source this build never knew
    _run(con, "unpaired-run", "a-source-with-no-pairs", datetime(2026, 3, 1))
    con.close()
    with Warehouse(warehouse_path, read_only=True) as wh:  # a reader does not migrate: it reads the same facts
        unmigrated = stored_facts(wh.sources, known_facts())
    with Warehouse(warehouse_path) as wh:
        assert wh.schema_version() >= 23
        rows = wh.sources.source_facts()
        migrated = stored_facts(wh.sources, known_facts())
    assert set(rows) == set(PAIR_SOURCES)  # nobody knows the other one's facts: none are made up for it
    known = known_facts()
    for k, name in enumerate(PAIR_SOURCES):
        facts = SourceFacts.from_json(rows[name]["facts"])
        # the migration's copy of this build's facts: the meaning the pairs were landed under
        assert facts.meaning() == known[name].meaning() and rows[name]["meaning_digest"] == known[name].meaning_digest()
        assert json.loads(rows[name]["facts"])["declaration"] is None
        assert (rows[name]["first_run_id"], rows[name]["last_run_id"]) == (f"{name}-old", f"{name}-new")
        assert (rows[name]["first_at"], rows[name]["last_at"]) == (datetime(2026, 1, 1 + k), datetime(2026, 2, 1 + k))
        assert migrated[name].origin == "warehouse" and unmigrated[name].origin == "this build"
        assert migrated[name].meaning() == unmigrated[name].meaning()
    for facts in (migrated, unmigrated):
        other = facts["another-build-s-source"]
        assert other.origin == "assumed" and other.clear_label == 1.0 and other.license == ""


def test_the_migration_s_facts_are_those_of_every_built_in_pair_source():
    """The literal facts in 023 cover every built-in pair source, with the digest of their meaning."""
    from warehouse.store import migrations

    sql = next(text for number, _, text in migrations() if number == 23)
    for name, facts in known_facts().items():
        said = f"('{name}', '{facts.meaning_digest()}'"
        assert (said in sql) == (name in PAIR_SOURCES), name

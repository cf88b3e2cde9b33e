"""Every export keeps the contract it declares: its records have exactly its schema's columns, in order, and
read only the stored columns it names; the registry picks what a version publishes and what enters its hash."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest

from tasks.curate.exports import (
    DEFAULT_EXPORTS,
    EXPORT_POLICY_KEYS,
    EXPORTS,
    REVIEW_COLUMNS,
    REVIEWED_ROWS,
    Export,
    ExportContractError,
    UnknownExportError,
    export_options,
    export_settings,
    missing_columns,
    selected_exports,
)

# A stored version row as `wh.versions.version_rows` returns it.
ROW = {"pair_id": "p1", "prompt": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q?"}],
       "chosen": "good", "rejected": "bad", "chosen_side": "a", "margin": 1.5, "confidence": 0.7, "p_correct": 0.91,
       "orders_agree": True, "scores_agree": True, "spread": 0.2, "verdicts": 2, "human_label": 1.0,
       "human_agrees": True, "source": "helpsteer3", "source_id": "s1", "source_revision": "rev", "domain": "code",
       "language": "en", "split": "train", "reviewers": None, "reviewers_choice": None}
REVIEWED = {**ROW, "pair_id": "p3", "chosen_side": "b", "margin": -0.5, "reviewers": 3, "reviewers_choice": "b"}


def _policies(export: Export):
    """The default policy and every combination of the export's own keys switched on, each without and with rows
    reviewers decided."""
    keys = (*export.policy_keys, REVIEWED_ROWS)
    for on in itertools.product((False, True), repeat=len(keys)):
        yield {k: True for k, v in zip(keys, on) if v}


@pytest.mark.parametrize("name", list(EXPORTS))
def test_records_have_the_declared_columns_in_order_and_types(name):
    export = EXPORTS[name]
    for policy in _policies(export):
        records = export.records([ROW, {**ROW, "pair_id": "p2", "chosen_side": "b"}, REVIEWED], policy)
        assert records and all(list(r) == export.schema(policy).names for r in records)
        # the declared schema is what Arrow reads from the records themselves: the published files' schema
        assert pa.Table.from_pylist(records).schema == export.schema(policy)
        assert export.table(records, policy).schema == export.schema(policy)


@pytest.mark.parametrize("name", list(EXPORTS))
def test_an_export_reads_only_the_columns_it_declares(name):
    export = EXPORTS[name]
    for policy in _policies(export):
        reads = export.needs_columns + (REVIEW_COLUMNS if policy.get(REVIEWED_ROWS) else ())
        for row in (ROW, REVIEWED):
            only = {k: row[k] for k in reads}
            assert export.records([only], policy) == export.records([row], policy)
    assert missing_columns(export, ROW) == [] and missing_columns(export, {"pair_id": "p1"})


@pytest.mark.parametrize("name", list(EXPORTS))
def test_a_column_null_everywhere_keeps_its_type(name):
    # no calibration: p_correct is null in every row, and still a float column
    export = EXPORTS[name]
    table = export.table(export.records([{**ROW, "p_correct": None, "language": None}]))
    assert table.schema.field("p_correct").type == pa.float64() and table.schema.field("language").type == pa.string()


def test_a_record_with_undeclared_columns_is_refused():
    class Sloppy(Export):
        name = "sloppy"

        def fields(self, policy=None):
            return [pa.field("pair_id", pa.string())]

        def record(self, row, policy=None):
            return {"pair_id": row["pair_id"], "extra": 1}

    with pytest.raises(ExportContractError, match="'sloppy' made a record with columns \\['extra', 'pair_id'\\]"):
        Sloppy().table(Sloppy().records([ROW]))


def test_every_export_declares_its_card_section():
    for export in EXPORTS.values():
        assert export.name and export.card_variable.isidentifier() and export.card_summary
        assert all(isinstance(t, str) for t in export.hub_tags)


def test_the_default_selection_is_todays_three_formats():
    assert DEFAULT_EXPORTS == ("dpo", "rm", "helpsteer3")
    assert [e.name for e in selected_exports({})] == [e.name for e in selected_exports(None)] == list(DEFAULT_EXPORTS)


def test_a_policy_selects_exports_in_registry_order_and_unknown_names_are_refused():
    assert [e.name for e in selected_exports({"exports": ["helpsteer3", "dpo"]})] == ["dpo", "helpsteer3"]
    with pytest.raises(UnknownExportError, match="unknown export\\(s\\) parquet: the exports are dpo, rm"):
        selected_exports({"exports": ["dpo", "parquet"]})
    with pytest.raises(UnknownExportError, match="at least one export"):
        selected_exports({"exports": []})


def test_export_options_are_what_changes_the_files_and_nothing_under_the_defaults():
    # the content hash of a default version is its rows' alone (`select.content_hash`): unchanged hashes
    assert export_options({}) == {} and export_options({"rm_margin_column": False, "min_abs_margin": 2.0}) == {}
    assert export_options({"rm_margin_column": True}) == {"rm_margin_column": True}
    assert export_options({"exports": list(DEFAULT_EXPORTS)}) == {}
    # rm's key changes nothing when rm is not published; a selection other than the default does
    assert export_options({"rm_margin_column": True, "exports": ["dpo"]}) == {"exports": ["dpo"]}
    assert {"exports", "rm_margin_column"} <= set(EXPORT_POLICY_KEYS)


@pytest.mark.parametrize("name", list(EXPORTS))
def test_a_version_with_reviewed_rows_says_which_and_drops_the_judges_certainty_on_them(name):
    export = EXPORTS[name]
    rows = [ROW, REVIEWED]
    settings = export_settings({}, rows)
    assert settings == {REVIEWED_ROWS: True} and export_settings({}, [ROW]) == {}
    names = export.schema(settings).names
    assert names[-3:] == ["reviewed", "reviewers_choice", "reviewers"] and "reviewed" not in export.schema({}).names
    for record in export.records(rows, settings):
        if record["pair_id"] == "p3":
            assert (record["reviewed"], record["reviewers_choice"], record["reviewers"]) == (True, "b", 3)
            assert record["confidence"] is None and record["p_correct"] is None and record["judge_margin"] == -0.5
        else:
            assert (record["reviewed"], record["reviewers_choice"], record["reviewers"]) == (False, None, 0)
            assert record["confidence"] == ROW["confidence"] and record["p_correct"] == ROW["p_correct"]
    # a version without reviewed rows writes exactly the records it wrote before the review columns existed
    plain = [{k: v for k, v in ROW.items() if k not in REVIEW_COLUMNS}]
    assert export.records(plain, export_settings({}, plain)) == export.records([ROW], {})

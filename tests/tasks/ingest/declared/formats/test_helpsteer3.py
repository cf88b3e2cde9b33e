"""`helpsteer3`: rows of HelpSteer3's preference shape under a declared source's own name."""

from __future__ import annotations

import json

from tasks.ingest.declared.formats import FORMATS, detect_format
from tasks.ingest.sources import helpsteer3 as builtin
from tasks.ingest.sources.base import AdapterContext
from tests.tasks.ingest.declared.formats.helpers import (
    adapt,
    check_manifest,
    declaration,
    prepare,
    synth_through_ingest,
)

HS3 = FORMATS["helpsteer3"]
DECL = declaration("helpsteer3", name="our-release")


def _row(preference=-2, **kw):
    return {"context": [{"role": "user", "content": "What colour is the sky?"}], "response1": "Blue.",
            "response2": "Green.", "overall_preference": preference, "domain": "general", "language": "english", **kw}


def test_a_row_maps_as_the_builtin_source_maps_it_under_the_declared_name(settings):
    (pair,), rejected = adapt(DECL, _row(), settings)
    same = builtin.to_pair(_row(), AdapterContext(settings, "train", "t:1"))
    assert not rejected and pair.source == "our-release" and same.source == "helpsteer3"
    assert (pair.history, pair.response_a, pair.response_b, pair.human_label, pair.raw_label) == \
        (same.history, same.response_a, same.response_b, same.human_label, same.raw_label)
    assert pair.human_label == 2.0 and HS3.clear_label(DECL) == builtin.SOURCE.clear_label == 2.0
    assert adapt(DECL, _row(preference=3), settings)[0][0].human_label == -3.0


def test_renamed_columns_are_read_and_a_label_outside_the_scale_is_quarantined_by_its_column(settings):
    decl = declaration("helpsteer3", columns={"overall_preference": "pref", "context": "conversation"})
    assert HS3.check(decl) == []
    row = _row()
    row["pref"], row["conversation"] = row.pop("overall_preference"), row.pop("context")
    good = prepare(decl, [row], settings)
    assert len(good.pairs) == 1 and not good.quarantined and good.pairs[0].human_label == 2.0
    bad = prepare(decl, [row, {**row, "pref": 7}], settings)
    assert len(bad.pairs) == 1 and bad.quarantined[0].reasons == ["pref:in_range(-3,3)"]


def test_its_synthetic_rows_plant_every_bad_kind_under_the_declared_names(settings, tmp_path, monkeypatch):
    decl = declaration("helpsteer3", columns={"overall_preference": "pref", "response2": "second"})
    m, lines, prepared = synth_through_ingest(decl, tmp_path, settings, monkeypatch)
    check_manifest(m, prepared, set(HS3.synth(decl).BAD_KINDS))
    pairs = [p for b in prepared for p in b.pairs]
    assert len(pairs) == m.rows - len(m.bad_rows) and all(p.source == decl.name for p in pairs)
    good = [json.loads(x) for i, x in enumerate(lines) if i not in m.bad_rows]
    assert all("pref" in r and "second" in r and "overall_preference" not in r for r in good)


def test_detect_prefers_helpsteer3_columns_and_the_meaning_is_the_builtin_scale():
    assert detect_format({"context", "response1", "response2", "overall_preference", "pair_id"}) == "helpsteer3"
    meaning = HS3.label_meaning(DECL)
    assert meaning["scale"] == [-3, 3] and json.loads(json.dumps(meaning)) == meaning
    assert HS3.check(declaration("helpsteer3", label={"scale": [1, 5]}))  # its label is implicit

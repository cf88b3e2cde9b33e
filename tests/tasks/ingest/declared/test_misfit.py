"""A declared source whose rows are another format's: every row quarantined, none paired, and the rows fit another
format than the declared one by auto's detection. Then, and only then, one line naming that format."""

from __future__ import annotations

from collections import Counter

from tasks.ingest.declared.formats import FORMATS
from tasks.ingest.declared.misfit import FormatMisfitError, fitting_format, misfit
from tasks.ingest.declared.source import declared_source
from tasks.ingest.sources import SOURCES
from tests.tasks.ingest.declared.formats.helpers import declaration


def _conversation(answer: str) -> list[dict]:
    return [{"role": "user", "content": "q?"}, {"role": "assistant", "content": answer}]


WHOLE = [{"prompt": "q?", "chosen": _conversation("good"), "rejected": _conversation("bad")}] * 3  # trl-implicit's
ANSWERS = [{"prompt": "q?", "chosen": "good", "rejected": "bad"}] * 3  # trl's
REASONS = Counter({"chosen:assistant_turns_only": 3, "rejected:assistant_turns_only": 3})


def _source(fmt: str, **kw):
    decl = declaration(fmt, **kw)
    return declared_source(decl, FORMATS[fmt])


def test_every_row_quarantined_and_the_rows_another_format_s_names_it_in_one_line():
    err = misfit(_source("trl"), 3, 0, 3, REASONS, WHOLE, "f.jsonl")
    assert isinstance(err, FormatMisfitError)
    message = str(err)
    assert "\n" not in message and message.startswith("f.jsonl: every row of [sources.my-prefs] (trl, ")
    assert "(3 rows: chosen:assistant_turns_only 3, rejected:assistant_turns_only 3)" in message
    assert "its rows fit format 'trl-implicit'" in message and 'declare format = "trl-implicit"' in message


def test_nothing_is_said_when_a_row_paired_a_row_landed_or_the_rows_fit_the_declared_format_or_none():
    trl = _source("trl")
    assert misfit(trl, 3, 1, 3, REASONS, WHOLE, "f") is None  # a row made a pair (and was partly quarantined)
    assert misfit(trl, 3, 0, 2, REASONS, WHOLE, "f") is None  # a row was not quarantined
    assert misfit(trl, 0, 0, 0, Counter(), [], "f") is None  # nothing read
    assert misfit(trl, 3, 0, 3, REASONS, ANSWERS, "f") is None  # trl's rows, quarantined for something else
    assert misfit(trl, 3, 0, 3, REASONS, [{"question": 1}], "f") is None  # no format fits
    assert misfit(trl, 3, 0, 3, REASONS, ["not an object"], "f") is None
    assert misfit(SOURCES["helpsteer3"], 3, 0, 3, REASONS, WHOLE, "f") is None  # a built-in source


def test_the_rows_are_read_under_the_declaration_s_names_as_auto_reads_them():
    renamed = [{"question": r["prompt"], "good": r["chosen"], "bad": r["rejected"]} for r in WHOLE]
    source = _source("trl", columns={"prompt": "question", "chosen": "good", "rejected": "bad"})
    assert fitting_format(source, renamed) == "trl-implicit"
    assert "'trl-implicit'" in str(misfit(source, 3, 0, 3, REASONS, renamed, "f"))

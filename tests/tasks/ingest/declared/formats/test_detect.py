"""`format = "auto"`: the format of a file from its first batch's columns (and rows), in a documented order."""

from __future__ import annotations

import pytest

from tasks.ingest.declared.formats import DETECTION_ORDER, FORMATS, detect_format
from tasks.ingest.declared.model import FORMAT_NAMES, DeclarationError

# a row of each format under its own column names
ROWS = {
    "trl": {"prompt": "q", "chosen": "a", "rejected": "b"},
    "trl-implicit": {"chosen": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                     "rejected": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "b"}]},
    "pairwise": {"prompt": "q", "response_a": "a", "response_b": "b", "preference": "a"},
    "rated": {"prompt": "q", "responses": [{"response": "a", "score": 1}, {"response": "b", "score": 2}]},
    "hh": {"chosen": "\n\nHuman: q\n\nAssistant: a", "rejected": "\n\nHuman: q\n\nAssistant: b"},
    "helpsteer3": {"context": [{"role": "user", "content": "q"}], "response1": "a", "response2": "b",
                   "overall_preference": -1},
}


def test_every_format_is_registered_and_in_the_detection_order():
    assert set(FORMATS) == set(FORMAT_NAMES) == set(DETECTION_ORDER) == set(ROWS)
    assert all(FORMATS[name].name == name for name in FORMATS)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_each_format_is_found_from_its_own_rows_and_beside_extra_columns(name):
    row = {**ROWS[name], "source": "x", "extra": 1}
    assert detect_format(set(row), [row]) == name
    assert detect_format(set(row), [row, row, {**ROWS[name], "note": None}]) == name


def test_a_file_that_holds_two_formats_columns_takes_the_first_in_the_order():
    both = {**ROWS["rated"], **ROWS["pairwise"], **ROWS["trl"]}
    assert detect_format(set(both)) == DETECTION_ORDER[1] == "rated"
    assert detect_format(set(both) | set(ROWS["helpsteer3"])) == DETECTION_ORDER[0] == "helpsteer3"
    assert detect_format(set(ROWS["pairwise"]) | {"chosen", "rejected"}) == "pairwise"


@pytest.mark.parametrize("columns", [set(), {"question", "answer"}, {"chosen"}, {"prompt", "response_a"}])
def test_nothing_fits_is_refused_naming_the_columns_and_every_format(columns):
    with pytest.raises(DeclarationError) as err:
        detect_format(columns)
    message = str(err.value)
    assert "\n" not in message and all(f"{name} (" in message for name in FORMATS)
    assert all(c in message for c in columns)
    assert ("(none)" in message) == (not columns)


def test_whole_conversations_beside_a_prompt_are_trl_implicit_not_trl():
    """UltraFeedback-binarized: a `prompt` text, and `chosen` / `rejected` each the whole conversation (the user turn
    first): TRL's implicit prompt. Told from the rows; from the columns alone `trl` comes first."""
    row = {"prompt": "q", **ROWS["trl-implicit"], "messages": ROWS["trl-implicit"]["chosen"], "score_chosen": 8.0,
           "score_rejected": 5.0}
    assert detect_format(set(row), [row, row]) == "trl-implicit"
    assert detect_format(set(row)) == "trl"
    answers = {**row, "chosen": [{"role": "assistant", "content": "a"}], "rejected": "b"}
    assert detect_format(set(answers), [answers]) == "trl"

"""How a pydantic model's refusal reads: one line, each value with its name, what is wrong and the allowed range."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from common.errors import InvalidInputError, UserError, allowed_range, validated


class Knobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    closed: float = Field(1.0, ge=0.0, le=2.5)
    open_low: float = Field(0.5, gt=0.0, le=1.0)
    open_high: float = Field(0.05, ge=0.0, lt=1.0)
    at_least: int = Field(1, ge=1)
    above: float = Field(1.0, gt=0)
    at_most: int = Field(0, le=10)
    choice: Literal["keep", "drop"] = "keep"
    free: str = "x"


@pytest.mark.parametrize("field,said", [("closed", "0 .. 2.5"), ("open_low", "0 < x <= 1"),
                                        ("open_high", "0 <= x < 1"), ("at_least", ">= 1"), ("above", "> 0"),
                                        ("at_most", "<= 10"), ("choice", None), ("free", None), ("missing", None)])
def test_allowed_range_in_words(field, said):
    assert allowed_range(Knobs, field) == said


def test_validated_builds_or_refuses_in_one_line():
    assert validated(Knobs, {"closed": 2}, "invalid knobs").closed == 2.0
    with pytest.raises(InvalidInputError) as caught:
        validated(Knobs, {"closed": 3, "choice": "maybe", "typo": 1}, "invalid knobs")
    assert str(caught.value) == ("invalid knobs: closed = 3: input should be less than or equal to 2.5 (allowed: "
                                 "0 .. 2.5); choice = 'maybe': input should be 'keep' or 'drop'; unknown key 'typo'")


def test_validated_raises_the_callers_error_class_and_labels():
    class KnobError(UserError, ValueError):
        pass

    with pytest.raises(KnobError, match=r"^bad: KNOB_AT_LEAST = 0: input should be greater than or equal to 1"):
        validated(Knobs, {"at_least": 0}, "bad", KnobError, label=lambda f: f"KNOB_{f.upper()}")


def test_shown_escapes_what_a_terminal_would_act_on_or_hide():
    from common.errors import shown

    assert shown("a\nb\r\x1b[31mred\x7f\x9b\u2028\u202e\u2066\u200b\ufeff") == \
        "a\\nb\\r\\x1b[31mred\\x7f\\x9b\\u2028\\u202e\\u2066\\u200b\\ufeff"
    assert shown("café 日本 🙂 [x] 'q'") == "café 日本 🙂 [x] 'q'"  # everything else as it is

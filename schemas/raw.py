"""pandera schemas for each source's raw rows, checked before an adapter maps them.

Columns are `object`: a raw row may hold anything, and each failing element names its column and check
(the quarantine reason), instead of one dtype error for the whole column.
"""

from __future__ import annotations

import pandera.pandas as pa

from schemas import checks as c


def _ew(fn, name):
    return pa.Check(fn, element_wise=True, name=name)


def _text(nullable: bool = False) -> pa.Column:
    if nullable:
        return pa.Column(None, _ew(c.is_str_or_none, "is_text"), nullable=True)
    return pa.Column(None, _ew(c.is_str, "is_text"))


HELPSTEER3 = pa.DataFrameSchema(
    {
        "domain": _text(nullable=True),
        "language": _text(nullable=True),
        "context": pa.Column(None, _ew(c.is_message_list, "is_message_list")),
        "response1": _text(),
        "response2": _text(),
        "overall_preference": pa.Column(
            None,
            [
                _ew(c.is_int_like, "is_int"),
                _ew(lambda v: not c.is_int_like(v) or -3 <= v <= 3, "in_range(-3,3)"),
            ],
        ),
    },
    strict=False,
)

def _arena_style(id_column: str, winners: tuple[str, ...], is_conversation) -> pa.DataFrameSchema:  # noqa: ANN001
    """An arena-style vote: an id, two model names, a winner among `winners`, two conversations."""
    return pa.DataFrameSchema(
        {
            id_column: _text(),
            "model_a": _text(nullable=True),
            "model_b": _text(nullable=True),
            "winner": pa.Column(None, _ew(lambda v: v in winners, f"in({'|'.join(winners)})")),
            "conversation_a": pa.Column(None, _ew(is_conversation, "is_message_list")),
            "conversation_b": pa.Column(None, _ew(is_conversation, "is_message_list")),
        },
        strict=False,
    )


# arena-140k: message contents are lists of typed parts; lmsys: plain strings
ARENA_140K = _arena_style("id", ("model_a", "model_b", "tie", "both_bad"), c.is_part_message_list)
CHATBOT_ARENA = _arena_style("question_id", ("model_a", "model_b", "tie", "tie (bothbad)"), c.is_message_list)

# Evaluation prompt sets, read only for decontamination.
RM_BENCH = pa.DataFrameSchema({"id": pa.Column(None), "prompt": _text(), "domain": _text(nullable=True)}, strict=False)
JUDGEBENCH = pa.DataFrameSchema({"pair_id": _text(), "question": _text(), "source": _text(nullable=True)}, strict=False)

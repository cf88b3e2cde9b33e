"""Reading a judge's reply without trusting it: every shape is a completion or a named failure."""

from __future__ import annotations

import email.utils

import pytest

from tasks.judge.replies import BadResponse, Completion, cap_text, read_completion, retry_after_seconds


def _body(message=None, **extra):
    body = {"model": "m", "choices": [{"message": {"content": "x</think>{}"} if message is None else message,
                                       "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    body.update(extra)
    return body


def test_a_well_formed_reply_reads_whole():
    reply = read_completion(_body())
    assert reply == Completion("x</think>{}", None, "stop", 3, 2, "m")


@pytest.mark.parametrize("body,what", [
    ([_body()], "body"),
    ("text", "body"),
    (7, "body"),
    ({"choices": "nope"}, "choices"),
    ({"choices": []}, "choices"),
    ({"choices": [3]}, "choice"),
    ({"choices": [{"message": "hi"}]}, "message"),
    (_body({"content": 5}), "content"),
    (_body({"content": ["a"]}), "content"),
    (_body({"content": "a", "reasoning": {"x": 1}}), "reasoning"),
    (_body(usage={"prompt_tokens": "12", "completion_tokens": 1}), "usage"),
    (_body(usage={"prompt_tokens": -1, "completion_tokens": 1}), "usage"),
    (_body(usage={"prompt_tokens": True, "completion_tokens": 1}), "usage"),
    (_body(usage=[1, 2]), "usage"),
    (_body(model=["m"]), "model"),
])
def test_each_wrong_shape_names_what_is_wrong(body, what):
    reply = read_completion(body)
    assert isinstance(reply, BadResponse) and reply.what == what
    assert reply.reason == f"bad_response:{what}"


def test_missing_usage_counts_nothing_and_a_null_reasoning_beside_a_filled_one_is_skipped():
    body = {"choices": [{"message": {"content": "{}", "reasoning_content": None, "reasoning": "thought"}}]}
    reply = read_completion(body)
    assert isinstance(reply, Completion)
    assert (reply.reasoning, reply.tokens_in, reply.tokens_out, reply.finish_reason) == ("thought", 0, 0, None)
    older = read_completion({"choices": [{"message": {"content": "{}", "reasoning_content": "old name"}}]})
    assert older.reasoning == "old name"


def test_long_texts_keep_head_and_tail_and_say_how_much_was_cut():
    text = "H" * 1000 + "m" * 10_000 + "T" * 1000
    capped = cap_text(text, limit=2000)
    assert capped.startswith("H" * 1000) and capped.endswith("T" * 500)
    assert "10000 characters cut: 12000 in all" in capped
    assert len(capped) < 2100
    assert cap_text("short", limit=2000) == "short" and cap_text(None) is None


def test_retry_after_in_seconds_or_as_a_date():
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds(" 1.5 ") == 1.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("nan") is None and retry_after_seconds("inf") is None
    now = 1_900_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_seconds(date, now=now) == pytest.approx(30.0, abs=1.0)

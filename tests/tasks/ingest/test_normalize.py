import random

import pytest

from schemas.pair import CandidatePair
from tasks.ingest import normalize as nz


def _pair(a="alpha answer", b="beta answer", history=None, language=None):
    return CandidatePair("s", "1", history or [{"role": "user", "content": "q?"}], a, b, language=language)


def test_normalize_text_unifies_newlines_nfc_and_outer_space():
    assert nz.normalize_text("  a\r\nb\rc  ") == "a\nb\nc"
    assert nz.normalize_text("e\u0301") == "\u00e9"  # NFD -> NFC


def test_pair_id_ignores_response_order_and_formatting_but_not_content():
    h = [{"role": "user", "content": "q?"}]
    assert nz.pair_id(h, "x", "y") == nz.pair_id(h, "y", "x")
    p1 = nz.normalize_pair(_pair("x\r\n", " y"))
    p2 = nz.normalize_pair(_pair("y", "x"))
    assert nz.pair_id(p1.history, p1.response_a, p1.response_b) == nz.pair_id(p2.history, p2.response_a, p2.response_b)
    assert nz.pair_id(h, "x", "y") != nz.pair_id(h, "x", "z")
    assert nz.pair_id(h, "x", "y") != nz.pair_id([{"role": "user", "content": "other"}], "x", "y")
    # role is part of the identity
    assert nz.pair_id(h, "x", "y") != nz.pair_id([{"role": "assistant", "content": "q?"}], "x", "y")


def test_token_estimate_is_conservative_for_english_cjk_and_digits():
    english = "The quick brown fox jumps over the lazy dog. " * 100  # ~4.5 chars a token in BPE
    assert nz.estimate_text_tokens(english) >= len(english) / 4
    cjk = "你好世界" * 100  # at most one token a character
    assert nz.estimate_text_tokens(cjk) >= len(cjk)
    digits = "1234567890" * 100  # Qwen splits digits
    assert nz.estimate_text_tokens(digits) >= len(digits)


def test_pair_tokens_count_every_message_and_template():
    p = _pair(history=[{"role": "user", "content": "a" * 300}, {"role": "assistant", "content": "b" * 300},
                       {"role": "user", "content": "c" * 300}])
    # 900 bytes of history at 3 bytes a token, the two answers, 5 messages' and the request's overhead
    facts = nz.pair_text_facts(p)
    assert facts.tokens == 300 + 4 + 4 + 5 * 8 + 64
    # the judge's own estimate, from the texts as sent, is the same figure
    assert nz.estimate_request_tokens(nz.texts_of(p)) == facts.tokens
    # by part, each message with its template tokens: what a version's token lengths are made of
    assert (facts.prompt_tokens, facts.response_a_tokens, facts.response_b_tokens) == (300 + 3 * 8, 4 + 8, 4 + 8)
    assert facts.tokens == 64 + facts.prompt_tokens + facts.response_a_tokens + facts.response_b_tokens


def test_pair_parts_are_the_text_estimate_of_each_text_in_any_script():
    rng = random.Random(11)
    alphabet = "ab 09٣\n中é🙂\u0301"
    for _ in range(300):
        def text():
            return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        history = [{"role": "user", "content": text()} for _ in range(rng.randrange(0, 4))]
        p = _pair(text(), text(), history=history)
        facts = nz.pair_text_facts(p)
        assert facts.prompt_tokens == sum(nz.estimate_text_tokens(m["content"]) + 8 for m in p.history)
        assert facts.response_a_tokens == nz.estimate_text_tokens(p.response_a) + 8
        assert facts.response_b_tokens == nz.estimate_text_tokens(p.response_b) + 8


def test_split_shared_history_keeps_agreeing_multi_turn_and_rejects_divergent():
    u1, u2 = {"role": "user", "content": "hi"}, {"role": "user", "content": "more"}
    a1, b1 = {"role": "assistant", "content": "A1"}, {"role": "assistant", "content": "B1"}
    a2, b2 = {"role": "assistant", "content": "A2"}, {"role": "assistant", "content": "B2"}
    assert nz.split_shared_history([u1, a1], [u1, b1]) == ([u1], "A1", "B1")
    same = {"role": "assistant", "content": "same"}
    assert nz.split_shared_history([u1, same, u2, a2], [u1, same, u2, b2]) == ([u1, same, u2], "A2", "B2")
    assert nz.split_shared_history([u1, a1, u2, a2], [u1, b1, u2, b2]) == "multi_turn_divergent_history"
    assert nz.split_shared_history([u1, a1, u2], [u1, b1, u2]) == "conversation_not_ending_with_answer"
    assert nz.last_turn_only([u1, a1, u2, a2], [u1, b1, u2, b2]) == ([u2], "A2", "B2")


def test_to_json_survives_lone_surrogates():
    text = nz.to_json({"x": "a\ud800b"})
    text.encode("utf-8")  # must not raise
    assert "ud800" in text
    assert nz.printable("a\ud800") != "a\ud800"


@pytest.mark.parametrize("raw,code", [
    ("english", "en"), ("English", "en"), ("chinese", "zh"), ("en", "en"), ("zh-Hant", "zh-Hant"), ("pl", "pl"),
    ("zh_Hant", "zh-Hant"), ("und", None), ("", None), (None, None), ("python", None), ("javascript_html_css", None),
])
def test_languages_become_bcp47_codes_or_unknown(raw, code):
    assert nz.language_code(raw) == code


def test_a_pair_keeps_its_source_language_beside_the_code():
    p = nz.normalize_pair(_pair(language="english"))
    assert p.language == "en" and p.metadata["language_raw"] == "english"
    assert "language_raw" not in nz.normalize_pair(_pair(language="en")).metadata


def test_a_leading_reasoning_trace_is_split_from_the_final_answer():
    assert nz.split_reasoning_trace("<think>\nweigh it\n</think>\n\nThe answer is 4.") == ("The answer is 4.", "weigh it")
    assert nz.split_reasoning_trace("  <think>t</think>a</think>b") == ("a</think>b", "t")  # the first close ends it
    assert nz.split_reasoning_trace("<think>never closed") == ("", "never closed")
    assert nz.split_reasoning_trace("No trace. <think>quoted</think>") == ("No trace. <think>quoted</think>", None)
    p = nz.normalize_pair(_pair("<think>long trace</think>Final A", "Final B"))
    assert (p.response_a, p.response_b) == ("Final A", "Final B")
    assert p.metadata["response_a_reasoning_trace"] == "long trace" and "response_b_reasoning_trace" not in p.metadata


# One short paragraph of each kind of text the judge meets; Qwen's BPE counts them from about 1.8 (base64) to
# 6.8 (Thai) UTF-8 bytes a token, so the ingest's estimate is off by 0.5x to 2.3x.
TEXT_KINDS = {
    "english": "The quick brown fox jumps over the lazy dog while the committee reviews the proposal. ",
    "python": "def total(xs: list[int]) -> int:\n    return sum(x * 2 for x in xs if x > 0)\n",
    "chinese": "人工智能正在改变我们的生活方式和工作方式。",
    "russian": "Быстрая коричневая лиса прыгает через ленивую собаку. ",
    "thai": "ภาษาไทยเป็นภาษาที่มีเอกลักษณ์และสวยงามมาก ",
    "latex": r"\int_0^1 \frac{x^2}{\sqrt{1-x^2}}\,dx = \frac{\pi}{4} ",
    "base64": "U29tZSBiYXNlNjQgZW5jb2RlZCBkYXRhIGdvZXMgaGVyZQ== ",
    "symbols": "=+-*/<>!?#@$%^&()[]{}|~`;:,. ",
}


@pytest.mark.parametrize("kind", sorted(TEXT_KINDS))
def test_ingest_never_quarantines_on_the_estimate_a_pair_that_may_fit(kind):
    """The rule: a pair is quarantined for length only past 8 UTF-8 bytes per token of the input budget (more
    than any kind of text averages a Qwen token); below that the judge counts it exactly."""
    import pandas as pd

    from schemas.pair import MAX_BYTES_PER_TOKEN, pair_frame_schema
    from tasks.ingest.validate import row_failures

    budget = 2000
    unit = TEXT_KINDS[kind]
    fits = unit * max(1, (budget * 6) // len(unit.encode()))  # 6 bytes a token: real tokens under the budget
    too_big = unit * (MAX_BYTES_PER_TOKEN * budget // len(unit.encode()) + 2)
    rows = []

    def tokens_of(text):
        return nz.estimate_request_tokens([text])

    for answer in (fits, too_big):
        p = _pair(answer, "Short.")
        facts = nz.pair_text_facts(p)
        ok, size = facts.valid, facts.size
        rows.append({"source": "s", "source_id": "i", "history": p.history, "response_a": p.response_a,
                     "response_b": p.response_b, "human_label": None, "utf8_bytes": size, "text": ok})
    frame = pd.DataFrame(rows, dtype=object)
    frame["human_label"] = pd.to_numeric(frame["human_label"])
    frame["utf8_bytes"] = frame["utf8_bytes"].astype("int64")
    failures = row_failures(frame, pair_frame_schema(budget))
    assert tokens_of(fits) > budget  # the cheap estimate alone would have refused it
    assert 0 not in failures, (kind, failures)
    assert any("fits_judge_context" in r for r in failures[1])

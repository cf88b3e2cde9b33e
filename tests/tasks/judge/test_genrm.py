import pytest

from tasks.judge.genrm import (
    MAX_MARGIN,
    ParseFailure,
    SideVerdict,
    Verdict,
    answer_text,
    build_messages,
    margin_of_ranking,
    mirrored_ranking,
    parse_completion,
    ranking_of_margin,
    scores_agree,
    to_a_side,
)

H = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "q?"}]


def test_build_messages_orders():
    ab = build_messages(H, "A", "B", "ab")
    ba = build_messages(H, "A", "B", "ba")
    assert ab[:3] == H and ab[3:] == [{"role": "response_1", "content": "A"}, {"role": "response_2", "content": "B"}]
    assert ba[3:] == [{"role": "response_1", "content": "B"}, {"role": "response_2", "content": "A"}]
    with pytest.raises(ValueError):
        build_messages(H[:2], "A", "B", "ab")
    with pytest.raises(ValueError):
        build_messages(H, "A", "B", "xy")


@pytest.mark.parametrize("content,expected", [
    ('<think>A is better</think>{"score_1": 4, "score_2": 2, "ranking": 2}', Verdict(4, 2, 2)),
    # JSON-looking text inside the reasoning is not the answer
    ('<think>maybe {"score_1": 1, "score_2": 5, "ranking": 6}?</think>\n{"score_1": 5, "score_2": 3, "ranking": 1}',
     Verdict(5, 3, 1)),
    # several objects after the reasoning: the last valid one wins
    ('<think>x</think>{"score_1": 2, "score_2": 2, "ranking": 3} on second thought {"score_1": 3, "score_2": 4, "ranking": 5}',
     Verdict(3, 4, 5)),
    # a fenced block with trailing prose
    ('<think>x</think>\n```json\n{"score_1": 4, "score_2": 4, "ranking": 4}\n```\nThat is my verdict.', Verdict(4, 4, 4)),
    # numbers as strings, and integral floats
    ('<think>x</think>{"score_1": "5", "score_2": "1", "ranking": "1"}', Verdict(5, 1, 1)),
    ('<think>x</think>{"score_1": 5.0, "score_2": 1, "ranking": 2.0}', Verdict(5, 1, 2)),
    # nested braces in prose before the object
    ('<think>x</think>Using {a: b} notation: {"score_1": 3, "score_2": 2, "ranking": 3}', Verdict(3, 2, 3)),
    # several </think>: the text after the last
    ('<think>a</think> {"score_1": 1, "score_2": 1, "ranking": 6} </think>{"score_1": 2, "score_2": 1, "ranking": 2}',
     Verdict(2, 1, 2)),
    # the template opened <think> in the prompt: the completion holds only the closing tag
    ('A is worse.</think>\n{"score_1": 3, "score_2": 5, "ranking": 5}', Verdict(3, 5, 5)),
])
def test_parse_verdicts(content, expected):
    assert parse_completion(content, "stop") == expected


@pytest.mark.parametrize("content,finish,reason", [
    ("", "stop", "empty"),
    (None, "stop", "empty"),
    ('<think>long reasoning that was cut', "length", "truncated"),
    ('<think>x</think>{"score_1": 4, "score_2": 2, "ranking": 2}', "length", "truncated"),
    ("<think>never closed but stopped", "stop", "no_answer_after_reasoning"),
    # no </think> at all: a verdict-shaped draft inside unfinished reasoning is no verdict
    ('{"score_1": 3, "score_2": 5, "ranking": 5}', "stop", "no_answer_after_reasoning"),
    ('I lean to B: {"score_1": 3, "score_2": 5, "ranking": 5} but let me check', "stop", "no_answer_after_reasoning"),
    ("<think>x</think>Response 1 is better.", "stop", "no_json"),
    ('<think>x</think>{"score_1": 4, "score_2": 2}', "stop", "no_json"),
    ('<think>x</think>{"score_1": "four", "score_2": 2, "ranking": 2}', "stop", "not_a_number"),
    ('<think>x</think>{"score_1": 4.5, "score_2": 2, "ranking": 2}', "stop", "not_a_number"),
    ('<think>x</think>{"score_1": true, "score_2": 2, "ranking": 2}', "stop", "not_a_number"),
    ('<think>x</think>{"score_1": 6, "score_2": 2, "ranking": 2}', "stop", "out_of_range"),
    ('<think>x</think>{"score_1": 4, "score_2": 2, "ranking": 0}', "stop", "out_of_range"),
    ('<think>x</think>{"score_1": 4, "score_2": 2, "ranking": 7}', "stop", "out_of_range"),
])
def test_parse_failures(content, finish, reason):
    result = parse_completion(content, finish)
    assert isinstance(result, ParseFailure) and result.reason == reason


def test_vllm_separate_reasoning_field():
    # with a reasoning parser on, content holds only the answer and the trace is in its own field
    assert parse_completion('{"score_1": 2, "score_2": 4, "ranking": 5}', "stop",
                            reasoning='I think {"score_1": 5, "score_2": 1, "ranking": 1}') == Verdict(2, 4, 5)
    # the reasoning field holds everything and the content nothing: the reasoning never reached an answer
    assert parse_completion("", "stop", reasoning="thought a lot but said nothing").reason == "no_answer_after_reasoning"
    assert parse_completion("Response 1.", "stop", reasoning="thought").reason == "no_json"
    assert answer_text("<think>unfinished", None) is None


def test_map_to_a_side():
    v = Verdict(score_1=5, score_2=2, ranking=2)
    ab = to_a_side(v, "ab")
    ba = to_a_side(v, "ba")
    assert (ab.score_a, ab.score_b, ab.ranking_a, ab.margin) == (5, 2, 2, 1.5)
    # shown B first: response_1 was B, so A got score_2 and the ranking mirrors
    assert (ba.score_a, ba.score_b, ba.ranking_a, ba.margin) == (2, 5, 5, -1.5)
    assert to_a_side(Verdict(3, 3, 1), "ba").margin == -2.5 and to_a_side(Verdict(3, 3, 6), "ab").margin == -2.5


def test_a_margin_and_its_ranking_are_one_fact_both_ways():
    assert [margin_of_ranking(r) for r in range(1, 7)] == [2.5, 1.5, 0.5, -0.5, -1.5, -2.5]
    assert MAX_MARGIN == 2.5
    for ranking in range(1, 7):
        margin = margin_of_ranking(ranking)
        assert ranking_of_margin(margin) == ranking and isinstance(ranking_of_margin(margin), int)
        assert margin_of_ranking(mirrored_ranking(ranking)) == -margin
        for order in ("ab", "ba"):  # a stored verdict read back is the verdict it was
            side = to_a_side(Verdict(4, 2, ranking), order)
            assert SideVerdict.of_margin(side.score_a, side.score_b, side.margin) == side


def test_scores_agree_with_ranking():
    assert scores_agree(to_a_side(Verdict(5, 2, 2), "ab"))
    assert not scores_agree(to_a_side(Verdict(2, 5, 2), "ab"))
    assert scores_agree(to_a_side(Verdict(3, 3, 5), "ab"))


def test_the_trace_is_stored_apart_whether_or_not_the_server_parses_reasoning():
    from tasks.judge.genrm import split_trace

    verdict = '{"score_1": 4, "score_2": 2, "ranking": 2}'
    assert split_trace(f"weighed both</think>{verdict}", None) == (verdict, "weighed both")  # parser off
    assert split_trace(verdict, "weighed both") == (verdict, "weighed both")  # parser on
    assert split_trace("a</think>b</think>" + verdict, None) == (verdict, "a</think>b")  # the last close ends it
    assert split_trace("never closed " + verdict, None) == ("never closed " + verdict, None)
    assert split_trace(None, None) == (None, None)

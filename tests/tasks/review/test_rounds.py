"""A run in rounds sends no climbing round of fewer judgments than its least (`tasks.review.rounds.least_round`):
each round waits for its slowest request with the server's batch emptying, so a round of a few judgments pays a
whole request's time on every GPU of the server for them. A retry goes whatever its size."""

from __future__ import annotations

from tasks.judge.run import JudgmentState, Planner
from tasks.judge.strategies import parse_strategy
from tasks.review.rounds import asked_of, least_round


def test_a_rounds_least_is_the_setting_or_5_percent_of_a_small_runs_pairs():
    assert least_round(32, 10_000) == 32
    assert least_round(32, 1_000) == 32  # 5% would be 50
    assert least_round(32, 200) == 10  # a small run still climbs
    assert least_round(32, 10) == 1 and least_round(32, 0) == 1
    assert least_round(1, 10_000) == 1  # CURATE_JUDGE_MIN_ROUND=1: every round goes


def test_a_rounds_judgments_count_what_is_missing_and_say_whether_one_is_a_retry():
    wanted = {"p": (("ba", 0),), "q": (("ab", 1), ("ba", 1)), "r": (("ba", 0),), "s": (("ab", 1), ("ba", 1))}
    states = {("q", "ab", 1): JudgmentState("ok", 1), ("r", "ba", 0): JudgmentState("failed", 1),
              ("s", "ab", 1): JudgmentState("failed", 3)}
    planner = Planner(parse_strategy("certify:2"), states, max_attempts=3)
    assert asked_of(["p", "q"], wanted, planner) == (2, False)  # p's ba 0, q's ba 1 (its ab 1 is held)
    assert asked_of(["p", "q", "r"], wanted, planner) == (3, True)  # r's ba 0 was asked before, with no verdict
    # s's ab 1 is at the attempt limit: not sent, so neither counted nor a retry; its ba 1 is new
    assert asked_of(["p", "s"], wanted, planner) == (2, False)


def test_an_estimate_expects_no_rung_a_run_would_not_send():
    from tasks.judge.strategies import parse_strategy
    from tasks.review.rounds import sent_at_least

    ladder = parse_strategy("ladder").ladder()  # the reward model, ab 0, ba 0, ab 1 + ba 1
    assert [len(r) for r in ladder[1:]] == [1, 1, 2]
    # 1,000 pending pairs: 300, 40 and 2 x 10 judgments expected; a least of 32 ends the rounds before the third
    assert sent_at_least([0.3, 0.04, 0.01], ladder, 1000, 32) == [0.3, 0.04, 0.0]
    assert sent_at_least([0.3, 0.03, 0.02], ladder, 1000, 32) == [0.3, 0.0, 0.0]  # 30 < 32: none from there on
    assert sent_at_least([0.3, 0.03, 0.01], ladder, 1000, 1) == [0.3, 0.03, 0.01]

"""The estimate's arithmetic (tasks/judge/estimate.py): each rung's requests, tokens and GPU-hours, low and high,
from the pending pairs' token counts and each judge's rate, measured or declared; and the budget's steps."""

from __future__ import annotations

import pytest

from tasks.judge.estimate import (
    REQUEST_OVERHEAD_TOKENS,
    Budget,
    PairTokens,
    Rung,
    declared_rate,
    estimate,
    first_request_seconds,
    measured_rate,
    request_tokens_in,
    rung_estimate,
    strategy_rungs,
)
from tasks.judge.strategies import parse_strategy

PAIRS = [PairTokens(100, 40, 60), PairTokens(200, 10, 30)]


def test_a_request_counts_what_its_judge_reads():
    assert request_tokens_in("reward_model", PAIRS[0]) == 2 * 100 + 40 + 60  # the history before each answer
    assert request_tokens_in("genrm", PAIRS[0]) == REQUEST_OVERHEAD_TOKENS + 200


def test_a_declared_rate_prices_tokens_on_the_servers_gpus():
    rate = declared_rate("genrm", 2500.0, 8, 1000)
    assert rate.per_request is None and rate.per_token == pytest.approx(8 / 2500)
    assert rate.tokens_out == (0.0, 1000.0) and rate.basis.startswith("declared")
    assert declared_rate("reward_model", 2500.0, 1, 1000).tokens_out == (0.0, 0.0)  # it generates nothing
    got = rung_estimate(Rung("genrm", "first", 2, True), PAIRS, rate)
    tokens_in = 2 * (REQUEST_OVERHEAD_TOKENS + 200 + REQUEST_OVERHEAD_TOKENS + 240)
    assert got["requests"] == {"low": 4, "high": 4}
    assert got["tokens"] == {"low": tokens_in, "high": tokens_in + 4 * 1000}
    assert got["gpu_hours"]["low"] == pytest.approx(tokens_in * 8 / 2500 / 3600, rel=1e-6)
    assert got["gpu_hours"]["high"] == pytest.approx((tokens_in + 4000) * 8 / 2500 / 3600, rel=1e-6)


def test_a_measured_rate_is_earlier_runs_gpu_seconds_per_request_and_per_token():
    runs = [{"tokens_in": 600, "tokens_out": 400, "cost": {"by_judge": {"genrm": {"gpu_seconds": 10.0,
                                                                                 "requests": 4}}}},
            {"tokens_in": 0, "tokens_out": 0, "cost": {"by_judge": {"reward_model": {"gpu_seconds": 1.0,
                                                                                    "requests": 9}}}},
            {"tokens_in": 300, "tokens_out": 100, "cost": {"by_judge": {"genrm": {"gpu_seconds": 4.0,
                                                                                 "requests": 3}}}},
            {"cost": {}}]  # a run recorded before measuring
    rate = measured_rate("genrm", runs)
    assert rate.per_request == pytest.approx(2.0) and rate.per_token == pytest.approx(14 / 1400)
    assert rate.tokens_out == (pytest.approx(500 / 7),) * 2 and "2 earlier runs" in rate.basis
    assert measured_rate("other", runs) is None
    got = rung_estimate(Rung("genrm", "first", 1, True), PAIRS, rate)
    # the low end the lower of the per-request and per-token figures, the high end the higher
    tokens = got["tokens"]["low"]
    assert got["gpu_hours"]["low"] == pytest.approx(min(2 * 2.0, tokens * 0.01) / 3600, abs=1e-9)
    assert got["gpu_hours"]["high"] == pytest.approx(max(2 * 2.0, tokens * 0.01) / 3600, abs=1e-9)


def test_a_rung_of_the_pairs_that_climb_ranges_from_none_to_all():
    rate = measured_rate("genrm", [{"tokens_in": 10, "tokens_out": 0, "cost": {"by_judge": {"genrm": {
        "gpu_seconds": 1.0, "requests": 1}}}}])
    got = rung_estimate(Rung("genrm", "climb", 1, False), PAIRS, rate)
    assert got["requests"] == {"low": 0, "high": 2} and got["tokens"]["low"] == 0
    assert got["gpu_hours"]["low"] == 0 and got["gpu_hours"]["high"] > 0


def test_a_ladder_is_the_reward_model_then_the_genrms_rungs():
    rungs = strategy_rungs(parse_strategy("ladder:2", None))
    assert [r.kind for r in rungs][0] == "reward_model" and rungs[0].every_pair
    assert all(r.kind == "genrm" and not r.every_pair for r in rungs[1:]) and len(rungs) >= 3
    certify = strategy_rungs(parse_strategy("certify:2", None))
    assert certify[0].every_pair and not any(r.every_pair for r in certify[1:])
    swap = strategy_rungs(parse_strategy("swap", None))
    assert [(r.requests_per_pair, r.every_pair) for r in swap] == [(2, True)]


def test_the_estimate_sums_its_rungs_each_on_its_judges_pending_pairs():
    rates = {"reward_model": declared_rate("reward_model", 1000.0, 1, 0), "genrm": declared_rate("genrm", 1000.0, 8, 10)}
    rungs = strategy_rungs(parse_strategy("ladder:1", None))
    got = estimate(rungs, {"reward_model": PAIRS, "genrm": PAIRS[:1]}, rates)
    assert got["pairs"] == {"reward_model": 2, "genrm": 1}
    assert got["rungs"][0]["requests"] == {"low": 2, "high": 2}
    assert got["requests"]["low"] == 2 and got["requests"]["high"] == 2 + sum(r.requests_per_pair for r in rungs[1:])
    assert got["gpu_hours"]["low"] == pytest.approx(got["rungs"][0]["gpu_hours"]["low"])
    assert got["gpu_hours"]["high"] == pytest.approx(sum(r["gpu_hours"]["high"] for r in got["rungs"]))


def test_a_budget_takes_a_step_only_while_it_fits_and_never_again_after():
    budget = Budget(1.0, per_request=100.0)  # 3,600 GPU-seconds
    assert budget.allows(0.0, 0, 36)  # 36 x 100 = 3,600: just fits
    assert not budget.allows(0.0, 0, 37)
    assert not budget.allows(0.0, 0, 1) and budget.stopped  # stopped stays stopped
    measured = Budget(1.0, per_request=100.0, spent_before=600.0)
    assert measured.allows(1000.0, 100, 199)  # measured 10 a request: 600 + 1000 + 1990 <= 3600
    assert not measured.allows(1000.0, 100, 201)
    # a step checked mid-dispatch (`fits`): the requests out count whole, at the judge's rate until as many came back
    early = Budget(1.0, per_request=100.0)
    assert early.fits(500.0, 10, 2, in_flight=20)  # 10 back, 20 out: 500 + 100 x 22 = 2,700
    assert not early.fits(500.0, 10, 12, in_flight=20)  # 500 + 100 x 32 = 3,700
    cheap = Budget(1.0, per_request=0.001)  # a declared rate far too low: what was spent speaks instead
    assert not cheap.fits(3000.0, 10, 2, in_flight=20)  # at least 3,000 / 30 = 100 a request: 3,000 + 2,200
    later = Budget(1.0, per_request=100.0)
    assert later.fits(500.0, 40, 100, in_flight=20)  # 40 back: 12.5 a request, 500 + 12.5 x 120 = 2,000
    assert not later.fits(500.0, 40, 250, in_flight=20)  # 500 + 12.5 x 270 = 3,875
    # as a pair is about to go: one that does not fit waits while requests are out, and stops the run with none out
    streaming = Budget(1.0, per_request=1000.0)  # a declared rate far above what requests turn out to cost
    assert streaming.admits(0.0, 0, 2, in_flight=0) is True  # 2,000 fits
    assert streaming.admits(10.0, 0, 2, in_flight=2) is None  # 10 + 1,000 x 4: not yet, nothing decided
    assert not streaming.stopped
    assert streaming.admits(20.0, 2, 2, in_flight=0) is True  # back: 10 a request, 20 + 20
    assert streaming.admits(3590.0, 359, 2, in_flight=0) is False and streaming.stopped  # 3,590 + 20 > 3,600
    assert streaming.admits(0.0, 0, 1, in_flight=0) is False  # stopped stays stopped
    # the drain: were the run to stop after the step, what is out keeps the server busy as long as its slowest
    draining = Budget(1.0, per_request=1.0)
    assert draining.admits(3000.0, 300, 2, in_flight=50) is True  # 3,000 + 10 x 52 = 3,520
    assert draining.admits(3000.0, 300, 2, in_flight=50, drain=700.0) is None  # 3,000 + 700 > 3,600: wait
    assert draining.next_step == 700.0 and not draining.stopped
    said = measured.said(1000.0)
    assert said == {"gpu_hours": 1.0, "spent_gpu_hours": pytest.approx(1600 / 3600, abs=1e-6),
                    "left_gpu_hours": pytest.approx(2000 / 3600, abs=1e-6), "stopped": True,
                    "next_step_gpu_hours": pytest.approx(2010 / 3600, abs=1e-6)}  # the step refused: 201 x 10


def test_the_first_request_before_any_was_measured():
    declared = declared_rate("genrm", 1000.0, 2, 100)
    mean_in = (REQUEST_OVERHEAD_TOKENS * 2 + 200 + 240) / 2
    assert first_request_seconds(declared, PAIRS) == pytest.approx(2 / 1000 * (mean_in + 100))



def _timed(gpu_seconds: float, requests: int, steady: float, dispatches: int) -> dict:
    return {"tokens_in": 100 * requests, "tokens_out": 0, "cost": {"by_judge": {"genrm": {
        "gpu_seconds": gpu_seconds, "requests": requests, "steady_gpu_seconds_per_request": steady,
        "dispatches": dispatches}}}}


def test_runs_that_timed_their_requests_give_a_steady_cost_and_a_dispatchs_ramp_up_and_drain():
    # 200 requests: 0.05 GPU-seconds each once running, 6 more for the one dispatch's ramp-up and drain
    rate = measured_rate("genrm", [_timed(16.0, 200, 0.05, 1), _timed(13.0, 100, 0.05, 2)])
    assert rate.steady == pytest.approx(0.05)
    assert rate.per_dispatch == pytest.approx((6.0 + 8.0) / 3)
    assert rate.per_request == pytest.approx(29.0 / 300)  # the whole runs' mean stays beside it
    assert "a dispatch's ramp-up and drain" in rate.basis
    # a longer run spreads one ramp-up and drain over more requests: it is expected to cost less a request
    pairs = [PairTokens(10, 10, 10)] * 800
    got = rung_estimate(Rung("genrm", "first", 2, True), pairs, rate)
    expected = (0.05 * 1600 + rate.per_dispatch) / 3600
    assert got["gpu_hours"]["expected"] == pytest.approx(expected, abs=1e-9)
    assert got["gpu_hours"]["low"] <= got["gpu_hours"]["expected"] <= got["gpu_hours"]["high"]


def test_a_run_without_timed_requests_gives_no_steady_figure_and_no_expected_cost():
    rate = measured_rate("genrm", [_timed(16.0, 200, 0.05, 1), {"tokens_in": 5, "tokens_out": 0, "cost": {
        "by_judge": {"genrm": {"gpu_seconds": 1.0, "requests": 10}}}}])  # recorded before requests were timed
    assert rate.steady is None and rate.per_dispatch == 0.0
    got = estimate([Rung("genrm", "first", 1, True)], {"genrm": PAIRS}, {"genrm": rate})
    assert got["gpu_hours"]["expected"] is None and got["rungs"][0]["gpu_hours"]["expected"] is None


def test_the_expected_cost_is_the_runs_only_when_no_rung_waits_on_which_pairs_climb():
    rate = measured_rate("genrm", [_timed(16.0, 200, 0.05, 1)])
    every = estimate([Rung("genrm", "first", 2, True)], {"genrm": PAIRS}, {"genrm": rate})
    assert every["gpu_hours"]["expected"] == pytest.approx(every["rungs"][0]["gpu_hours"]["expected"])
    climbing = estimate(strategy_rungs(parse_strategy("certify:2", None)), {"genrm": PAIRS}, {"genrm": rate})
    assert climbing["gpu_hours"]["expected"] is None
    assert climbing["rungs"][0]["gpu_hours"]["expected"] is not None


def test_a_rung_with_an_expected_share_of_climbing_pairs_has_an_expected_cost():
    rate = measured_rate("genrm", [_timed(16.0, 200, 0.05, 1)])
    pairs = [PairTokens(10, 10, 10)] * 1000
    rungs = strategy_rungs(parse_strategy("certify:2", None), shares=[0.3, 0.0])
    assert [r.share for r in rungs] == [None, 0.3, 0.0]
    got = estimate(rungs, {"genrm": pairs}, {"genrm": rate})
    second = got["rungs"][1]
    assert second["requests"] == {"low": 0, "high": 1000, "expected": 300}
    assert second["gpu_hours"]["expected"] == pytest.approx((0.05 * 300 + rate.per_dispatch) / 3600, abs=1e-9)
    assert got["rungs"][2]["gpu_hours"]["expected"] == 0.0  # no pair expected: no dispatch either
    assert got["requests"]["expected"] == 1000 + 300
    assert got["gpu_hours"]["low"] <= got["gpu_hours"]["expected"] <= got["gpu_hours"]["high"]


def test_a_rung_with_no_pair_pending_expects_nothing_whatever_its_rate():
    """A ladder whose reward model already scored every pending pair (a run stopped at a budget that held that rung
    alone): its rung asks nothing and costs nothing, and the run's expected figure stands on the GenRM's."""
    genrm = measured_rate("genrm", [_timed(16.0, 200, 0.05, 1)])
    rm = measured_rate("reward_model", [{"tokens_in": 5, "tokens_out": 0, "cost": {  # never timed: no steady figure
        "by_judge": {"reward_model": {"gpu_seconds": 1.0, "requests": 10}}}}])
    rungs = strategy_rungs(parse_strategy("ladder", None), shares=[0.3, 0.0, 0.0])
    got = estimate(rungs, {"reward_model": [], "genrm": PAIRS}, {"reward_model": rm, "genrm": genrm})
    assert got["rungs"][0]["requests"] == {"low": 0, "high": 0} and got["rungs"][0]["gpu_hours"]["expected"] == 0.0
    assert got["gpu_hours"]["expected"] == pytest.approx(sum(r["gpu_hours"]["expected"] for r in got["rungs"][1:]))
    assert got["gpu_hours"]["expected"] > 0


def test_a_timed_run_too_short_for_a_steady_figure_adds_to_the_dispatches_not_the_steady_cost():
    """A run stopped at its budget after a few requests timed them, but too few for a slope: its spend beyond the
    steady cost is its dispatch's, and the other runs' steady figure stands (it no longer takes the expected
    figure away, as a run recorded before requests were timed does)."""
    long = _timed(16.0, 200, 0.05, 1)  # 10 steady, 6 a dispatch
    rate = measured_rate("genrm", [long, _timed(3.0, 10, None, 1)])
    assert rate.steady == pytest.approx(0.05)
    assert rate.per_dispatch == pytest.approx((6.0 + (3.0 - 0.05 * 10)) / 2)
    assert rate.per_request == pytest.approx(19.0 / 210)
    alone = measured_rate("genrm", [_timed(3.0, 10, None, 1)])  # nothing to take a steady figure from
    assert alone.steady is None and alone.per_dispatch == 0.0

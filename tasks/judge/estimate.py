"""Before a run: the requests, tokens and GPU-hours each rung of it is expected to cost, with a range (`curate judge
--estimate`). Pure arithmetic: the caller gives the pending pairs' token counts (the warehouse's, per part of each
pair: `candidate_pairs.prompt_tokens`, `response_a_tokens`, `response_b_tokens`) and each judge's rate, measured by
earlier runs (`measured_rate`: GPU-seconds per request and per token) or, where none ran yet, declared
(`declared_rate`: the GPUs a server holds over its assumed throughput, CURATE_COST_SERVER_TOKENS_PER_SECOND).

A rung asked of every pending pair costs what its requests cost; a rung asked only of the pairs that climb to it
(a later round of `certify`/`ladder`, a follow-up of `adaptive`) ranges from no pair to every pending pair. The
low end of a judge's cost is the lower of its per-request and per-token figures, the high end the higher; a
GenRM request's generated tokens are its earlier runs' mean, or, declared, from none to CURATE_JUDGE_MAX_TOKENS.
The budget (`--budget-gpu-hours`) reads the same rates for the first step of a run (`Budget`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from common.numbers import significant

REQUEST_OVERHEAD_TOKENS = 64  # a GenRM request's own template tokens (as the ingest's counts add them)


class PairTokens(NamedTuple):
    """One pending pair's token counts by part (each with its messages' template tokens)."""

    prompt: int
    response_a: int
    response_b: int


@dataclass(frozen=True, slots=True)
class Rate:
    """What one request of a judge costs: GPU-seconds per request and per token (prompt and generated), and the
    tokens it generates per request (low, high); `basis` says where the figures come from. Measured runs that
    timed their requests add `steady` (the GPU-seconds one more request costs, past a run's ramp-up and before its
    drain) and `per_dispatch` (what a dispatch's ramp-up and drain cost beyond that)."""

    kind: str
    per_request: float | None
    per_token: float | None
    tokens_out: tuple[float, float]
    basis: str
    steady: float | None = None
    per_dispatch: float = 0.0


@dataclass(frozen=True, slots=True)
class Rung:
    """One rung of a run: its judge, how it is said, its requests per pair, and whether every pending pair is
    asked it (else only those that climb to it: from none to all, `share` of them expected; None: no figure)."""

    kind: str
    how: str
    requests_per_pair: int
    every_pair: bool
    share: float | None = None


def request_tokens_in(kind: str, pair: PairTokens) -> int:
    """The prompt tokens of one request of `kind` for `pair`: a reward model's request scores each answer after
    the history (the history twice); a GenRM's shows both answers once, with its template's tokens."""
    if kind == "reward_model":
        return 2 * pair.prompt + pair.response_a + pair.response_b
    return REQUEST_OVERHEAD_TOKENS + pair.prompt + pair.response_a + pair.response_b


def declared_rate(kind: str, server_tokens_per_second: float, gpus: int, max_tokens: int) -> Rate:
    """A judge no run measured yet: its server's GPUs over the assumed throughput, per token; a GenRM request
    generates from no token to `max_tokens`, a reward model's none."""
    out = (0.0, 0.0) if kind == "reward_model" else (0.0, float(max_tokens))
    gpu_said = f"{gpus} GPU{'s' if gpus != 1 else ''}"
    return Rate(kind, None, gpus / server_tokens_per_second, out,
                f"declared: {gpu_said} / {server_tokens_per_second:g} tokens/s assumed (no earlier run measured it)")


def measured_rate(kind: str, runs: Iterable[dict[str, Any]]) -> Rate | None:
    """The rate of `kind` from earlier runs' summaries (their `cost.by_judge.<kind>`: GPU-seconds and requests,
    and the run's tokens); None when none measured a request of it. Where every such run timed its requests
    (`steady_gpu_seconds_per_request`, `dispatches`), the rate also has their steady cost a request, weighted by
    requests, and the rest of what they spent a dispatch: a run's ramp-up and drain, which a longer run spreads
    over more requests. A run that timed its requests but made too few for a steady figure (a run stopped at its
    budget after a few, say) adds what it spent beyond that steady cost to its dispatches'."""
    seconds = requests = tokens_in = tokens_out = 0.0
    steady_seconds = steady_requests = overhead = dispatches = 0.0
    short: list[tuple[float, float, float]] = []  # (GPU-seconds, requests, dispatches) of timed runs too short
    timed = True
    counted = 0
    for summary in runs:
        judge = ((summary.get("cost") or {}).get("by_judge") or {}).get(kind) or {}
        if not judge.get("requests") or judge.get("gpu_seconds") is None:
            continue
        counted += 1
        seconds += float(judge["gpu_seconds"])
        requests += float(judge["requests"])
        tokens_in += float(summary.get("tokens_in") or 0)
        tokens_out += float(summary.get("tokens_out") or 0)
        steady = judge.get("steady_gpu_seconds_per_request")
        if steady is None and judge.get("dispatches") and "steady_gpu_seconds_per_request" in judge:
            short.append((float(judge["gpu_seconds"]), float(judge["requests"]), float(judge["dispatches"])))
            continue
        if steady is None or not judge.get("dispatches"):
            timed = False
            continue
        steady_seconds += float(steady) * float(judge["requests"])
        steady_requests += float(judge["requests"])
        overhead += max(float(judge["gpu_seconds"]) - float(steady) * float(judge["requests"]), 0.0)
        dispatches += float(judge["dispatches"])
    if not requests:
        return None
    timed = timed and steady_requests > 0
    per = steady_seconds / steady_requests if timed else None
    if per is not None:
        for spent, asked, times in short:
            overhead += max(spent - per * asked, 0.0)
            dispatches += times
    tokens = tokens_in + tokens_out
    out = tokens_out / requests
    basis = (f"measured: {seconds:.3f} GPU-seconds over {int(requests):,} requests of {counted} earlier "
             f"run{'s' if counted != 1 else ''}")
    if per is not None:
        basis += (f"; {per:.4f} GPU-seconds a request once running, {overhead / dispatches:.3f} a dispatch's "
                  "ramp-up and drain")
    return Rate(kind, seconds / requests, seconds / tokens if tokens else None, (out, out), basis,
                steady=per, per_dispatch=overhead / dispatches if per is not None else 0.0)


def rung_estimate(rung: Rung, pairs: Sequence[PairTokens], rate: Rate) -> dict[str, Any]:
    """One rung's requests, tokens and GPU-hours, each low and high; with a steady rate (`Rate.steady`), also the
    GPU-hours expected: of a rung asked of every pair, its requests at the steady cost plus one dispatch's ramp-up
    and drain; of a rung only some pairs climb to, the same of its expected `share` of the pairs, in one dispatch
    (a round)."""
    full = len(pairs) * rung.requests_per_pair
    requests = (full if rung.every_pair else 0, full)
    tokens_in_all = rung.requests_per_pair * sum(request_tokens_in(rung.kind, p) for p in pairs)
    share = (1.0 if rung.every_pair else 0.0, 1.0)
    tokens = tuple(round(share[i] * tokens_in_all + requests[i] * rate.tokens_out[i]) for i in (0, 1))
    costs = [(rate.per_request * requests[0], rate.per_request * requests[1])] if rate.per_request is not None else []
    if rate.per_token is not None:
        costs.append((rate.per_token * tokens[0], rate.per_token * tokens[1]))
    expected = None if pairs else 0.0  # a rung with no pair pending (a ladder's scored rung) costs nothing
    if rate.steady is not None and pairs:
        timed = [rate.steady * n + (rate.per_dispatch if n else 0.0) for n in requests]
        costs.append((timed[0], timed[1]))
        if rung.every_pair:
            expected = round(timed[1] / 3600.0, 9)
        elif rung.share is not None:
            climbing = rung.share * full
            expected = round((rate.steady * climbing + (rate.per_dispatch if climbing else 0.0)) / 3600.0, 9)
    low, high = min(c[0] for c in costs), max(c[1] for c in costs)
    said = {} if rung.every_pair or rung.share is None else {"expected": round(rung.share * full)}
    return {"judge": rung.kind, "how": rung.how, "requests": {"low": requests[0], "high": requests[1], **said},
            "tokens": {"low": tokens[0], "high": tokens[1]},
            "gpu_hours": {"low": round(low / 3600.0, 9), "expected": expected, "high": round(high / 3600.0, 9)},
            "basis": rate.basis}


def estimate(rungs: Sequence[Rung], pairs: dict[str, Sequence[PairTokens]], rates: dict[str, Rate]) -> dict[str, Any]:
    """The run's estimate: each rung's (`rung_estimate`, on the pairs pending for its judge) and their sums; the
    expected GPU-hours only where every rung has one (a rung only some pairs climb to ranges instead)."""
    each = [rung_estimate(r, pairs[r.kind], rates[r.kind]) for r in rungs]

    def total(key: str, end: str) -> float:
        return sum(e[key][end] for e in each)

    expected = [e["gpu_hours"]["expected"] for e in each]
    asked = [e["requests"]["high"] if r.every_pair else e["requests"].get("expected") for r, e in zip(rungs, each)]
    requests = {"low": int(total("requests", "low")), "high": int(total("requests", "high"))}
    if each and None not in asked:
        requests["expected"] = int(sum(asked))
    return {"pairs": {kind: len(p) for kind, p in pairs.items()}, "rungs": each, "requests": requests,
            "tokens": {"low": int(total("tokens", "low")), "high": int(total("tokens", "high"))},
            "gpu_hours": {"low": round(total("gpu_hours", "low"), 9),
                          "expected": round(sum(expected), 9) if each and None not in expected else None,
                          "high": round(total("gpu_hours", "high"), 9)}}


def strategy_rungs(strategy: Any, genrm: str = "genrm", shares: Sequence[float] | None = None) -> list[Rung]:
    """The rungs of `strategy`: a ladder's reward model first, then each rung it asks of the GenRM (the first of a
    run in rounds of every pair, except a ladder's, the later ones of the pairs that climb, each with its expected
    share of the pairs where `shares` gives one per rung past the first: `tasks.review.rounds.climb_shares`); a
    strategy judged pair by pair: its first judgments of every pair, then its follow-ups of those that need them."""
    from tasks.judge.kinds import REWARD_MODEL

    ladder = strategy.ladder()
    if ladder is None:
        initial, every = strategy.initial(), strategy.all_slots()
        rungs = [Rung(genrm, "first judgments of every pending pair", len(initial), True)]
        extra = len(set(every) - set(initial))
        if extra:
            rungs.append(Rung(genrm, "follow-ups of the pairs that need them", extra, False))
        return rungs
    rungs: list[Rung] = []
    climbs = False
    for k, slots in enumerate(ladder):
        if list(slots) == list(REWARD_MODEL.slots()):
            rungs.append(Rung(REWARD_MODEL.name, "the reward model scores every pending pair", 1, True))
            climbs = True
            continue
        share = shares[k - 1] if climbs and shares is not None and k - 1 < len(shares) else None
        rungs.append(Rung(genrm, f"{len(slots)} judgment{'s' if len(slots) != 1 else ''} of "
                          + ("the pairs that climb to it" if climbs else "every pending pair"), len(slots),
                          not climbs, share))
        climbs = True
    return rungs


class Budget:
    """A run's GPU-hour budget: a step is taken only while what was spent plus what the step is expected to cost
    stays within it (`allows`). `per_request`: a request's expected GPU-seconds before the run measured any (the
    judge's rate, `measured_rate` or `declared_rate`); once requests were measured, their mean."""

    def __init__(self, gpu_hours: float, per_request: float, spent_before: float = 0.0):
        self.limit = gpu_hours * 3600.0
        self.per_request = per_request
        self.spent_before = spent_before  # GPU-seconds an earlier rung of the same run spent
        self.stopped = False
        self.next_step = 0.0  # GPU-seconds the step last checked was expected to take (the one refused, once stopped)

    def fits(self, spent: float, requests_done: int, requests_next: int, in_flight: int = 0,
             drain: float = 0.0) -> bool:
        """Whether a step of `requests_next` requests fits, `spent` GPU-seconds so far in this rung over its
        `requests_done` requests that came back, `in_flight` more still out (each counted whole: what they spent
        so far is in `spent` too, so the check errs toward stopping early). Its rate a request is the measured one
        once as many came back as are out. Before, the busy seconds grow with few requests back to divide them by:
        the judge's rate (`per_request`), or what was spent over every request sent where that is more (a lower
        bound of the true rate: a declared throughput far above the server's would otherwise let through a whole
        batch). `drain`: the GPU-seconds the run's longest request so far would keep the server busy; were the run
        to stop after this step, what is out runs at least that long with the server's batch emptying, which its
        requests' share of a full batch does not count, so the step costs the larger of the two."""
        if requests_done and requests_done >= in_flight:
            rate = spent / requests_done
        else:
            rate = max(self.per_request, spent / (requests_done + in_flight) if requests_done + in_flight else 0.0)
        asked = in_flight + requests_next
        self.next_step = max(rate * asked, drain if asked else 0.0)
        return self.spent_before + spent + self.next_step <= self.limit

    def allows(self, spent: float, requests_done: int, requests_next: int) -> bool:
        """`fits`, with nothing out (between a sharded run's rounds), and once a step does not fit, none does again
        (the run stops there)."""
        if not self.stopped and not self.fits(spent, requests_done, requests_next):
            self.stopped = True
        return not self.stopped

    def admits(self, spent: float, requests_done: int, requests_next: int, in_flight: int,
               drain: float = 0.0) -> bool | None:
        """As a pair is about to go, mid-dispatch: True, it goes; None, not yet (it does not fit while requests are
        out: asked again as they come back, so that the stop is decided on what they measured, not on the rate
        they were counted at); False, the run stops (it does not fit with none out, as `allows`)."""
        if self.stopped:
            return False
        if self.fits(spent, requests_done, requests_next, in_flight, drain):
            return True
        if in_flight:
            return None
        self.stopped = True
        return False

    def said(self, spent: float) -> dict[str, Any]:
        total = self.spent_before + spent
        return {"gpu_hours": significant(self.limit / 3600.0), "spent_gpu_hours": significant(total / 3600.0),
                "left_gpu_hours": significant(max(self.limit - total, 0.0) / 3600.0), "stopped": self.stopped,
                **({"next_step_gpu_hours": significant(self.next_step / 3600.0)} if self.stopped else {})}


def first_request_seconds(rate: Rate, pairs: Sequence[PairTokens]) -> float:
    """A request's expected GPU-seconds before a run measured any: the rate's per request, or per token times a
    mean request's tokens (the generated ones at their high end)."""
    if rate.per_request is not None:
        return rate.per_request
    if not pairs:
        return 0.0
    mean_in = sum(request_tokens_in(rate.kind, p) for p in pairs) / len(pairs)
    return (rate.per_token or 0.0) * (mean_in + rate.tokens_out[1])


# -- against the warehouse ------------------------------------------------------------------------------------

def rate_of(wh: Any, kind: str, settings: Any, gpus: int) -> Rate:
    """Judge `kind`'s rate: measured by the warehouse's earlier runs of it, else declared."""
    return measured_rate(kind, wh.judging.run_summaries(kind)) or declared_rate(
        kind, settings.cost_server_tokens_per_second, gpus, settings.judge_max_tokens)


def pair_tokens(wh: Any, pair_ids: list[str]) -> list[PairTokens]:
    return [PairTokens(*t) for t in wh.judging.pair_token_counts(pair_ids)]


def budget_of(wh: Any, run: Any, pending: list[str], spent_before: float = 0.0,
              refused: float | None = None) -> Budget | None:
    """The budget of `run` (CURATE_JUDGE_BUDGET_GPU_HOURS, `--budget-gpu-hours`; None: none) on its `pending`
    pairs, `spent_before` GPU-seconds spent by an earlier rung of the same run (`refused`: the GPU-seconds of the
    step it stopped on; None: it did not stop)."""
    hours = run.settings.judge_budget_gpu_hours
    if hours is None:
        return None
    rate = rate_of(wh, run.config.kind, run.settings, run.settings.gpus_per_server)
    budget = Budget(hours, first_request_seconds(rate, pair_tokens(wh, pending)), spent_before)
    if refused is not None:  # stopped there: the step it refused is the one the run's stop names
        budget.stopped, budget.next_step = True, refused
    return budget

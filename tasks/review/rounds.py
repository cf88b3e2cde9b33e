"""Judging in rounds (`certify[:K]`): after each round of a judge run, which pairs the next round asks more of,
and how many pairs a certification at the run's target accepts so far.

Both are read as a certified version reads the pool: every judged pair under the run's judge configuration (its
ok verdicts in the warehouse, not this run's alone), the reviews, the certification labels
(`tasks.review.certification.certification_labels`). Which pairs escalate is
`round_plan` (`tasks.curate.certification.next_rungs`), decided from the verdicts and the training labels only,
over every pair a version may hold whatever its verdicts say (not contaminated, when the policy leaves
contaminated pairs out): a pair the policy's label-free filters would drop today (one order only, orders
disagreeing) is never sure, and exactly a pair more verdicts can settle; never more judgments than `swap`'s two
per pair of the run. The policy is the one the version will be built by (`--policy`, the target and risk flags
on top, read once with the run: `tasks.curate.policy.in_rounds`): its calibration share and audit threshold say
which labels calibrate, and those never steer a round. Of those, the run asks only its own pairs (its shard, its
limit). What is certified is what `build-version` would certify at the same target
(`tasks.curate.select.certifiable`).

For an estimate (`curate judge --estimate`), `climb_shares` replays the same rule on copies of the pairs judged
before, to say how many of a run's pairs are expected to climb to each rung.

A climbing round of fewer judgments than the run's least (`least_round`: CURATE_JUDGE_MIN_ROUND, or 5% of a small
run's pairs) is not sent: it would wait for its slowest request with the server's batch emptying. A retry is.

Nothing here remembers a round: each decision is made from the warehouse as it stands, so a rerun (of a run
that was killed, say) decides its rounds afresh, and the cache answers every verdict already paid for.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from tasks.curate.certification import (
    CertificationLabels,
    Plan,
    calibration_pairs,
    certify_pool,
    first_orders,
    holds,
    next_rungs,
    slot_verdicts,
)
from tasks.curate.confidence import pool_confidences
from tasks.curate.label_roles import trained_by_rounds
from tasks.curate.ladder import with_reward_model
from tasks.curate.policy import FilterPolicy
from tasks.curate.pool import JudgedPool
from tasks.curate.select import certifiable
from tasks.judge.kinds import NO_ORDER
from tasks.judge.run import Plan as JudgePlan
from tasks.judge.run import Planner, Round, RoundOutcome, as_states, split_pending
from tasks.judge.strategies import Slot, oriented, slots_said
from tasks.review.certification import certification_labels
from tasks.review.pool import ReviewedPool

if TYPE_CHECKING:
    from tasks.curate.confidence import Confidences
    from tasks.judge.context import JudgeRun
    from warehouse.store import Warehouse

NOTHING_MORE = "no pair needs more judgments"
TOO_FEW = "fewer than a round's least"  # how the rounds end when the next would ask too few judgments
MIN_ROUND_SHARE = 0.05  # of a run's pairs: a smaller run's least climbing round (CURATE_JUDGE_MIN_ROUND caps it)


def least_round(setting: int, pairs: int) -> int:
    """The fewest judgments a climbing round of a run of `pairs` pairs may ask: the setting, or 5% of the pairs
    where that is fewer (so that a small run still climbs), at least one."""
    return max(1, min(setting, math.ceil(MIN_ROUND_SHARE * pairs)))


def asked_of(pending: list[str], wanted: dict[str, tuple[Slot, ...]], planner: Planner) -> tuple[int, bool]:
    """(the judgments a round sends `pending`, as the run's `planner` plans them: neither cached nor at the attempt
    limit; whether any of them is a retry: asked before, with no verdict)."""
    plan = JudgePlan()  # counts what the cache answers, unread here
    slots = [slot for pair in pending for slot in planner.slots(pair, plan, wanted[pair])]
    return len(slots), any(state is not None for _, _, state in slots)


def round_plan(pool: JudgedPool, c: Confidences, labels: CertificationLabels, policy: FilterPolicy,
               ladder: list[list[Slot]], ours: np.ndarray) -> Plan:
    """The next round over `pool` for the run whose pairs are `ours` (bool per pair), toward `policy`'s target:
    over the pairs a version may hold (not contaminated, unless the policy includes them), a pair the policy's
    label-free filters would drop as it stands never sure (`certifiable`)."""
    may_hold = ~pool.contaminated if policy.exclude_contaminated else np.ones(len(pool), bool)
    return next_rungs(pool, c, labels, policy.target_agreement, policy.risk, may_hold, ladder,
                      certifiable(pool, c, policy), ours)


# Pairs holding a run's first rung below which a replay of the rounds' rule says nothing for an estimate
MIN_REPLAYED = 100
MAX_REPLAYED = 50_000  # copies a replay makes at most (its model's fit grows with them)


def _stacked(pool: JudgedPool, copies: JudgedPool) -> JudgedPool:
    """`pool`'s pairs, then `copies`' (their verdicts re-indexed after `pool`'s)."""
    columns = {}
    for name in pool.__slots__:
        a, b = getattr(pool, name), getattr(copies, name)
        columns[name] = None if a is None else np.concatenate([a, b + len(pool) if name == "v_pair" else b])
    return JudgedPool(**columns)


def _copied(pool: JudgedPool, order: np.ndarray) -> JudgedPool:
    """Pool pairs `order` (indices, repeats allowed), each with its verdicts."""
    by_pair = np.argsort(pool.v_pair, kind="stable")
    counts = np.bincount(pool.v_pair, minlength=len(pool))
    starts = np.cumsum(counts) - counts
    reps = counts[order]
    offsets = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
    verdicts = by_pair[np.repeat(starts[order], reps) + offsets]
    columns = {name: None if getattr(pool, name) is None else getattr(pool, name)[order]
               for name in pool.__slots__ if not name.startswith("v_")}
    moved = {name: getattr(pool, name)[verdicts] for name in pool.__slots__ if name.startswith("v_")}
    moved["v_pair"] = np.repeat(np.arange(len(order)), reps)
    return JudgedPool(**columns, **moved)


def replayed_shares(pool: JudgedPool, labels: CertificationLabels, policy: FilterPolicy,
                    ladder: list[list[Slot]], pending: int) -> list[float | None] | None:
    """`first_decision`'s shares alone."""
    replayed = first_decision(pool, labels, policy, ladder, pending)
    return None if replayed is None else replayed[0]


def first_decision(pool: JudgedPool, labels: CertificationLabels, policy: FilterPolicy, ladder: list[list[Slot]],
                   pending: int, held: np.ndarray | None = None) -> tuple[list[float | None], int] | None:
    """Per rung of `ladder` past its first (asked of every pair), the share of a run's `pending` new pairs expected
    to climb to it, from the pairs judged before (None: fewer than `MIN_REPLAYED` hold the first rung). A replay:
    the earlier pairs holding the first rung, stripped to that rung's verdicts, copied in turn until there are as
    many copies as pending pairs (at most `MAX_REPLAYED`; the run's training labels grow with its pairs, and the
    thresholds the rule finds with them), each as a new pair comes (with its training label, never a calibration
    label: a copy never calibrates), beside the pool as the warehouse holds it. The rounds' rule (`round_plan`)
    asks the copies their next rungs, and the share it sends to the second rung is that rung's. The third rung's is
    replayed the same way, from the copies sent to the second whose originals hold it, stripped to the first two
    rungs' verdicts: the share of them the rule sends on, times the second's (an earlier run's own share climbing
    on, read before, came from a rule that had fitted no model yet and sent every pair on). A deeper rung's is the
    one before's times the share of the earlier pairs holding that one that hold it too (None where no earlier pair
    holds the second rung: nothing was ever asked past the first). Label-blind as the rounds are; the later rounds
    that send a stopped pair on after a refit are not replayed.

    Returns the shares and, of the pool's pairs `held` (a run's pending pairs that already hold the first rung: a
    run stopped within it, say), how many the same decision sends to the second rung: the run decides on them
    once its new pairs are scored too, with the labels those bring, not on the pool as it stands."""
    first = holds(pool, list(ladder[0]))
    if int(first.sum()) < MIN_REPLAYED or len(ladder) < 2 or pending < 1:
        return None
    ours = np.zeros(len(pool), bool) if held is None else held
    mine = np.resize(np.flatnonzero(first), min(pending, MAX_REPLAYED))
    planned = _replayed(pool, labels, policy, ladder, mine, 0, ours)
    held_climbing = int((planned[:len(pool)][ours] == 1).sum())
    climbed = planned[len(pool):] == 1
    share = float(climbed.sum()) / len(mine)
    shares = [share]
    through = list(ladder[0]) + list(ladder[1])
    before = holds(pool, through)
    # no earlier pair holds the second rung (a ladder's GenRM never asked): the rounds never ran on such verdicts,
    # and nothing says how many climb past it. Where they ran and stopped short of a rung, none is expected there.
    ran = bool(before.any())
    # the second rung's climbers, replayed the same way: the copies sent on to it whose originals hold it, stripped
    # to the first two rungs; the share of them the rule sends on is the third rung's, of the second's
    onward = mine[climbed & before[mine]]
    if len(ladder) > 2 and len(onward) >= MIN_REPLAYED // 4:
        again = _replayed(pool, labels, policy, ladder, np.resize(onward, int(climbed.sum())), 1, None)[len(pool):]
        share *= float((again == 2).sum()) / len(again)
        shares.append(share)
        through += list(ladder[2])
        before = holds(pool, through)
    for rung in ladder[len(shares) + 1:]:  # deeper: the earlier pairs' own ratio, rung to rung
        through += list(rung)
        now = holds(pool, through)
        share *= float(now.sum()) / float(before.sum()) if before.any() else 0.0
        shares.append(share if ran else None)
        before = now
    return shares, held_climbing


def _replayed(pool: JudgedPool, labels: CertificationLabels, policy: FilterPolicy, ladder: list[list[Slot]],
              originals: np.ndarray, rung: int, ours: np.ndarray | None) -> np.ndarray:
    """The rounds' rule's next rungs over `pool` beside copies of its pairs `originals` (indices, repeats allowed),
    each stripped to its verdicts of the ladder's rungs up to `rung` and brought as a new pair (its training label,
    never a calibration label): the pool's pairs `ours` and the copies asked. Returns the rungs, the pool's pairs'
    first, then the copies'."""
    kept = slot_verdicts(pool, [slot for r in ladder[:rung + 1] for slot in r])
    stripped = replace(pool, **{name: getattr(pool, name)[kept] for name in pool.__slots__ if name.startswith("v_")})
    copies = _copied(stripped, originals)
    # a copy keeps its pair id: cross-fitting folds pairs by it, so no copy's label scores its own original
    copies = replace(copies, human_label=np.full(len(copies), np.nan))
    both = _stacked(pool, copies)
    teaching = np.where(calibration_pairs(pool.pair_id, labels), 0, labels.training)[originals]
    replay = replace(labels, calibration=np.concatenate([labels.calibration, np.zeros(len(copies), np.int8)]),
                     training=np.concatenate([labels.training, teaching]),
                     population=None if labels.population is None else np.concatenate(
                         [labels.population, labels.population[originals]]),
                     audited=None if labels.audited is None else np.concatenate(
                         [labels.audited, np.zeros(len(copies), bool)]))
    c = with_reward_model(both, pool_confidences(len(both), both.v_pair, both.v_ab, both.v_margin,
                                                 both.v_scores_agree, both.human_label))
    asked = np.r_[np.zeros(len(pool), bool) if ours is None else ours, np.ones(len(copies), bool)]
    return round_plan(both, c, replay, policy, ladder, asked).rungs


def climb_shares(wh: Warehouse, run: JudgeRun, pending: list[str]) -> list[float | None] | None:
    """For the estimate of a run in rounds: per rung past its first, the expected share of its `pending` pairs that
    climb to it (None: not a run in rounds, or too few pairs judged before to replay): `pending_shares` on the
    warehouse as it stands."""
    ladder = run.strategy.ladder()
    if ladder is None or not isinstance(run.policy, FilterPolicy) or not pending:
        return None
    read = ReviewedPool.read(wh, run.config.id, run.policy)
    pool = read.pool
    labels = certification_labels(pool, read.judge, read.reviews, run.policy, read.facts)
    ours = np.isin(pool.pair_id, np.array(pending, dtype=object))
    return pending_shares(pool, read.judge, labels, run.policy, ladder, ours,
                          least_round(run.settings.judge_min_round, len(pending)))


def pending_shares(pool: JudgedPool, c: Confidences, labels: CertificationLabels, policy: FilterPolicy,
                   ladder: list[list[Slot]], ours: np.ndarray, least: int) -> list[float | None] | None:
    """Per rung past the first, the expected share of a run's pending pairs (`ours`, bool per pair) that climb to
    it, as a run whose least round is `least` sends them (`sent_at_least`). A pending pair that already holds the
    first rung (a pair an earlier run stopped low, or a run stopped at its budget within or right after the reward
    model's rung) climbs to the second as the rounds' rule decides it beside the new pairs (`first_decision`); a
    new pair as the replay expects. Where every pending pair holds the first rung, the second rung's count is the
    rule's own decision on the pool as it stands, exact, and a later rung's share of it is the replay's (None, no
    expected figure, where nothing was judged before to replay: a first run that paid for the reward model's rung)."""
    pending = int(ours.sum())
    held = ours & holds(pool, list(ladder[0]))
    new = pending - int(held.sum())
    if new:
        decided = first_decision(pool, labels, policy, ladder, new, held)
        if decided is None:
            return None
        replayed, climbing = decided
    else:  # the rule sends them on from the pool as it stands; the replay, if any, says how many climb further
        climbing = int((round_plan(pool, c, labels, policy, ladder, held).rungs == 1).sum())
        decided = first_decision(pool, labels, policy, ladder, pending)
        replayed = decided[0] if decided is not None else [None] * (len(ladder) - 1)
    first = replayed[0] or 0.0
    second = (climbing + first * new) / pending
    shares: list[float | None] = [second] + ([None if r is None else second * (r / first) for r in replayed[1:]]
                                             if first else [None if decided is None else 0.0] * (len(replayed) - 1))
    return sent_at_least(shares, ladder, pending, least)


def judgments_a_pair(rung: list[Slot]) -> int:
    """The GenRM judgments a rung asks of one pair: its slots with an order (a reward model's slot has none)."""
    return sum(order != NO_ORDER for order, _ in rung)


def sent_at_least(shares: list[float | None], ladder: list[list[Slot]], pending: int,
                  least: int) -> list[float | None]:
    """`shares` (per rung past the first) as a run sends them: the first rung whose expected judgments fall short of
    the run's `least` is not sent, and the rounds end there (`CertifyRounds.after`), so it and every rung after it
    expect none. A share not known (None) stays so."""
    out = list(shares)
    for k, share in enumerate(shares):
        if share is not None and share * pending * judgments_a_pair(ladder[k + 1]) < least:
            out[k:] = [0.0] * (len(shares) - k)
            break
    return out


class Decision(NamedTuple):
    """One decision of the rounds (`CertifyRounds._decide`)."""

    achieved: dict[str, int]  # what is certified now
    rungs: dict[str, int]  # pair -> the rung of the ladder it gets next (the run's pairs sent on)
    firsts: dict[str, str]  # pair -> its first order (`first_is_ba`): the ladder's `ab` for it
    how: str  # how "not yet sure" was decided
    stopped: str  # why climbing stopped short ("" nowhere)


class CertifyRounds:
    """The rounds of one judge run in rounds (`tasks.judge.run.Rounds`): at most two per rung of its strategy's
    ladder (2(K+1) for `certify:K`), the first (`ab 0` of every pending pair) included. One per rung is not
    enough: a pair that stopped early can be unsure once the model is refitted on the later rounds' verdicts, and
    climbs on then (on 1,200 synthetic pairs, 30 were still climbing after 3 rounds of `certify:2`)."""

    def __init__(self, wh: Warehouse, run: JudgeRun, ids: list[str]):
        ladder = run.strategy.ladder()
        if ladder is None:
            raise ValueError(f"{run.strategy.label} does not judge in rounds")
        if not isinstance(run.policy, FilterPolicy):
            raise ValueError("a run in rounds is made with the policy its rounds decide by "
                             "(tasks.curate.policy.in_rounds)")
        self.wh, self.run, self.ladder = wh, run, ladder
        self.ids = set(ids)
        self.policy: FilterPolicy = run.policy
        self.cap = 2 * len(ladder)
        self.least = least_round(run.settings.judge_min_round, len(self.ids))
        self._decided: tuple[str, Decision] | None = None

    def _decide(self) -> Decision:
        """The next round's decision (`Decision`) from the warehouse as it stands; decided once per state of the
        warehouse (the fingerprint a version's inputs are compared by, and the judgments and requests on record: a
        round whose every judgment failed changes that too)."""
        config_id = self.run.config.id
        totals = self.wh.judging.judging_totals(config_id)
        state = f"{self.wh.versions.version_inputs(config_id)}/{totals['judgments']}/{totals['requests']}"
        if self._decided is not None and self._decided[0] == state:
            return self._decided[1]
        p = self.policy
        read = ReviewedPool.read(self.wh, config_id, p)
        pool, c, reviews = read.pool, read.judge, read.reviews
        labels = certification_labels(pool, c, reviews, p, read.facts)
        # the roles fixed when judging: the first round's split, and every label a round's escalation reads
        self.wh.certification.record_label_roles(config_id, labels.kind, labels.share, p.min_audit_reviews)
        self.wh.certification.record_trained(
            config_id, trained_by_rounds(pool.pair_id, calibration_pairs(pool.pair_id, labels), labels.training))
        certified = certify_pool(pool, c, labels, p.target_agreement, p.risk, certifiable(pool, c, p))
        ours = np.array([i in self.ids for i in pool.pair_id.tolist()], bool)
        plan = round_plan(pool, c, labels, p, self.ladder, ours)
        mine = ours & (plan.rungs >= 0)
        nxt = dict(zip(pool.pair_id[mine].tolist(), plan.rungs[mine].tolist()))
        # each pair's rung in its own first order (the ladder's `ab`, `first_is_ba`)
        firsts = dict(zip(pool.pair_id[mine].tolist(), first_orders(pool)[mine].tolist()))
        decided = Decision({"certified": int(certified.accepted.sum())}, nxt, firsts, plan.how, plan.stopped)
        self._decided = (state, decided)
        return decided

    def after(self, done: int) -> RoundOutcome:
        achieved, nxt, firsts, how, stopped = self._decide()
        if not nxt:
            return RoundOutcome(achieved, None, stopped or NOTHING_MORE)
        if done + 1 >= self.cap:
            return RoundOutcome(achieved, None, f"the round cap ({self.cap} rounds for {self.run.strategy.label}): "
                                                f"{len(nxt):,} pairs would be asked more; a rerun goes on")
        wanted = {pair: tuple(oriented(self.ladder[rung], firsts[pair])) for pair, rung in nxt.items()}
        ids = sorted(wanted)
        states = as_states(self.wh.judging.judgment_states(self.run.config.id, ids))
        pending, _ = split_pending(ids, self.run.strategy, states, self.run.max_attempts, wanted)
        if not pending:
            return RoundOutcome(achieved, None, f"{len(nxt):,} pairs not yet sure, their next judgments failed "
                                                f"{self.run.max_attempts} times (the attempt limit)")
        judgments, retry = asked_of(pending, wanted, Planner(self.run.strategy, states, self.run.max_attempts))
        if judgments < self.least and not retry:  # a retry goes whatever its size: it was due last round
            return RoundOutcome(achieved, None, f"{len(pending):,} pairs not yet sure would be asked {judgments:,} "
                                                f"judgment{'s' if judgments != 1 else ''}, {TOO_FEW} "
                                                f"({self.least}, CURATE_JUDGE_MIN_ROUND): a round waits for its "
                                                "slowest request with the server's batch emptying; a run with more "
                                                "pairs asks them")
        rungs = Counter(nxt[pair] for pair in pending)
        asked = "; ".join(f"{slots_said(self.ladder[r], self.run.strategy)} of {n:,}" for r, n in sorted(rungs.items()))
        return RoundOutcome(achieved, Round(self.wh.judging.pair_texts(pending), {p: wanted[p] for p in pending},
                                            states, f"not yet sure (sure: {how}): {asked}"))

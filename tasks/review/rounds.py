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

Nothing here remembers a round: each decision is made from the warehouse as it stands, so a rerun (of a run
that was killed, say) decides its rounds afresh, and the cache answers every verdict already paid for.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from tasks.curate.certification import CertificationLabels, Plan, calibration_pairs, certify_pool, next_rungs
from tasks.curate.label_roles import trained_by_rounds
from tasks.curate.policy import FilterPolicy
from tasks.curate.select import certifiable
from tasks.judge.run import Round, RoundOutcome, as_states, split_pending
from tasks.judge.strategies import Slot, slots_said
from tasks.review.certification import certification_labels
from tasks.review.pool import ReviewedPool

if TYPE_CHECKING:
    from tasks.curate.confidence import Confidences
    from tasks.curate.pool import JudgedPool
    from tasks.judge.context import JudgeRun
    from warehouse.store import Warehouse

NOTHING_MORE = "no pair needs more judgments"


def round_plan(pool: JudgedPool, c: Confidences, labels: CertificationLabels, policy: FilterPolicy,
               ladder: list[list[Slot]], ours: np.ndarray) -> Plan:
    """The next round over `pool` for the run whose pairs are `ours` (bool per pair), toward `policy`'s target:
    over the pairs a version may hold (not contaminated, unless the policy includes them), a pair the policy's
    label-free filters would drop as it stands never sure (`certifiable`)."""
    may_hold = ~pool.contaminated if policy.exclude_contaminated else np.ones(len(pool), bool)
    return next_rungs(pool, c, labels, policy.target_agreement, policy.risk, may_hold, ladder,
                      certifiable(pool, c, policy), ours)


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
        self._decided: tuple[str, tuple[dict[str, int], dict[str, int], str, str]] | None = None

    def _decide(self) -> tuple[dict[str, int], dict[str, int], str, str]:
        """(what is certified now, the rung each of the run's pairs is to get next, how, why climbing stopped short
        ("" nowhere)), from the warehouse as it stands; decided once per state of the warehouse (the fingerprint a
        version's inputs are compared by, and the judgments and requests on record: a round whose every judgment
        failed changes that too)."""
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
        decided = ({"certified": int(certified.accepted.sum())}, nxt, plan.how, plan.stopped)
        self._decided = (state, decided)
        return decided

    def after(self, done: int) -> RoundOutcome:
        achieved, nxt, how, stopped = self._decide()
        if not nxt:
            return RoundOutcome(achieved, None, stopped or NOTHING_MORE)
        if done + 1 >= self.cap:
            return RoundOutcome(achieved, None, f"the round cap ({self.cap} rounds for {self.run.strategy.label}): "
                                                f"{len(nxt):,} pairs would be asked more; a rerun goes on")
        wanted = {pair: tuple(self.ladder[rung]) for pair, rung in nxt.items()}
        ids = sorted(wanted)
        states = as_states(self.wh.judging.judgment_states(self.run.config.id, ids))
        pending, _ = split_pending(ids, self.run.strategy, states, self.run.max_attempts, wanted)
        if not pending:
            return RoundOutcome(achieved, None, f"{len(nxt):,} pairs not yet sure, their next judgments failed "
                                                f"{self.run.max_attempts} times (the attempt limit)")
        rungs = Counter(nxt[pair] for pair in pending)
        asked = "; ".join(f"{slots_said(self.ladder[r])} of {n:,}" for r, n in sorted(rungs.items()))
        return RoundOutcome(achieved, Round(self.wh.judging.pair_texts(pending), {p: wanted[p] for p in pending},
                                            states, f"not yet sure (sure: {how}): {asked}"))

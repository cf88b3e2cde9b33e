"""A judged pool's certification: which labelled pairs calibrate, the scores a threshold is tested on, which
pairs the certified threshold accepts; and, for judging in rounds, which pairs the next round asks more of (the
statistics are in `certify.py`).

- **Labels** (`CertificationLabels`): the calibration pairs are either a uniform review audit (the guarantee then
  covers the judged pool's pairs on which a person prefers one answer) or a share of the pairs with a clear source
  label, chosen by a hash of the pair id (it then covers pairs with a clear source label). A calibration pair's
  label never trains; every other label does.
- **Scores**: a p_correct model fitted on the training labels alone (`calibration.fit_held_out`) over all of a
  pair's verdicts; with too few training labels, the judge's own confidence (a fixed function of its verdicts:
  any score serves a certification, a calibrated one keeps more pairs).
- **Rounds**: a strategy that escalates (`certify`) judges every pair once, then asks more only of the pairs
  that are not yet sure and that more verdicts could carry past their population's threshold, round by round,
  never more judgments than `swap`'s two a pair (adaptive's rule alone where no threshold is certified). Which
  pairs escalate is decided from the verdicts and the training
  labels alone, never from a calibration label, so the calibration pairs go through the rounds exactly as every
  other pair does: the whole ladder is one selection rule, certified once, at the full risk δ, on pairs that
  went through it like the rest. No share of δ is spent per round.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from common.errors import UserError
from common.numbers import count, percent
from tasks.curate.calibration import FOLDS, features_of, fit_held_out, reliability
from tasks.curate.certify import Certificate, fixed_sequence, loosest_passing, shortfall, threshold_grid
from tasks.curate.confidence import Confidences, pool_confidences
from tasks.curate.ladder import (
    REWARD_MODEL_STOP,
    confirming_margin,
    contradicts_reward_model,
    judged_by_genrm,
    reward_signals,
    unseen_judge,
    with_reward_model,
)
from tasks.curate.pool import JudgedPool
from tasks.judge.genrm import MAX_MARGIN
from tasks.judge.kinds import NO_ORDER

LABEL_KINDS = ("audit", "source", "mixed")  # mixed: some sources by their audit, the others by their labels
AUDIT_SUFFIX = " (review audit)"  # a source calibrated by its audit pairs: its population's name
EVERY_PAIR = "every pair"  # the one population of labels that name none
NO_CLIMB = "no pair climbs past adaptive's rule"


@dataclass(frozen=True)
class CertificationLabels:
    """Per pool pair: the human direction (int8: 1 A, -1 B, 0 none) a calibration pair is checked against
    (`calibration`, 0 where the pair cannot calibrate) and the one a training pair teaches (`training`); which kind
    of calibration set it is (audit: reviewers' choices on a uniform sample; source: clear source labels), and the
    `share` of the pairs that can calibrate that do.

    `population` (object, per pair): the population whose calibration labels speak for the pair ("" none: the pair
    is not covered and no certification can accept it). Each population is certified on its own calibration pairs
    at `risk / populations`, so the statement holds of every covered pair at once (a union bound: a kept-row
    weighted mix of rates each at most α is at most α). `populations` is how many δ is split over, fixed before any
    label's value is read (the candidates, excluded ones included). None: one population holding every pair.
    `excluded`: the sources whose labels were left out of calibration, and why."""

    calibration: np.ndarray
    training: np.ndarray
    kind: str
    share: float
    population: np.ndarray | None = None
    populations: int | None = None
    excluded: dict[str, str] = field(default_factory=dict)
    audited: np.ndarray | None = None  # bool per pair: calibrated by the audit (every decided audit pair calibrates)

    def __post_init__(self) -> None:
        if self.kind not in LABEL_KINDS:
            raise ValueError(f"kind must be one of {LABEL_KINDS}, not {self.kind!r}")
        if not 0.0 < self.share <= 1.0:
            raise ValueError(f"share must lie in (0, 1], not {self.share}")

    def member_of(self) -> np.ndarray:
        """Each pair's population ("" none)."""
        if self.population is None:
            out = np.empty(len(self.calibration), dtype=object)
            out[:] = EVERY_PAIR
            return out
        return self.population

    def names(self) -> list[str]:
        return sorted(set(self.member_of().tolist()) - {""})

    def split(self) -> int:
        """How many populations δ is split over (at least one)."""
        return max(self.populations if self.populations is not None else len(self.names()), 1)


def _unit_hash(pair_id: str) -> float:
    digest = hashlib.blake2b(f"certify\0{pair_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def calibration_pairs(pair_ids: np.ndarray, labels: CertificationLabels) -> np.ndarray:
    """Which pairs calibrate: of those that can, a `share` by a hash of their pair id (stable across builds and
    rounds, so a pair is a calibration pair or not once and for all)."""
    u = np.array([_unit_hash(p) for p in pair_ids], dtype=float)
    every = np.zeros(len(pair_ids), bool) if labels.audited is None else labels.audited
    return (labels.calibration != 0) & ((u < labels.share) | every)


@dataclass(frozen=True)
class Scores:
    """Each pool pair's score (NaN where it has no direction to be sure of), how it was computed, and whether the
    judge's direction is wrong by the label the pair carries (calibration label for calibration pairs, training
    label for the others; False without one)."""

    score: np.ndarray
    method: str  # "p_correct" (held-out model) | "confidence" (the judge's own, too few training labels)
    wrong: np.ndarray
    labelled: np.ndarray  # bool: the pair carries the label `wrong` reads


def signals(pool: JudgedPool, c: Confidences, idx: np.ndarray) -> np.ndarray:
    """The p_correct model's signals of pairs `idx`, with how much longer the chosen answer is (its log length
    ratio): a judge's verbosity bias is the same in both orders, so no order check sees it; the model can."""
    toward = c.direction[idx].astype(float)
    ratio = np.log((pool.len_a[idx] + 1.0) / (pool.len_b[idx] + 1.0)) * toward
    if pool.rm_margin is not None:  # a judge ladder's: the reward model's margin too (`tasks.curate.ladder`)
        return np.column_stack([features_of(c, idx), ratio, reward_signals(pool, c, idx)])
    return np.column_stack([features_of(c, idx), ratio])


def scores_of(pool: JudgedPool, c: Confidences, labels: CertificationLabels, calibrating: np.ndarray,
              eligible: np.ndarray) -> Scores:
    """The scores a certification tests thresholds on: from a model that never saw a calibration label."""
    idx = np.flatnonzero(eligible & (c.verdicts > 0) & (c.direction != 0))
    human = np.where(calibrating[idx], labels.calibration[idx], labels.training[idx])
    right = np.where(human == 0, -1, (human == c.direction[idx]).astype(np.int8)).astype(np.int8)
    train = ~calibrating[idx]
    p = fit_held_out(pool.pair_id[idx], pool.domain[idx], signals(pool, c, idx), right, train)
    score = np.full(len(pool), np.nan)
    score[idx] = c.confidence[idx] if p is None else p
    wrong = np.zeros(len(pool), bool)
    wrong[idx] = right == 0
    labelled = np.zeros(len(pool), bool)
    labelled[idx] = right >= 0
    return Scores(score, "confidence" if p is None else "p_correct", wrong, labelled)


@dataclass(frozen=True)
class Certified:
    """A certification's outcome: the accepted pairs, the scores, which pairs calibrated, each population's test,
    and which pairs a population covers (`covered`: eligible pairs some population's labels speak for)."""

    accepted: np.ndarray
    scores: Scores
    calibrating: np.ndarray
    certificates: dict[str, Certificate]
    labels: CertificationLabels
    covered: np.ndarray
    target: float
    risk: float
    risk_each: float

    @property
    def certified(self) -> bool:
        return any(cert.threshold is not None for cert in self.certificates.values())

    @property
    def threshold(self) -> float | None:
        """The certified threshold of a certification with one population (None: several, or none passed)."""
        if len(self.certificates) != 1:
            return None
        return next(iter(self.certificates.values())).threshold


def certify_pool(pool: JudgedPool, c: Confidences, labels: CertificationLabels, target: float, risk: float,
                 eligible: np.ndarray | None = None) -> Certified:
    """Accept the pairs whose score passes their population's threshold certified at `target` agreement with
    probability at least 1 - `risk` over every population at once (each tested at `risk` / the populations).
    `eligible`: the pairs a version may hold at all (not contaminated, ...), decided without labels; the thresholds
    are placed by the scores of the eligible pairs that do not calibrate."""
    eligible = np.ones(len(pool), bool) if eligible is None else eligible
    calibrating = calibration_pairs(pool.pair_id, labels)
    s = scores_of(pool, c, labels, calibrating, eligible)
    scored = ~np.isnan(s.score)
    member = labels.member_of()
    risk_each = risk / labels.split()
    accepted = np.zeros(len(pool), bool)
    certificates = {}
    for name in labels.names():
        mine = member == name
        tests = scored & calibrating & s.labelled & mine
        grid = threshold_grid(s.score[scored & ~calibrating & mine], int(tests.sum()), 1.0 - target, risk_each)
        cert = fixed_sequence(s.score[tests], s.wrong[tests], grid, 1.0 - target, risk_each)
        certificates[name] = cert
        if cert.threshold is not None:
            accepted |= mine & scored & (s.score >= cert.threshold)
    covered = eligible & (member != "")
    return Certified(accepted, s, calibrating, certificates, labels, covered, target, risk, risk_each)


class Escalation(NamedTuple):
    """Which pairs are sure enough to stop, and which may climb past adaptive's rule (`escalation_cutoff`)."""

    sure: np.ndarray  # bool per pair: sure enough to stop
    climbs: np.ndarray  # bool: its population's training labels certify a threshold, so more verdicts can help
    promising: np.ndarray  # bool: it would pass that threshold were its next rung to confirm its verdicts
    score: np.ndarray  # the pair's score by the model of every training label (NaN: none)
    how: str  # how "sure" was decided
    why: str = ""  # why no pair climbs past adaptive's rule ("": some do)


def _said(threshold: float) -> str:
    return f"{threshold:.4f}" if np.isfinite(threshold) else "any score"


MIN_SHIFT_PAIRS = 30  # pairs judged in both orders below which the judge's position shift is taken as 0


def position_shift(c: Confidences) -> float:
    """The judge's position shift: the mean margin it adds toward the answer shown first, half the mean gap between
    a pair's two orders (ab's margin for A less ba's), over the pairs judged in both whose margins are inside the
    scale (a ranking at its end cannot move further, so it hides the shift; 0 where too few pairs are left)."""
    ab, ba = c.order_margin_ab, c.order_margin_ba
    both = ~np.isnan(ab) & ~np.isnan(ba)
    both &= np.maximum(np.abs(np.nan_to_num(ab)), np.abs(np.nan_to_num(ba))) < MAX_MARGIN
    if both.sum() < MIN_SHIFT_PAIRS:
        return 0.0
    return float(np.mean(ab[both] - ba[both]) / 2.0)


def decisive_verdict(c: Confidences, keepable: np.ndarray, shift: float = 0.0) -> np.ndarray:
    """Adaptive's decisive verdict (|margin| > 1 with scores agreeing), on a pair the label-free filters keep: the
    rounds stop such a pair at the verdicts it holds. `shift`: the judge's position shift (`position_shift`), taken
    off a pair judged in one order only before its margin is read (a verdict for the answer shown first is worth
    less by it, one against it more)."""
    only_ab = ~np.isnan(c.order_margin_ab) & np.isnan(c.order_margin_ba)
    only_ba = np.isnan(c.order_margin_ab) & ~np.isnan(c.order_margin_ba)
    margin = c.margin - shift * only_ab + shift * only_ba
    return keepable & (np.abs(margin) > 1.0) & (np.sign(margin) == c.direction) & c.scores_agree & (c.direction != 0)


def _confirmed(pool: JudgedPool, c: Confidences, idx: np.ndarray, slots: list[list[tuple[str, int]]]) -> Confidences:
    """The confidences the pool would have if each pair of `idx` got the judgments `slots[i]` (its next rung), each
    confirming its verdicts so far: on its side (a tie's: its stronger order's), as strong as its stronger order,
    scores agreeing."""
    pair = np.array([i for i, rung in zip(idx.tolist(), slots) for _ in rung], np.int64)
    # a ladder's `ab` is the pair's first order (`first_is_ba`)
    ab = np.array([order == "ab" for rung in slots for order, _ in rung], bool) != first_is_ba(pool)[pair]
    by_ab, by_ba = np.nan_to_num(c.order_margin_ab), np.nan_to_num(c.order_margin_ba)
    stronger = confirming_margin(pool, c, np.where(np.abs(by_ab) >= np.abs(by_ba), by_ab, by_ba))
    side = np.where(c.direction != 0, c.direction, np.sign(stronger))
    margin = (side * np.abs(stronger))[pair]
    return with_reward_model(pool, pool_confidences(
        len(pool), np.concatenate([pool.v_pair, pair]), np.concatenate([pool.v_ab, ab]),
        np.concatenate([pool.v_margin, margin]), np.concatenate([pool.v_scores_agree, np.ones(len(pair), bool)]),
        pool.human_label))


def escalation_cutoff(pool: JudgedPool, c: Confidences, labels: CertificationLabels, target: float, risk: float,
                      eligible: np.ndarray, keepable: np.ndarray | None = None,
                      ahead: tuple[list[list[tuple[str, int]]], np.ndarray] | None = None) -> Escalation:
    """Which pairs are sure enough to stop and which may climb, from the verdicts and the training labels alone
    (never a calibration label: see the module's notes). `keepable`: the pairs the policy's label-free filters keep
    as they stand (`tasks.curate.select.certifiable`; None: every eligible pair); a pair they drop is never sure.
    `ahead`: a ladder and each pair's next rung of it (-1 none), to say which pairs are promising.

    Per population, an estimate of the threshold its certification will choose: the loosest whose bound passes at
    its share of the risk on its training pairs, scored by cross-fitting (each by a model that did not see it), each
    threshold tested on its own (`loosest_passing`: a few errors among the surest pairs do not throw it out, as
    they would a fixed sequence's, which sent every pair of a ladder to the GenRM in a round where that happened).
    In a population with one, a pair is sure when its score (by the model of every training label) reaches it or
    its verdict is decisive (adaptive's rule: |margin| > 1 with scores agreeing, a one-order margin read less the
    judge's `position_shift`); a pair a judge ladder's reward model alone scored is sure only at the threshold found
    at `REWARD_MODEL_STOP` of that risk (a stricter bar for the cheaper judge: a pair that stops too early is lost to
    the version, one that climbs costs one request). A pair is promising when it would reach the threshold were its
    next rung to confirm its verdicts (`_confirmed`). Pairs in a population without one (its training labels certify
    no threshold, no labels cover it, or too few training labels for any model) follow adaptive's rule alone: sure
    on a decisive verdict, and more verdicts cannot make them certified."""
    keepable = eligible if keepable is None else keepable & eligible
    none = np.zeros(len(pool), bool)
    shift = position_shift(c)
    adaptive = decisive_verdict(c, keepable, shift)
    # the judge's position shift, where one was measured: a run's `how` says it (which side the real judge favours)
    shifted = f"; the judge's position shift {shift:+.2f} taken off one-order verdicts" if shift else ""
    calibrating = calibration_pairs(pool.pair_id, labels)
    idx = np.flatnonzero(eligible & (c.verdicts > 0) & (c.direction != 0))
    train = idx[~calibrating[idx] & (labels.training[idx] != 0)]
    right = (labels.training[train] == c.direction[train]).astype(np.int8)
    folds = np.array([int(_unit_hash(f"fold\0{p}") * FOLDS) for p in pool.pair_id[train]], dtype=np.int64)
    out_of_fold = np.full(len(train), np.nan)
    features = signals(pool, c, train)
    for k in range(FOLDS):
        fitted = fit_held_out(pool.pair_id[train], pool.domain[train], features, right, folds != k)
        if fitted is None:
            break
        out_of_fold[folds == k] = fitted[folds == k]
    nan = np.full(len(pool), np.nan)

    def by_adaptive(why: str) -> Escalation:
        why = f"{why}: {NO_CLIMB}"
        return Escalation(adaptive, none, none, nan, f"decisive verdict ({why}){shifted}", why)

    if np.isnan(out_of_fold).any() or not len(train):
        return by_adaptive("too few training labels for a model")
    member, risk_each = labels.member_of(), risk / labels.split()

    def thresholds(at_risk: float) -> dict[str, float]:
        found = {}
        for name in labels.names():
            mine = member[train] == name
            if not mine.any():
                continue
            grid = threshold_grid(out_of_fold[mine], int(mine.sum()), 1.0 - target, at_risk)
            t = loosest_passing(out_of_fold[mine], right[mine] == 0, grid, 1.0 - target, at_risk)
            if t is not None:
                found[name] = t
        return found

    found = thresholds(risk_each)
    if not found:
        return by_adaptive(f"the training labels certify no threshold at {percent(target)}")
    # every pair, and each pair as its next rung would leave it if it confirmed the verdicts, by one model of
    # every training label (a calibration pair's label is never read: its `right` is -1, and it never trains)
    ladder, rung = ahead if ahead is not None else ([], np.full(len(pool), -1))
    up = np.flatnonzero(eligible & (c.verdicts > 0) & (rung >= 0))  # a tie too: more verdicts may break it
    both = np.concatenate([idx, up])
    human = np.where(calibrating[idx], 0, labels.training[idx])
    known = np.concatenate([np.where(human == 0, -1, (human == c.direction[idx]).astype(np.int8)),
                            np.full(len(up), -1)]).astype(np.int8)
    x = np.vstack([signals(pool, c, idx), signals(pool, _confirmed(pool, c, up, [ladder[r] for r in rung[up]]), up)])
    p = fit_held_out(pool.pair_id[both], pool.domain[both], x, known, np.arange(len(both)) < len(idx))
    if p is None:  # cross-fitting fitted a model on every fold, so all of them fit one too
        return by_adaptive("too few training labels for a model")
    score, confirmed = nan.copy(), nan.copy()
    score[idx], confirmed[up] = p[:len(idx)], p[len(idx):]
    threshold = np.array([found.get(m, np.nan) for m in member.tolist()], float)
    climbs = eligible & ~np.isnan(threshold)
    stop = threshold
    if pool.rm_margin is not None:  # a ladder: the reward model's margin alone stops a pair at a stricter threshold
        stricter = thresholds(risk_each * REWARD_MODEL_STOP)
        stop = np.where(judged_by_genrm(pool), threshold,
                        np.array([stricter.get(m, np.inf) for m in member.tolist()], float))
    with np.errstate(invalid="ignore"):
        sure = adaptive | (climbs & keepable & (score >= stop))
        promising = climbs & (confirmed >= threshold)
    said = (_said(next(iter(found.values()))) if len(found) == 1 else
            ", ".join(f"{_said(t)} in {n}" for n, t in sorted(found.items())))
    elsewhere = "; elsewhere a decisive verdict" if (eligible & ~climbs).any() else ""
    return Escalation(sure, climbs, promising, score, f"p_correct >= {said} (training labels){elsewhere}{shifted}")


def first_is_ba(pool: JudgedPool) -> np.ndarray:
    """Per pair, whether its first order (`tasks.judge.strategies.first_order`, a ladder's `ab`) is `ba`: the one
    order it holds a first sample of, if one; else whether answer A is the longer (the shorter shown first)."""
    first = pool.v_sample == 0
    ab = np.bincount(pool.v_pair[first & pool.v_ab], minlength=len(pool)) > 0
    ba = np.bincount(pool.v_pair[first & ~pool.v_ab], minlength=len(pool)) > 0
    return np.where(ab != ba, ba, pool.len_a > pool.len_b)


def in_first_order(pool: JudgedPool) -> np.ndarray:
    """Per verdict of `pool`: whether it was judged in its pair's first order (`first_is_ba`): a ladder's `ab`."""
    return pool.v_ab != first_is_ba(pool)[pool.v_pair]


def first_orders(pool: JudgedPool) -> np.ndarray:
    """Per pair, its first order as a word (`first_is_ba`): the ladder's `ab` for it, as `strategies.oriented` reads."""
    return np.where(first_is_ba(pool), "ba", "ab")


def slot_verdicts(pool: JudgedPool, slots: Iterable[tuple[str, int]]) -> np.ndarray:
    """Per verdict of `pool`: whether it answers one of a ladder's `slots` (its `ab` a pair's first order,
    `first_is_ba`; a slot with no order, a reward model's, has no verdict here)."""
    wanted = {(order == "ab", sample) for order, sample in slots if order != NO_ORDER}
    return np.array([(ab, s) in wanted for ab, s in zip(in_first_order(pool).tolist(), pool.v_sample.tolist())],
                    bool)


def holds(pool: JudgedPool, slots: list[tuple[str, int]]) -> np.ndarray:
    """Which pairs hold an ok verdict for every one of `slots` (order, sample; a ladder's, `slot_verdicts`; a judge
    ladder's reward-model slot, with no order, is held where the reward model scored the pair)."""
    scored = any(order == NO_ORDER for order, _ in slots)
    ordered = {slot for slot in slots if slot[0] != NO_ORDER}
    held = np.bincount(pool.v_pair[slot_verdicts(pool, ordered)], minlength=len(pool))  # each judgment once (a key)
    if scored:
        return (held >= len(ordered)) & (pool.rm_margin is not None and np.isfinite(pool.rm_margin))
    return held >= len(ordered)


class Plan(NamedTuple):
    """The next round (`next_rungs`): per pair the index of the rung of the ladder it gets (-1: none), how "not yet
    sure" was decided, and why climbing stopped short where it did ("" nowhere)."""

    rungs: np.ndarray
    how: str
    stopped: str


def next_rungs(pool: JudgedPool, c: Confidences, labels: CertificationLabels, target: float, risk: float,
               eligible: np.ndarray, ladder: list[list[tuple[str, int]]], keepable: np.ndarray | None = None,
               among: np.ndarray | None = None) -> Plan:
    """Which rung of `ladder` the next round asks of each pair, decided from the verdicts and the training labels
    alone (`escalation_cutoff`; `keepable`: the pairs the policy's label-free filters keep as they stand). Only the
    pairs `among` (the run's; None: every eligible pair) are asked, and never more judgments in all than `swap`'s
    two per pair of them: the judgments they hold and the round's together stay within that budget.

    A pair a version may hold that is not sure may get the rung after the last one it holds whole, further samples
    only if its verdicts contradict each other (orders or scores disagreeing: repeating consistent verdicts cannot
    make them stronger); in a judge ladder the GenRM's other order too, or the reward model's margin contradicting
    the GenRM's verdict (a GenRM order the reward model confirms was checked by a judge with no position bias; on
    the benchmark's worlds the other order did not pay, docs/judge-ladder.md#when-a-pair-climbs). In a population whose training labels certify a threshold it gets that rung only when it
    is promising (it would pass the threshold were the rung to confirm its verdicts): a pair that could not pass
    even then stops, as one that already passes does. Elsewhere adaptive's rule decides: the other order for a
    verdict that is not decisive, nothing more. When the budget binds, the other order goes first, then the higher
    scores. Rounds repeat until no pair gets a rung, so a pair that stopped early and is no longer sure once the
    model is refitted on more verdicts climbs on."""
    among = eligible if among is None else among
    depth = np.full(len(pool), -1, np.int64)
    held: list[tuple[str, int]] = []
    for k, rung in enumerate(ladder):
        held = held + list(rung)
        depth = np.where((depth == k - 1) & holds(pool, held), k, depth)
    nxt = np.where(eligible & among & (depth >= 0) & (depth < len(ladder) - 1), depth + 1, -1)
    contradicting = (c.orders_agree == 0) | ~c.scores_agree
    for k, rung in enumerate(ladder):
        if any(sample > 0 for _, sample in rung):  # further samples
            nxt = np.where((nxt == k) & ~contradicting, -1, nxt)
        elif pool.rm_margin is not None and ("ba", 0) in rung:  # a ladder's other order
            nxt = np.where((nxt == k) & ~(contradicting | contradicts_reward_model(pool, c)), -1, nxt)
    esc = escalation_cutoff(pool, c, labels, target, risk, eligible, keepable, (ladder, nxt))
    further = np.isin(nxt, [k for k, rung in enumerate(ladder) if any(sample > 0 for _, sample in rung)])
    # not sure, and: in a population with a threshold, promising; elsewhere, the other order alone. A judge ladder
    # whose GenRM has judged too few training pairs for the model to know what its verdict adds lets every pair
    # that is not sure climb to it (`tasks.curate.ladder.unseen_judge`)
    promising = esc.promising | (esc.climbs & unseen_judge(pool, labels.training))
    nxt = np.where(~esc.sure & np.where(esc.climbs, promising, ~further), nxt, -1)
    # the budget: swap's two judgments per pair asked, less what those pairs hold
    budget = 2 * int(among.sum()) - int(np.bincount(pool.v_pair, minlength=len(pool))[among].sum())
    cost = np.zeros(len(pool), np.int64)
    for k, rung in enumerate(ladder):
        at = nxt == k
        cost[at] = len(rung) - sum(holds(pool, [slot])[at].astype(np.int64) for slot in rung)
    planned = np.flatnonzero(nxt >= 0)
    order = planned[np.lexsort((-np.nan_to_num(esc.score[planned], nan=-1.0), nxt[planned]))]
    over = order[np.cumsum(cost[order]) > budget]
    nxt[over] = -1
    stopped = esc.why
    if not stopped and len(over):
        stopped = f"swap's budget of two judgments a pair is spent: {len(over):,} pairs not yet sure get no more"
    return Plan(nxt, esc.how, stopped)


SCORE_FEATURES = ("the judge's |mean margin| (a spline)", "its margin in each order toward the chosen answer",
                  "which orders were judged", "whether the orders agree", "whether the scores agree with the ranking",
                  "the spread over samples", "how many verdicts", "how much longer the chosen answer is (log length "
                  "ratio)", "the domain")


def _r2(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1] ** 2)


def score_leaning(pool: JudgedPool, c: Confidences, certified: Certified) -> dict[str, Any]:
    """What the certification's score follows over the pairs it scored: the share of its variance the judge's
    |margin| explains beside the share the chosen answer's extra length and extra markdown explain (squared
    correlations). `leans_on` names a bias feature that explains more of it than the judge does (None: the judge)."""
    s = certified.scores.score
    idx = np.flatnonzero(~np.isnan(s))
    toward = c.direction[idx].astype(float)
    length = np.log((pool.len_a[idx] + 1.0) / (pool.len_b[idx] + 1.0)) * toward
    markdown = (pool.md_a[idx] - pool.md_b[idx]) * toward
    shares = {"judge_margin": _r2(np.abs(c.margin[idx]), s[idx]), "length": _r2(length, s[idx]),
              "markdown": _r2(markdown.astype(float), s[idx])}
    bias = max(("length", "markdown"), key=lambda k: shares[k])
    return {"features": list(SCORE_FEATURES) if certified.scores.method == "p_correct"
            else ["the judge's own confidence (too few training labels for a model)"],
            "explained": {k: round(v, 4) for k, v in shares.items()},
            "leans_on": bias if shares[bias] > shares["judge_margin"] else None}


def _threshold(t: float) -> float | None:
    """A threshold as JSON holds it: None for the loosest, which accepts every scored pair (-inf)."""
    return round(t, 6) if np.isfinite(t) else None


def _population_report(cert: Certificate, score: np.ndarray, scored: np.ndarray, mine: np.ndarray, judged: int,
                       share: float) -> dict[str, Any]:
    """One population's test: its threshold, its held-out pairs, what it accepts, and its risk-coverage curve
    (the share of the judged pool accepted at each threshold tried)."""
    chosen = cert.certified
    curve = [{"threshold": _threshold(t.threshold),
              "coverage": round(int((mine & scored & (score >= t.threshold)).sum()) / judged, 6) if judged else None,
              "calibration_accepted": t.accepted, "disagreements": t.disagreements,
              "agreement_bound": round(1.0 - t.bound, 6)} for t in cert.tested]
    out: dict[str, Any] = {
        "certified": chosen is not None, "pairs": int(mine.sum()), "calibration_pairs": cert.calibration_pairs,
        "threshold": None if chosen is None else _threshold(chosen.threshold),
        "calibration_accepted": None if chosen is None else chosen.accepted,
        "calibration_disagreements": None if chosen is None else chosen.disagreements,
        # an estimate (the held-out pairs' own agreement), not a bound: only the target is guaranteed
        "estimated_agreement": None if chosen is None or not chosen.accepted
        else round(1.0 - chosen.disagreements / chosen.accepted, 6),
        "agreement_bound": None if chosen is None else round(1.0 - chosen.bound, 6),
        "accepted": int((mine & scored & (score >= chosen.threshold)).sum()) if chosen is not None else 0,
        "thresholds_tested": len(cert.tested), "curve": curve}
    if chosen is None:
        short = shortfall(cert, share)
        out["shortfall"] = {
            "best_agreement": None if short.best_agreement is None else round(short.best_agreement, 6),
            "more_labelled_pairs": short.more_pairs,
            "observed_disagreement": None if short.observed_disagreement is None else round(short.observed_disagreement, 6)}
    return out


def certification_report(certified: Certified, judged: int, sources: np.ndarray | None = None) -> dict[str, Any]:
    """What a version's stats and every surface say of its certification (`stats.certification`): each
    population's test (`populations`), and over all of them the held-out pairs, what was accepted, and the eligible
    pairs no population covers (`not_covered`, by source when `sources` are given). A threshold of None with
    `certified` accepts every scored pair of its population (the loosest one tested). `curve` and `threshold` are
    the largest population's (`curve_population`)."""
    s = certified.scores
    scored = ~np.isnan(s.score)
    member = certified.labels.member_of()
    share = certified.labels.share
    populations = {name: _population_report(cert, s.score, scored, member == name, judged, share)
                   for name, cert in certified.certificates.items()}
    passed = [p for p in populations.values() if p["certified"]]
    accepted_cal = sum(p["calibration_accepted"] for p in passed)
    disagreeing = sum(p["calibration_disagreements"] for p in passed)
    largest = max(populations, key=lambda n: (populations[n]["pairs"], n), default=None)
    tests = certified.calibrating & s.labelled & scored & (member != "")
    accepted = int(certified.accepted.sum())
    missing = scored & (member == "")  # pairs with a score no population's labels speak for
    not_covered = (dict(Counter(str(x) for x in sources[missing].tolist()).most_common()) if sources is not None
                   else {EVERY_PAIR: int(missing.sum())} if missing.any() else {})
    report: dict[str, Any] = {
        "target_agreement": round(certified.target, 6), "risk": certified.risk,
        "risk_per_population": certified.risk_each, "labels": certified.labels.kind,
        "calibration_share": share, "calibration_pairs": int(tests.sum()), "scored_by": s.method,
        "bound": "Clopper-Pearson (exact binomial), one-sided", "certified": bool(passed),
        "populations": populations, "populations_split": certified.labels.split(),
        "excluded_labels": dict(certified.labels.excluded),
        "threshold": populations[largest]["threshold"] if largest is not None else None,
        "curve_population": largest, "curve": populations[largest]["curve"] if largest is not None else [],
        "thresholds_tested": sum(p["thresholds_tested"] for p in populations.values()),
        "calibration_accepted": accepted_cal if passed else None,
        "calibration_disagreements": disagreeing if passed else None,
        "estimated_agreement": round(1.0 - disagreeing / accepted_cal, 6) if passed and accepted_cal else None,
        "accepted": accepted, "judged": judged, "coverage": round(accepted / judged, 6) if judged else None,
        "not_covered": not_covered,
        "reliability": reliability(s.score[tests], (~s.wrong[tests]).astype(float)) if s.method == "p_correct" else None,
    }
    if not passed:
        best = [p["shortfall"] for p in populations.values() if "shortfall" in p]
        report["shortfall"] = max(best, key=lambda b: (b["best_agreement"] or 0.0), default={
            "best_agreement": None, "more_labelled_pairs": None, "observed_disagreement": None})
    return report


def _shares(keys: np.ndarray) -> dict[str, float]:
    counted = Counter("unknown" if k is None or k == "" else str(k) for k in keys.tolist())
    total = sum(counted.values())
    return {k: round(n / total, 6) for k, n in counted.most_common()} if total else {}


def labelled_mix(pool: JudgedPool, labels: CertificationLabels, judged: np.ndarray) -> dict[str, Any]:
    """How the pairs that can calibrate (a clear label of the calibration's kind) differ from the judged pool
    (`judged`: bool per pair): their share of it, and the source and domain mix of each. Certified on the sources'
    labels, the guarantee covers pairs like these, not the pool's unlabelled ones."""
    can = judged & (labels.calibration != 0)
    return {"labelled": int(can.sum()), "judged": int(judged.sum()),
            "labelled_share": round(int(can.sum()) / int(judged.sum()), 6) if judged.any() else None,
            "by_source": {"judged": _shares(pool.source[judged]), "labelled": _shares(pool.source[can])},
            "by_domain": {"judged": _shares(pool.domain[judged]), "labelled": _shares(pool.domain[can])}}


def kept_counts(accepted: np.ndarray, kept: np.ndarray) -> dict[str, int]:
    """A certified version's rows (`kept`: pool indices): certified, and kept though not certified (only reviewers
    who decided a pair keep it so)."""
    inside = accepted[kept]
    return {"kept_certified": int(inside.sum()), "kept_by_reviewers": int((~inside).sum())}


def kept_coverage(pool: JudgedPool, accepted: np.ndarray, covered: np.ndarray, kept: np.ndarray) -> dict[str, Any]:
    """A certified version's rows by source: certified (the statement covers them), kept uncovered (policy
    `uncovered = "keep"`: no label speaks for them), and kept by reviewers (a person chose them)."""
    rows: dict[str, dict[str, int]] = {}
    for source, ok, inside in zip(pool.source[kept].tolist(), accepted[kept].tolist(), covered[kept].tolist()):
        key = "certified" if ok else "not_covered" if not inside else "by_reviewers"
        entry = rows.setdefault(str(source), {"certified": 0, "not_covered": 0, "by_reviewers": 0})
        entry[key] += 1
    return {"kept_by_source": rows,
            "kept_not_covered": sum(r["not_covered"] for r in rows.values())}


LABELS_SAID = {"audit": "a review audit", "source": "the sources' clear labels",
               "mixed": "a review audit and the other sources' clear labels"}


class NotCertifiedError(UserError, ValueError):
    """No threshold certifies the target: nothing is written."""

    hint = ("lower --target-agreement or raise --risk, or label more pairs: a review audit (`curate review push "
            "NAME --select audit`) certifies on reviewers' choices")


def not_certified(report: dict[str, Any]) -> NotCertifiedError:
    """The one-line refusal of a certification report that certified nothing (`certification_report`): the best
    agreement any population's test could certify at that risk (what its strictest thresholds' held-out pairs
    bound, not what a looser target would keep), and how many more labelled pairs would be needed; pairs no label
    speaks for are named, with the audit that would cover them."""
    target, risk, pairs = report["target_agreement"], report["risk"], report["calibration_pairs"]
    split = report.get("populations_split", 1)
    at = f"risk {risk:g}" + (f" (split over {split} populations)" if split > 1 else "")
    head = (f"no selection certifies {percent(target)} agreement with human preference at {at} on "
            f"{count(pairs)} held-out labelled pairs (from {LABELS_SAID[report['labels']]})")
    uncovered = sum((report.get("not_covered") or {}).values())
    names = sorted(report.get("not_covered") or {})
    audit = ("; " + f"{count(uncovered)} judged pairs have no trusted label at all: `curate review push NAME --select "
             f"audit --source {names[0] if len(names) == 1 else 'SOURCE'}` draws the review audit that covers "
             f"{'them' if len(names) == 1 else 'a source'}") if uncovered else ""
    if not pairs:
        return NotCertifiedError(f"{head}: no held-out labelled pair has a verdict to test{audit}")
    short = report.get("shortfall") or {}
    best = short.get("best_agreement")
    said = (f"{head}: at most {percent(best)} could be certified at that risk (the bound at the strictest "
            "thresholds these pairs can test)" if best else head)
    more = short.get("more_labelled_pairs")
    if more is None:
        seen = short.get("observed_disagreement")
        return NotCertifiedError(
            f"{said}; even there the judge disagrees with people on {percent(seen)} of them, more than the "
            f"{percent(1 - target)} allowed: more labelled pairs would test stricter thresholds{audit}"
            if seen is not None else said + audit)
    return NotCertifiedError(f"{said}; about {count(more)} more labelled pairs would be needed{audit}")

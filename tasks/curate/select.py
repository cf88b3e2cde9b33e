"""From a judged pool to the rows of a dataset version: the policy's filters (each dropped pair counted under
the first reason it meets), its caps, the bias controls, the chosen/rejected direction, a train/validation
split by prompt, and a content hash (pure functions over the pool's columns).

The texts of a kept row (prompt, chosen, rejected) are not handled here: `version_table` says which
response is chosen, and the warehouse writes the texts from the pairs table (`wh.versions.write_version`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from common.errors import UserError
from common.reasons import Dropped
from tasks.curate.bias import Preferences, hold_share
from tasks.curate.confidence import Confidences
from tasks.curate.policy import FilterPolicy
from tasks.curate.pool import JudgedPool, prompt_key


class ReviewOverrides(Protocol):
    """What human review may do to a selection (review comes after curation and implements this; see
    `tasks.review.overrides.PoolReviews`): recode the pairs reviewers decided."""

    def drop_codes(self, codes: np.ndarray, reasons: tuple[str, ...]) -> np.ndarray: ...


# Every reason a judged pair is dropped for, in the order they are checked (a pair counts under the first).
REASONS: tuple[Dropped, ...] = tuple(Dropped)

# The columns of a version's rows, in the warehouse's order (`prompt`, `chosen`, `rejected` come from the pairs).
ROW_SCHEMA = pa.schema([
    ("pair_id", pa.string()), ("chosen_side", pa.string()), ("margin", pa.float64()), ("confidence", pa.float64()),
    ("p_correct", pa.float64()), ("orders_agree", pa.bool_()), ("scores_agree", pa.bool_()),
    ("spread", pa.float64()), ("verdicts", pa.int32()), ("human_label", pa.float64()), ("human_agrees", pa.bool_()),
    ("source", pa.string()), ("source_id", pa.string()), ("source_revision", pa.string()), ("domain", pa.string()),
    ("language", pa.string()), ("split", pa.string()),
    # a row reviewers decided: how many voted and the side their majority chose (null for the judge's rows)
    ("reviewers", pa.int32()), ("reviewers_choice", pa.string()),
    # a certified version's: the score its certification thresholded (null elsewhere, and on a row it did not
    # certify)
    ("certification_score", pa.float64()),
])


def bucket_of(key: str) -> float:
    return int(key[:8], 16) / 0xFFFFFFFF


def split_of(history: list[dict[str, str]], validation_share: float) -> str:
    """Deterministic by prompt: every pair of one prompt lands in the same split."""
    return "validation" if bucket_of(prompt_key(history)) < validation_share else "train"


class NoCalibrationError(UserError):
    """`min_p_correct` asks for probabilities that could not be fitted."""

    hint = "judge more human-labelled pairs, or filter on min_confidence instead"


def drop_reasons(pool: JudgedPool, c: Confidences, policy: FilterPolicy, p_correct: np.ndarray,
                 certified: np.ndarray | None = None, covered: np.ndarray | None = None,
                 personal_data: np.ndarray | None = None) -> np.ndarray:
    """Each pair's first reason to be dropped: an index into REASONS plus one, 0 for a pair the filters keep.

    A pair judged in one order only is kept only when that was on purpose: its strategy (adaptive) asked no second
    order because the first verdict was decisive (|margin| above the policy's `decisive_margin` and scores
    agreeing with the ranking), and nothing of the pair failed.

    `certified` (bool per pair, a certified selection's: `tasks.curate.certification`): a pair the certification
    did not accept is dropped as `not_certified` after the judge's filters; the filters that read a source's label
    (both-bad, human ties, human disagreement) then come after it, as they decide nothing of what is certified.
    `covered` (bool per pair): the pairs some calibration's labels speak for; the others are `not_covered` (policy
    `uncovered = "drop"`, the default) or kept uncertified (`"keep"`). `personal_data` (bool per pair): the
    pairs whose texts hold a finding of a kind the policy's `pii` drops."""
    code = np.zeros(len(pool), np.int8)

    def drop(reason: Dropped, mask: np.ndarray) -> None:
        code[(code == 0) & mask] = REASONS.index(reason) + 1

    def source_label_filters() -> None:
        if policy.both_bad == "drop":
            drop(Dropped.BOTH_BAD, pool.both_bad)
        if policy.human_ties == "drop":
            drop(Dropped.HUMAN_TIE, pool.human_label == 0)

    drop(Dropped.NOT_JUDGED, c.verdicts == 0)
    if policy.exclude_contaminated:
        drop(Dropped.CONTAMINATED, pool.contaminated)
    if personal_data is not None:
        drop(Dropped.PERSONAL_DATA, personal_data)
    if certified is None:
        source_label_filters()
    drop(Dropped.JUDGE_TIE, c.direction == 0)
    drop(Dropped.MARGIN_BELOW_MIN, np.abs(c.margin) < policy.min_abs_margin)
    drop(Dropped.CONFIDENCE_BELOW_MIN, c.confidence < policy.min_confidence)
    if policy.min_p_correct is not None:
        drop(Dropped.P_CORRECT_BELOW_MIN, np.isnan(p_correct) | (np.nan_to_num(p_correct) < policy.min_p_correct))
    if policy.require_order_agreement:
        one = c.orders_agree == -1
        # e.g. `single`: nothing checked its position bias
        drop(Dropped.ONE_ORDER_ONLY, one & ~pool.one_order_on_purpose)
        drop(Dropped.SECOND_ORDER_FAILED, one & pool.has_failed)
        decisive = (np.abs(c.margin) > policy.decisive_margin) & c.scores_agree
        drop(Dropped.SECOND_ORDER_MISSING, one & ~decisive & ~priced_by_certificate(pool, certified))
        if policy.one_order_decisive == "drop":
            drop(Dropped.ONE_ORDER_DECISIVE, one)
        drop(Dropped.ORDERS_DISAGREE, c.orders_agree == 0)
    if policy.require_score_agreement:
        drop(Dropped.SCORES_DISAGREE, ~c.scores_agree)
    if policy.max_spread is not None:
        drop(Dropped.SPREAD_ABOVE_MAX, c.spread > policy.max_spread)
    if certified is not None:
        if covered is not None:
            if policy.uncovered == "drop":
                drop(Dropped.NOT_COVERED, ~covered)
            certified = certified | ~covered  # kept uncertified, the card names them
        drop(Dropped.NOT_CERTIFIED, ~certified)
        source_label_filters()
    if policy.human_label == "require_agreement":
        drop(Dropped.HUMAN_DISAGREES, c.human_agrees == 0)
    return code


# the filters that read a source's human label: a certification never lets them choose what it tests
LABEL_FILTERS = (Dropped.BOTH_BAD, Dropped.HUMAN_TIE, Dropped.HUMAN_DISAGREES)


def priced_by_certificate(pool: JudgedPool, certified: np.ndarray | None) -> np.ndarray:
    """The one-order pairs a certified build keeps for its certificate to judge (bool per pair): a judge ladder's
    pairs the reward model scored. That judge has no position bias, so it stands where the GenRM's other order
    would; the certified score reads both judges' verdicts (docs/judge-ladder.md#one-genrm-order), and a pair the
    filter dropped here would waste the GenRM request the rounds spent on it. Never in a build without a
    certificate (`certified` None)."""
    if certified is None or pool.rm_margin is None:
        return np.zeros(len(pool), bool)
    return np.isfinite(pool.rm_margin)


def certifiable(pool: JudgedPool, c: Confidences, policy: FilterPolicy) -> np.ndarray:
    """The pairs a certification may accept (bool per pair): those every filter of the policy keeps but the ones
    that read a label, so that which pairs are tested is decided without a label. `c`: the judge's own."""
    codes = drop_reasons(pool, c, policy, np.full(len(pool), np.nan), certified=np.ones(len(pool), bool))
    return (codes == 0) | np.isin(codes, [REASONS.index(r) + 1 for r in LABEL_FILTERS])


def preferences(pool: JudgedPool, c: Confidences, idx: np.ndarray) -> Preferences:
    """Pairs `idx` as chosen/rejected, the way the judge ranks them, for the bias audit."""
    a = c.direction[idx] == 1
    return Preferences(np.where(a, pool.len_a[idx], pool.len_b[idx]), np.where(a, pool.len_b[idx], pool.len_a[idx]),
                       np.where(a, pool.md_a[idx], pool.md_b[idx]), np.where(a, pool.md_b[idx], pool.md_a[idx]), a,
                       np.where(a, pool.model_a[idx], pool.model_b[idx]), np.where(a, pool.model_b[idx], pool.model_a[idx]))


def pool_index(c: Confidences) -> np.ndarray:
    """Every judged pair with a direction: the pool a version is drawn from, as the bias audit sees it."""
    return np.flatnonzero((c.verdicts > 0) & (c.direction != 0))


def _first_within_cap(keys: np.ndarray, cap: int) -> np.ndarray:
    """Whether each item is among the first `cap` of its key, in the given order."""
    codes = pd.factorize(keys)[0]
    return pd.Series(codes).groupby(codes).cumcount().to_numpy() < cap


def select_rows(pool: JudgedPool, c: Confidences, policy: FilterPolicy,
                p_correct: np.ndarray | None = None, reviews: ReviewOverrides | None = None,
                certified: np.ndarray | None = None, covered: np.ndarray | None = None,
                personal_data: np.ndarray | None = None) -> tuple[np.ndarray, Counter]:
    """The pool indices a policy keeps (ascending: pair id order) and the dropped pairs counted by reason.
    `p_correct`: the calibrated probabilities, NaN where there is none (all NaN when none could be fitted);
    `certified`: the pairs a certified selection accepted (`drop_reasons`), its label filters, caps and bias
    controls applied after it; `personal_data`: the pairs the policy's `pii` drops (`drop_reasons`)."""
    p_correct = np.full(len(pool), np.nan) if p_correct is None else p_correct
    if policy.min_p_correct is not None and np.isnan(p_correct).all():
        raise NoCalibrationError("the policy filters on min_p_correct, but no calibrated p_correct exists for "
                                 "this judge configuration (too few pairs with a clear human label)")
    codes = drop_reasons(pool, c, policy, p_correct, certified, covered, personal_data)
    codes = codes if reviews is None else reviews.drop_codes(codes, REASONS)  # reviewers decide what they reviewed
    dropped = Counter({REASONS[k - 1]: int(n) for k, n in zip(*np.unique(codes[codes > 0], return_counts=True))})
    kept = np.flatnonzero(codes == 0)
    # Caps keep the most confident pairs first; ties broken by pair id, so the choice is reproducible.
    kept = kept[np.lexsort((kept, -c.confidence[kept]))]
    caps = [("prompt", policy.max_per_prompt, pool.prompt_key),
            ("domain", policy.max_per_domain, np.array([d or "" for d in pool.domain], dtype=object)
             if policy.max_per_domain is not None else None),
            ("source", policy.max_per_source, pool.source)]
    for name, cap, keys in caps:
        if cap is None:
            continue
        within = _first_within_cap(keys[kept], cap)
        if (~within).any():
            dropped[f"cap_per_{name}"] += int((~within).sum())
        kept = kept[within]
    # Bias controls: the over-represented side loses its least confident pairs (calibrated when known).
    for name, cap, longer in (("chosen_longer_share", policy.max_chosen_longer_share, True),
                              ("chosen_more_markdown_share", policy.max_chosen_more_markdown_share, False)):
        if cap is None:
            continue
        prefs = preferences(pool, c, kept)
        flags = prefs.chosen_len > prefs.rejected_len if longer else prefs.chosen_md > prefs.rejected_md
        weight = np.where(np.isnan(p_correct[kept]), c.confidence[kept], p_correct[kept])
        keep = hold_share(flags, cap, weight)
        if not keep.all():
            dropped[name] += int((~keep).sum())
        kept = kept[keep]
    return np.sort(kept), dropped


def _nullable(values: np.ndarray, present: np.ndarray, kind: pa.DataType) -> pa.Array:
    return pa.array(values, kind, mask=~present)


def version_table(pool: JudgedPool, c: Confidences, p_correct: np.ndarray, kept: np.ndarray,
                  policy: FilterPolicy, reviewers: np.ndarray | None = None,
                  certification_score: np.ndarray | None = None) -> pa.Table:
    """The kept rows as the version stores them, without their texts (ROW_SCHEMA), in pair id order.
    `reviewers`: per pool pair, how many reviewers decided it (0 where the judge did; `c` holds their choice as
    its direction); None: no pair was decided by reviewers."""
    a = c.direction[kept] == 1
    voted = np.zeros(len(kept), np.int64) if reviewers is None else reviewers[kept]
    p = np.round(p_correct[kept], 6)
    orders = c.orders_agree[kept]
    label = pool.human_label[kept]
    human = c.human_agrees[kept]
    show_human = policy.human_label != "ignore"
    split = np.where(np.array([bucket_of(k) for k in pool.prompt_key[kept]], float) < policy.validation_share,
                     "validation", "train")
    return pa.table({
        "pair_id": pa.array(pool.pair_id[kept], pa.string()), "chosen_side": pa.array(np.where(a, "a", "b")),
        # from the chosen side: negative where reviewers overrode the judge (+ 0.0: no -0.0 in a digest)
        "margin": c.margin[kept] * c.direction[kept] + 0.0, "confidence": c.confidence[kept],
        "p_correct": _nullable(np.nan_to_num(p), ~np.isnan(p), pa.float64()),
        "orders_agree": _nullable(orders == 1, orders >= 0, pa.bool_()), "scores_agree": c.scores_agree[kept],
        "spread": c.spread[kept], "verdicts": pa.array(c.verdicts[kept], pa.int32()),
        "human_label": _nullable(np.where(a, label, -label), ~np.isnan(label), pa.float64()),
        "human_agrees": _nullable(human == 1, (human >= 0) & show_human, pa.bool_()),
        "source": pa.array(pool.source[kept], pa.string()), "source_id": pa.array(pool.source_id[kept], pa.string()),
        "source_revision": pa.array(pool.source_revision[kept], pa.string()),
        "domain": pa.array(pool.domain[kept], pa.string()), "language": pa.array(pool.language[kept], pa.string()),
        "split": pa.array(split, pa.string()),
        "reviewers": _nullable(voted, voted > 0, pa.int32()),
        "reviewers_choice": _nullable(np.where(a, "a", "b"), voted > 0, pa.string()),
        "certification_score": pa.nulls(len(kept), pa.float64()) if certification_score is None else
        _nullable(np.round(np.nan_to_num(certification_score[kept]), 6), ~np.isnan(certification_score[kept]),
                  pa.float64()),
    }, schema=ROW_SCHEMA)


def content_hash(row_digests: Iterable[str], export_options: dict | None = None) -> str:
    """A hash of what a version holds, from each row's digest in pair id order (`wh.versions.row_digests`): the
    same policy over the same judgments gives the same hash. `export_options` that change the published files
    (a TRL `margin` column, a certified guarantee its card states) are part of it when set."""
    h = hashlib.blake2b(digest_size=16)
    if export_options:
        h.update(json.dumps(export_options, sort_keys=True).encode() + b"\n")
    for digest in row_digests:
        h.update(digest.encode() + b"\n")
    return h.hexdigest()

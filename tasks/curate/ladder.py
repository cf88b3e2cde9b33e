"""A judge ladder's pool (`curate judge --strategy ladder`): the reward model's margin beside the GenRM's verdicts.

The reward model scores every pair (rung 0); the GenRM judges only the pairs its score leaves unsure. A pair the
GenRM never judged stands on the reward model's margin alone: its direction is the margin's sign, it has no order
to disagree (a reward model scores each answer alone, so it has no position bias to check) and no GenRM margin
(`margin` 0, never decisive by adaptive's rule). The certification's score reads the reward model's margin as two
more signals of every pair (`reward_signals`), so a pair is certified on every verdict it has: the reward model's
alone where it climbed no further, all of them where it did. The GenRM's own numbers (`margin`, `orders_agree`,
...) are never mixed with the reward model's scale.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tasks.curate.confidence import Confidences
from tasks.curate.pool import JudgedPool

# What a GenRM verdict confirming a pair the reward model alone scored is taken to say when the rounds ask whether
# the next rung could carry it past its threshold: "better" (ranking 2 or 5) on the reward model's side.
CONFIRMED_MARGIN = 1.5


def scored_only(pool: JudgedPool, c: Confidences | None = None) -> np.ndarray:
    """The pairs the reward model scored with a direction and the GenRM never judged (bool per pair): by `c`'s
    verdicts (the GenRM's own confidences, which may hold verdicts the pool does not: a projection's), or by the
    pool's GenRM verdicts without `c` (confidences `with_reward_model` made count its score as a verdict)."""
    if pool.rm_margin is None:
        return np.zeros(len(pool), bool)
    unjudged = ~judged_by_genrm(pool) if c is None else c.verdicts == 0
    return unjudged & np.isfinite(pool.rm_margin) & (np.nan_to_num(pool.rm_margin) != 0)


def with_reward_model(pool: JudgedPool, c: Confidences) -> Confidences:
    """`c` (the GenRM's confidences) with the pairs the reward model alone scored standing on its margin."""
    only = scored_only(pool, c)
    if not only.any():
        return c
    sign = np.sign(np.nan_to_num(pool.rm_margin)).astype(np.int8)
    label = pool.human_label
    human = np.where(np.isnan(label), -1, (np.sign(np.nan_to_num(label)) == sign).astype(np.int8))
    strength = 1.0 - np.exp(-np.abs(np.nan_to_num(pool.rm_margin)))  # its own confidence: 0 at a tie, toward 1
    return replace(c, direction=np.where(only, sign, c.direction).astype(np.int8),
                   orders_agree=np.where(only, 1, c.orders_agree).astype(np.int8),
                   scores_agree=np.where(only, True, c.scores_agree),
                   human_agrees=np.where(only, human, c.human_agrees).astype(np.int8),
                   confidence=np.where(only, np.round(strength, 6), c.confidence),
                   verdicts=np.where(only, 1, c.verdicts).astype(np.int64))


# Training pairs with a GenRM verdict below which the score's model cannot tell what a GenRM verdict adds
MIN_TAUGHT = 50


def unseen_judge(pool: JudgedPool, training: np.ndarray) -> bool:
    """Whether a ladder's GenRM has judged fewer than `MIN_TAUGHT` pairs with a training label: the score's model
    then knows nothing of what its verdict adds, and every pair that is not sure may climb to it (decided from which
    verdicts exist and the training labels alone, never a calibration label). False without a ladder."""
    if pool.rm_margin is None:
        return False
    return int((judged_by_genrm(pool) & (training != 0)).sum()) < MIN_TAUGHT


def reward_signals(pool: JudgedPool, c: Confidences, idx: np.ndarray) -> np.ndarray:
    """The reward model's signals of pairs `idx`: its margin toward the chosen answer (0 where it gave none), and
    whether it gave one."""
    rm = pool.rm_margin[idx]
    has = np.isfinite(rm)
    return np.column_stack([np.where(has, c.direction[idx] * np.nan_to_num(rm), 0.0), has.astype(float)])


def confirming_margin(pool: JudgedPool, c: Confidences, stronger: np.ndarray) -> np.ndarray:
    """The margin a confirming GenRM verdict is taken to give each pair (`stronger`: its stronger order's, 0 where
    the GenRM never judged it): for a pair the reward model alone scored, `CONFIRMED_MARGIN` on its side."""
    only = scored_only(pool)  # `c` counts the reward model's score as a verdict
    if not only.any():
        return stronger
    return np.where(only, CONFIRMED_MARGIN * np.sign(np.nan_to_num(pool.rm_margin)), stronger)


# The share of a population's risk at which the threshold a pair must pass to stop on the reward model's margin
# alone is found: a stricter bar for the cheaper judge (docs/judge-ladder.md#when-a-pair-climbs)
REWARD_MODEL_STOP = 0.2


def judged_by_genrm(pool: JudgedPool) -> np.ndarray:
    """Which pairs hold a GenRM verdict (bool per pair)."""
    judged = np.zeros(len(pool), bool)
    judged[pool.v_pair] = True
    return judged


def contradicts_reward_model(pool: JudgedPool, c: Confidences) -> np.ndarray:
    """Which pairs the GenRM judged whose reward-model margin points the other way, or nowhere (bool per pair;
    none without a reward model)."""
    if pool.rm_margin is None:
        return np.zeros(len(pool), bool)
    rm = np.sign(np.nan_to_num(pool.rm_margin))
    return judged_by_genrm(pool) & np.isfinite(pool.rm_margin) & (rm != c.direction)

"""Seeded simulated worlds for checking certification (SIMULATED: the stand-in's verdicts, synthetic raters).

A world is a pool of pairs whose answers have latent qualities (a hash of their texts, as the stand-in reads
them), verdicts from the GenRM stand-in's own verdict function (`genrm_standin.verdict_for`, in process: the
same law the stand-in serves over HTTP, with its position and length biases and sample noise) and human labels
from synthetic raters (`tasks.ingest.latent.human_label`, with a rater's noise). Because the truth is known, the
agreement a person would have with any chosen side is known exactly, not only estimated: the check of a
guarantee compares that with the target.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace

import numpy as np

from tasks.curate.pool import JudgedPair, JudgedPool
from tasks.ingest.latent import HUMAN_STEPS, human_label, latent_quality
from tasks.ingest.sources.helpsteer3 import SOURCE as HELPSTEER3  # its labels' scale and clear-label rule
from tasks.judge.genrm import Verdict, build_messages, to_a_side
from testing.genrm_standin import StandinConfig, verdict_for

CLEAR_STEP = HUMAN_STEPS[1]  # a perceived difference from which a rater's label is clear (|label| >= 2)


@dataclass(frozen=True)
class World:
    """One world's pairs (texts and latent qualities), seeded."""

    seed: int
    pairs: list[JudgedPair]
    quality_a: np.ndarray
    quality_b: np.ndarray
    human_noise: float
    config: StandinConfig
    verdicts: dict[tuple[int, str, int], object] = field(default_factory=dict)  # (pair, order, sample) -> side
    base: JudgedPool | None = None  # the pool's columns without verdicts, made on first use

    @property
    def requests(self) -> int:
        return len(self.verdicts)


def make_world(seed: int, n: int = 2000, human_noise: float = 1.2, position_bias: float = 0.0,
               length_bias: float = 0.0, labelled_share: float = 1.0) -> World:
    """`n` pairs with HelpSteer3-like labels (from A's side, -3..3) drawn by one rater each; a share of them
    labelled (the rest unlabelled, as a source without labels)."""
    rng = random.Random(seed)
    pairs, qa, qb = [], [], []
    for i in range(n):  # pair ids sort as the pairs are made: the pool's order is theirs
        # answers of varied length, so that a length bias has something to act on
        a = f"world {seed} pair {i} answer a " + "detail " * rng.randint(5, 120)
        b = f"world {seed} pair {i} answer b " + "detail " * rng.randint(5, 120)
        q_a, q_b = latent_quality(a), latent_quality(b)
        label = human_label(q_a, q_b, rng, human_noise) if rng.random() < labelled_share else None
        pairs.append(JudgedPair(f"{seed:04d}-{i:06d}", HELPSTEER3.name, str(i), "sim", [{"role": "user", "content":
                                f"world {seed} prompt {i}"}], a, b, None if label is None else float(label),
                                False, "general", "en", False))
        qa.append(q_a)
        qb.append(q_b)
    return World(seed, pairs, np.array(qa), np.array(qb), human_noise,
                 StandinConfig(position_bias=position_bias, length_bias=length_bias))


def judge(world: World, index: int, order: str, sample: int) -> None:
    """One stand-in verdict of a pair (first samples unseeded, as the client sends them; later ones seeded)."""
    key = (index, order, sample)
    if key in world.verdicts:
        return
    p = world.pairs[index]
    messages = build_messages(p.history, p.response_a, p.response_b, order)
    v = verdict_for(messages, None if sample == 0 else 1000 + sample, world.config)
    world.verdicts[key] = to_a_side(Verdict(v.score_1, v.score_2, v.ranking), order)


def pool_of(world: World) -> JudgedPool:
    """The judged pool as a version sees it: every pair with the verdicts it has so far (in the warehouse's order:
    pair, order, sample)."""
    if world.base is None:  # the texts' columns once: only the verdicts change between rounds
        object.__setattr__(world, "base", JudgedPool.of(world.pairs))
    keys = sorted(world.verdicts)
    sides = [world.verdicts[k] for k in keys]
    return replace(
        world.base, v_pair=np.array([i for i, _, _ in keys], np.int64), v_ab=np.array([o == "ab" for _, o, _ in keys]),
        v_sample=np.array([s for _, _, s in keys], np.int64), v_margin=np.array([v.margin for v in sides], float),
        v_scores_agree=np.array([v.score_a == v.score_b or (v.score_a > v.score_b) == (v.margin > 0) for v in sides],
                                bool))


def _phi(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def clear_agreement(world: World, direction: np.ndarray, members: np.ndarray) -> float | None:
    """The agreement a fresh rater's clear label would have with `direction` (1 A, -1 B) over the pairs in
    `members`, exactly (the population a source-label certification covers: pairs with a clear label)."""
    if not members.any():
        return None
    d = world.quality_a[members] - world.quality_b[members]
    s = world.human_noise
    clear_a, clear_b = _phi((d - CLEAR_STEP) / s), _phi((-CLEAR_STEP - d) / s)
    agree = np.where(direction[members] == 1, clear_a, clear_b)
    return float(agree.sum() / (clear_a + clear_b).sum())


def fresh_clear_agreement(world: World, direction: np.ndarray, members: np.ndarray, seed: int) -> float | None:
    """The same agreement as one fresh rater per pair realises it (clear labels only)."""
    rng = random.Random(seed)
    agree = clear = 0
    for i in np.flatnonzero(members):
        label = human_label(world.quality_a[i], world.quality_b[i], rng, world.human_noise)
        if abs(label) >= 2:
            clear += 1
            agree += (label > 0) == (direction[i] == 1)
    return agree / clear if clear else None

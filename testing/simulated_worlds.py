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
from tasks.ingest.synth_rows import TextMaker
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


OTHER_SOURCE = "sim-long"  # an unlabelled source of another kind: wide length gaps


def make_world(seed: int, n: int = 2000, human_noise: float = 1.2, position_bias: float = 0.0,
               length_bias: float = 0.0, labelled_share: float = 1.0, other_share: float = 0.0,
               natural: bool = False) -> World:
    """`n` pairs with HelpSteer3-like labels (from A's side, -3..3) drawn by one rater each; a share of them
    labelled (the rest unlabelled, as a source without labels). An `other_share` of the pairs come from
    `OTHER_SOURCE`, a source of another kind with no labels at all whose answers differ 4 to 16 times in length
    (a length bias acts on them far more). `natural`: the texts are pseudo-words (`TextMaker`), as an ingest's
    near-duplicate detection needs them to be (the default repeats one word: quicker, for in-process worlds)."""
    rng = random.Random(seed)
    words = TextMaker(seed) if natural else None

    def text(head: str, count: int) -> str:
        return f"{head} " + (words.text(7 * count) if words is not None else "detail " * count)

    pairs, qa, qb = [], [], []
    for i in range(n):  # pair ids sort as the pairs are made: the pool's order is theirs
        other = other_share > 0 and rng.random() < other_share  # (no draw without one: seeded worlds stay)
        if other:  # one answer 4 to 16 times the other's length
            short = rng.randint(5, 30)
            sizes = [short, int(short * rng.uniform(4.0, 16.0))]
            rng.shuffle(sizes)
        else:  # answers of varied length, so that a length bias has something to act on
            sizes = [rng.randint(5, 120), rng.randint(5, 120)]
        a = text(f"world {seed} pair {i} answer a", sizes[0])
        b = text(f"world {seed} pair {i} answer b", sizes[1])
        q_a, q_b = latent_quality(a), latent_quality(b)
        labelled = not other and rng.random() < labelled_share
        label = human_label(q_a, q_b, rng, human_noise) if labelled else None
        prompt = f"world {seed} prompt {i}" + (f" {words.text(200)}" if words is not None else "")
        pairs.append(JudgedPair(f"{seed:04d}-{i:06d}", OTHER_SOURCE if other else HELPSTEER3.name, str(i), "sim",
                                [{"role": "user", "content": prompt}], a, b, None if label is None else float(label),
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


def pool_of(world: World, one_order_on_purpose: bool = False) -> JudgedPool:
    """The judged pool as a version sees it: every pair with the verdicts it has so far (in the warehouse's order:
    pair, order, sample). `one_order_on_purpose`: the strategy that judged it stops at one order on purpose
    (`adaptive`, `certify`), as its judge run records."""
    if world.base is None:  # the texts' columns once: only the verdicts change between rounds
        object.__setattr__(world, "base", JudgedPool.of(world.pairs))
    keys = sorted(world.verdicts)
    sides = [world.verdicts[k] for k in keys]
    return replace(
        world.base, v_pair=np.array([i for i, _, _ in keys], np.int64), v_ab=np.array([o == "ab" for _, o, _ in keys], bool),
        v_sample=np.array([s for _, _, s in keys], np.int64), v_margin=np.array([v.margin for v in sides], float),
        v_scores_agree=np.array([v.score_a == v.score_b or (v.score_a > v.score_b) == (v.margin > 0) for v in sides],
                                bool), one_order_on_purpose=np.full(len(world.pairs), one_order_on_purpose))


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

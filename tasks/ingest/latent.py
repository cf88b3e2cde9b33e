"""The latent truth synthetic rows share with the GenRM stand-in (SIMULATED data only).

Each response has a latent quality drawn from a hash of its text, so the stand-in (which sees only texts)
and the generator (which writes the human labels) agree on it without talking. The stand-in's verdicts
follow it with sample noise and its position and length biases; human labels follow it with their own
noise. That makes calibration testable: a judge's probability of being right can be checked against
labels and against the truth behind them.
"""

from __future__ import annotations

import hashlib
import random

import orjson

QUALITY_RANGE = 5.0  # latent qualities lie in [0, 5)
HUMAN_NOISE = 1.2  # standard deviation of a rater's misreading, in quality units
# |perceived difference| from which a rater says "slightly", "clearly", "much" better (labels 1, 2, 3)
HUMAN_STEPS = (0.35, 1.0, 2.0)


def latent_quality(text: str) -> float:
    """A response's latent quality, uniform in [0, 5): stable across runs, processes and orders."""
    digest = hashlib.blake2b(orjson.dumps(("quality", text)), digest_size=8).digest()
    return QUALITY_RANGE * int.from_bytes(digest, "big") / 2.0**64


def human_label(quality_a: float, quality_b: float, rng: random.Random, noise: float = HUMAN_NOISE) -> int:
    """A rater's preference in -3..3 from A's side (positive: A better), following the latent qualities."""
    perceived = quality_a - quality_b + rng.gauss(0.0, noise)
    strength = sum(abs(perceived) >= step for step in HUMAN_STEPS)
    return strength if perceived > 0 else -strength


def latent_direction(text_a: str, text_b: str) -> str:
    """Which answer is truly better: "a" or "b" (never equal for distinct texts, almost surely)."""
    return "a" if latent_quality(text_a) >= latent_quality(text_b) else "b"

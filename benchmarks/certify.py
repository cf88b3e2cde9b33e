"""Certified curation, measured over seeded simulated worlds (SIMULATED: the GenRM stand-in's verdict law and
synthetic raters, with the latent truth known).

    python benchmarks/certify.py                 # 240 worlds for validity, 10 per setting for efficiency
    python benchmarks/certify.py --worlds 60     # a quicker run

(a) Validity: in every world a version is certified at `--target` with risk δ = `--risk`; the agreement its kept
pairs have with a person's clear preference is computed exactly from the latent qualities (and realised once
with a fresh rater per pair). The share of worlds where it falls below the target must be at most δ: printed
with its 95% Clopper-Pearson interval, per strategy, over settings with and without position and length bias
and at three rater noise levels.
(b) Efficiency: at the same target, requests per kept pair and coverage (kept / pairs) of `certify` against
`swap` with the certified threshold and against `adaptive` with it, side by side on the same worlds, and the
oracle's coverage (the largest set whose true agreement meets the target, each pair on its truly better side).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np
from scipy.stats import beta

from tasks.curate.calibration import clear_human_directions
from tasks.curate.certification import CertificationLabels, certify_pool, next_rungs
from tasks.curate.confidence import pool_confidences
from tasks.ingest.sources import known_facts
from tasks.judge.strategies import parse_strategy
from testing.simulated_worlds import (
    CLEAR_STEP,
    clear_agreement,
    fresh_clear_agreement,
    judge,
    make_world,
    pool_of,
)

SETTINGS = [  # (name, position bias, length bias, rater noise)
    ("unbiased judge, rater noise 1.2", 0.0, 0.0, 1.2),
    ("position bias 0.3", 0.3, 0.0, 1.2),
    ("position 0.3 + length bias 1.0", 0.3, 1.0, 1.2),
    ("unbiased judge, rater noise 0.8", 0.0, 0.0, 0.8),
    ("position bias 0.3, rater noise 0.8", 0.3, 0.0, 0.8),
    ("position 0.3 + length 1.0, rater noise 1.6", 0.3, 1.0, 1.6),
]
STRATEGIES = ("certify", "swap", "adaptive")


def confidences(pool):
    return pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)


def labels_of(pool) -> CertificationLabels:
    direction = clear_human_directions(pool.source, pool.human_label, pool.both_bad, known_facts())
    return CertificationLabels(direction, direction, "source", 0.5)


def judge_world(world, strategy: str, target: float, risk: float) -> None:
    """Judge every pair as the strategy would: `certify` in rounds (the product's own escalation rule),
    `adaptive` by its borderline rule, `swap` both orders."""
    s = parse_strategy(strategy)
    n = len(world.pairs)
    if strategy == "certify":
        ladder = s.ladder()
        for i in range(n):
            for order, sample in ladder[0]:
                judge(world, i, order, sample)
        for _ in range(2 * len(ladder)):  # rounds, until no pair climbs
            pool = pool_of(world)
            rungs, _ = next_rungs(pool, confidences(pool), labels_of(pool), target, risk, np.ones(n, bool), ladder)
            if not (rungs >= 0).any():
                break
            for i in np.flatnonzero(rungs >= 0):
                for order, sample in ladder[rungs[i]]:
                    judge(world, i, order, sample)
        return
    for i in range(n):
        for order, sample in s.initial():
            judge(world, i, order, sample)
        known = {(o, smp): world.verdicts[(i, o, smp)] for o, smp in s.initial()}
        for order, sample in s.follow_ups(known):
            judge(world, i, order, sample)


def oracle_coverage(world, target: float) -> float:
    """The largest share of pairs whose true agreement with a clear preference meets the target, each pair on its
    truly better side, taken from the surest down."""
    d = np.abs(world.quality_a - world.quality_b)
    s = world.human_noise
    phi = np.vectorize(lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2))))
    agree, clear = phi((d - CLEAR_STEP) / s), phi((d - CLEAR_STEP) / s) + phi((-CLEAR_STEP - d) / s)
    order = np.argsort(-(agree / clear))
    ok = np.cumsum(agree[order]) / np.cumsum(clear[order]) >= target
    return float(np.flatnonzero(ok)[-1] + 1) / len(d) if ok.any() else 0.0


def one_world(job: tuple[int, int, str, float, float, int]) -> dict:
    seed, setting, strategy, target, risk, pairs = job
    _, position, length, noise = SETTINGS[setting]
    world = make_world(seed, pairs, human_noise=noise, position_bias=position, length_bias=length)
    judge_world(world, strategy, target, risk)
    pool = pool_of(world)
    c = confidences(pool)
    certified = certify_pool(pool, c, labels_of(pool), target, risk)
    kept = certified.accepted
    exact = clear_agreement(world, c.direction, kept)
    fresh = fresh_clear_agreement(world, c.direction, kept, seed=10_000 + seed)
    return {"setting": setting, "strategy": strategy, "seed": seed, "kept": int(kept.sum()), "pairs": pairs,
            "requests": world.requests, "exact": exact, "fresh": fresh, "certified": certified.threshold is not None,
            "oracle": oracle_coverage(world, target) if strategy == "certify" else None}


def interval(k: int, n: int) -> tuple[float, float]:
    low = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return low, high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", type=int, default=240, help="worlds per strategy for validity (spread over "
                        "the settings)")
    parser.add_argument("--efficiency-worlds", type=int, default=10, help="worlds per setting for efficiency")
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--risk", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    jobs = [(seed, seed % len(SETTINGS), strategy, args.target, args.risk, args.pairs)
            for strategy in STRATEGIES for seed in range(args.worlds)]
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(one_world, jobs, chunksize=4))
    print(f"certified curation over seeded SIMULATED worlds: target {args.target:.1%}, risk {args.risk}, "
          f"{args.pairs:,} pairs a world, half of the clear labels calibrating ({time.perf_counter() - started:.0f} s)")
    print("\n(a) validity: worlds whose kept pairs agree with a clear human preference less than the target")
    for strategy in STRATEGIES:
        mine = [r for r in results if r["strategy"] == strategy]
        below = sum(r["exact"] is not None and r["exact"] < args.target for r in mine)
        fresh = sum(r["fresh"] is not None and r["fresh"] < args.target for r in mine)
        low, high = interval(below, len(mine))
        verdict = "PASS" if below / len(mine) <= args.risk else "FAIL"
        print(f"  {strategy:<9} {below:>3} of {len(mine)} worlds ({below / len(mine):.3f}, 95% interval "
              f"{low:.3f}-{high:.3f}) against delta {args.risk}: {verdict}; with one fresh rater a pair: {fresh} "
              f"({fresh / len(mine):.3f}); nothing certified in {sum(not r['certified'] for r in mine)}")
    print("\n(b) efficiency, the same worlds side by side (mean over worlds)")
    print(f"  {'setting':<44} {'strategy':<9} {'coverage':>8} {'requests/kept':>13} {'agreement':>9}  oracle")
    summary = {}
    for setting, (name, *_rest) in enumerate(SETTINGS):
        for strategy in STRATEGIES:
            mine = [r for r in results if r["setting"] == setting and r["strategy"] == strategy]
            mine = mine[:args.efficiency_worlds]
            coverage = np.mean([r["kept"] / r["pairs"] for r in mine])
            per_kept = sum(r["requests"] for r in mine) / max(sum(r["kept"] for r in mine), 1)
            agreement = np.nanmean([r["exact"] if r["exact"] is not None else np.nan for r in mine])
            summary[(setting, strategy)] = (coverage, per_kept)
            oracle = np.mean([r2["oracle"] for r2 in results if r2["setting"] == setting
                              and r2["strategy"] == "certify"][:args.efficiency_worlds])
            print(f"  {name:<44} {strategy:<9} {coverage:>8.3f} {per_kept:>13.3f} {agreement:>9.4f}  "
                  f"{oracle:.3f}" if strategy == "certify" else
                  f"  {'':<44} {strategy:<9} {coverage:>8.3f} {per_kept:>13.3f} {agreement:>9.4f}")
    ratios = [summary[(s, "certify")][1] / summary[(s, "swap")][1] for s in range(len(SETTINGS))]
    print(f"\ncertify's requests per kept pair against swap's: {', '.join(f'{r:.3f}x' for r in ratios)} "
          f"(mean {np.mean(ratios):.3f}x)")


if __name__ == "__main__":
    main()

"""The judge ladder against the GenRM alone, measured over seeded simulated worlds (SIMULATED: the GenRM
stand-in's verdict law, the reward-model stand-in's scoring law and synthetic raters, with the latent truth known).

    python benchmarks/ladder.py                                   # 200 worlds a setting, 20 compared, one CLI run
    python benchmarks/ladder.py --worlds 10 --compare 4 --pairs 1000 --cli-runs 0   # a quick look

Every world is `testing.simulated_worlds.make_world`'s, curated as the CLI curates it at one certified target
(`certify_version` as a first attempt). Three ways of judging it:

- `swap`: the GenRM in both orders of every pair;
- `certify`: the GenRM in rounds (`benchmarks/certify.py`'s `judge_world`, the rounds' own rule);
- `ladder`: the reward model scores every pair (the reward-model stand-in's `score_for`, in process: the law the
  stand-in serves over HTTP), then the GenRM in rounds, only where the rounds' rule (`round_plan`, on the pool with
  the reward model's margins, `tasks.curate.ladder.with_reward_model`) sends a pair up.

(a) Efficiency, per setting, over the first `--compare` worlds where all three certified: GPU-seconds per kept pair
(GenRM requests x its GPU-seconds a request, reward-model requests x the GenRM's / the cost ratio), as ratios to
`swap`'s at GenRM-to-reward-model cost ratios of 10x, 30x (the default, docs/judge-ladder.md) and 100x; requests
per pair per judge; coverage (kept / pairs) of each and the oracle's (the largest set whose true agreement meets
the target, each pair on its truly better side). The target: in the default world the ladder at most 0.3x
`swap`'s GPU-seconds per kept pair at no less than 0.9x its coverage.
(b) Validity, per setting, over `--worlds` worlds judged by the ladder: the share of all worlds whose certified
kept pairs truly agree with a person's clear preference below the target (computed exactly from the latent
qualities), with its 95% Clopper-Pearson interval. The guarantee: P(certified and below) <= delta.
(c) CLI runs (`--cli-runs N` a setting): the setting's rows as files of a declared source, `curate ingest`,
`curate judge --strategy ladder --rm-endpoint` against both stand-ins with the setting's laws, `curate
build-version --target-agreement`; the kept rows' agreement computed from their texts, the GPU-seconds each judge
measured (the stand-ins' SIMULATED latencies on the declared GPUs).
"""

from __future__ import annotations

import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from certify import (
    FACTS,
    chosen_settings,
    confidences,
    ingested,
    interval,
    judge_in_rounds,
    judge_world,
    oracle_coverage,
    policy_of,
    truly_agree,
    world_parser,
)

from tasks.curate.ladder import with_reward_model
from tasks.curate.policy import make_policy
from tasks.ingest.latent import latent_quality
from tasks.judge.strategies import parse_strategy
from tasks.review.certification import certify_version
from tasks.review.overrides import PoolReviews
from testing.reward_model_standin import RewardStandinConfig, score_for, weak
from testing.simulated_worlds import clear_agreement, make_world, pool_of

# The GenRM's GPU-seconds a request, the planning figure docs/judge-ladder.md derives: one both-order judging of
# 1M pairs is about 1,100 server-hours of 8 GPUs, that is 1,100 x 3,600 x 8 / 2,000,000 GPU-seconds a request.
GENRM_GPU_SECONDS = 1_100 * 3_600 * 8 / 2_000_000
COST_RATIOS = (10.0, 30.0, 100.0)  # GenRM request : reward-model request (one pair, both answers)
DEFAULT_RATIO = 30.0
WEAK_DOMAIN = "rm-weak"  # the domain a setting names for the prompts the reward model is bad at
STRATEGIES = ("swap", "certify", "ladder")


@dataclass(frozen=True)
class Setting:
    name: str
    rm_noise: float = 0.6  # the reward model's score noise (quality units): the stand-in's default
    rm_length: float = 0.0  # its length bias (quality units per unit of log answer length)
    weak_share: float = 0.25  # the share of prompts of the domain it is bad at (the stand-in's default)
    weak_signal: float = 0.15  # how much of the truth it follows there (the stand-in's default)
    named: bool = False  # the pairs of that domain carry its name (`WEAK_DOMAIN`) as their domain
    position: float = 0.0  # the GenRM's position bias
    length: float = 0.0  # the GenRM's length bias
    noise: float = 1.2  # the raters' noise
    labelled: float = 1.0  # the share of pairs with a label (the rest unlabelled, of the same source)
    other: float = 0.0  # the share from an unlabelled source of another kind (`simulated_worlds.OTHER_SOURCE`)

    @property
    def rm(self) -> RewardStandinConfig:
        return RewardStandinConfig(noise=self.rm_noise, length_bias=self.rm_length, weak_share=self.weak_share,
                                   weak_signal=self.weak_signal)


SETTINGS = [
    Setting("default: both stand-ins' defaults"),
    Setting("RM blind on a named domain (30%)", weak_share=0.3, weak_signal=0.0, named=True),
    Setting("RM strong length bias 1.0", rm_length=1.0),
    Setting("RM noisy (1.2) + GenRM position 0.3", rm_noise=1.2, position=0.3),
]


def world_of(seed: int, pairs: int, s: Setting, natural: bool = False):
    world = make_world(seed, pairs, human_noise=s.noise, position_bias=s.position, length_bias=s.length,
                       labelled_share=s.labelled, other_share=s.other, natural=natural)
    if s.named:  # the reward model's weak prompts as a domain of their own, as a source's domain column names it
        for i, p in enumerate(world.pairs):
            if weak(p.history[-1]["content"], s.rm):
                world.pairs[i] = replace(p, domain=WEAK_DOMAIN)
    return world


def rm_margins(world, config: RewardStandinConfig) -> np.ndarray:
    """The reward-model stand-in's margin of every pair (its scoring law, in process): score(A) - score(B)."""
    return np.array([score_for(p.history[-1]["content"], p.response_a, config)
                     - score_for(p.history[-1]["content"], p.response_b, config) for p in world.pairs], float)


def ladder_pool(world, margins: np.ndarray):
    pool = replace(pool_of(world, one_order_on_purpose=True), rm_margin=margins)
    return pool, with_reward_model(pool, confidences(pool))


def judge_ladder(world, margins: np.ndarray, policy) -> int:
    """The ladder's rounds after the reward model's rung (every pair scored): the GenRM's rungs as the rounds' own
    rule decides them, on the pool with the reward model's margins. Returns the GenRM's dispatches."""
    return judge_in_rounds(world, parse_strategy("ladder").ladder(), policy, lambda: ladder_pool(world, margins))


def one_world(job: tuple[int, int, str, float, float, int]) -> dict:
    seed, setting, strategy, target, risk, pairs = job
    s = SETTINGS[setting]
    world = world_of(seed, pairs, s)
    policy = make_policy(policy_of(target, risk))
    if strategy == "ladder":
        margins = rm_margins(world, s.rm)
        dispatches = judge_ladder(world, margins, policy)
        pool, c = ladder_pool(world, margins)
    else:
        dispatches = judge_world(world, strategy, policy)
        pool = pool_of(world, one_order_on_purpose=strategy != "swap")
        c = confidences(pool)
    certified, _, _ = certify_version(pool, c, PoolReviews.none(len(pool)), policy, FACTS)
    kept = certified.accepted
    return {"setting": setting, "strategy": strategy, "seed": seed, "kept": int(kept.sum()), "pairs": pairs,
            "genrm": world.requests, "rm": pairs if strategy == "ladder" else 0, "dispatches": dispatches,
            "exact": clear_agreement(world, c.direction, kept), "certified": bool(certified.certified),
            "oracle": oracle_coverage(world, target) if strategy == "ladder" else None}


def gpu_seconds(r: dict, ratio: float) -> float:
    return GENRM_GPU_SECONDS * (r["genrm"] + r["rm"] / ratio)


def cli_run(setting: int, seed: int, target: float, risk: float, pairs: int) -> dict:
    """One setting's world through the CLI: ingest, `judge --strategy ladder` against both stand-ins with the
    setting's laws, `build-version --target-agreement`."""
    from cli_runs import curate

    from testing.genrm_standin import StandinConfig, StandinProcess
    from testing.reward_model_standin import RewardStandinProcess
    from warehouse.store import Warehouse

    s = SETTINGS[setting]
    world = world_of(seed, pairs, s, natural=True)
    with tempfile.TemporaryDirectory(prefix="ladder-cli-") as tmp:
        work = Path(tmp)
        env, policy, warehouse = ingested(world, work, target, risk)
        with (StandinProcess(StandinConfig(capacity=64, latency_mean=0.002, position_bias=s.position,
                                           length_bias=s.length)) as genrm,
              RewardStandinProcess(replace(s.rm, capacity=256)) as rm):
            judged = curate("judge", "--endpoint", genrm.url, "--rm-endpoint", rm.url, "--strategy", "ladder",
                            "--policy", str(policy), "--warehouse", warehouse, env=env)
        by_judge = judged["cost"]["by_judge"]
        out = {"setting": setting, "pairs": pairs, "genrm": by_judge.get("genrm", {}).get("requests", 0),
               "rm": by_judge.get("reward_model", {}).get("requests", 0), "gpu_seconds": judged["cost"]["gpu_seconds"],
               "by_judge": {k: v["gpu_seconds"] for k, v in by_judge.items()}, "kept": 0, "agreement": None}
        try:
            version = curate("build-version", "bench", "--policy", str(policy), "--warehouse", warehouse, env=env)
        except SystemExit as refused:  # nothing certified: exit 2, nothing written
            if "no selection certifies" not in str(refused):
                raise
            return out
        with Warehouse(Path(warehouse), read_only=True) as wh:
            rows = wh.versions.version_rows("bench", version["version"])
    d = np.array([latent_quality(r["chosen"]) - latent_quality(r["rejected"]) for r in rows])
    agree, clear = truly_agree(d, s.noise)
    out.update(kept=len(rows), agreement=float(agree.sum() / clear.sum()) if len(rows) else None,
               per_kept=version["stats"]["cost"]["gpu_seconds_per_kept_pair"])
    return out


def efficiency(at: dict, setting: int, compare: int, worlds: int, pairs: int) -> None:
    paired = [w for w in range(worlds) if all(at[(setting, s, w)]["certified"] and at[(setting, s, w)]["kept"]
                                              for s in STRATEGIES)][:compare]
    name = SETTINGS[setting].name
    if not paired:
        print(f"  {name}: no world where all three certified")
        return
    mine = {s: [at[(setting, s, w)] for w in paired] for s in STRATEGIES}
    kept = {s: sum(r["kept"] for r in mine[s]) for s in STRATEGIES}
    coverage = {s: kept[s] / (pairs * len(paired)) for s in STRATEGIES}
    oracle = float(np.mean([r["oracle"] for r in mine["ladder"]]))
    genrm = {s: sum(r["genrm"] for r in mine[s]) / (pairs * len(paired)) for s in STRATEGIES}
    print(f"  {name} ({len(paired)} worlds)")
    print(f"    {'':<8} {'GenRM req/pair':>14} {'RM req/pair':>11} {'coverage':>8} {'/swap':>6} {'/oracle':>7}  "
          + "  ".join(f"{'GPU-s/kept @' + format(x, 'g') + 'x':>16} {'/swap':>6}" for x in COST_RATIOS))
    for s in STRATEGIES:
        per_kept = [sum(gpu_seconds(r, x) for r in mine[s]) / kept[s] for x in COST_RATIOS]
        swap = [sum(gpu_seconds(r, x) for r in mine["swap"]) / kept["swap"] for x in COST_RATIOS]
        rm = sum(r["rm"] for r in mine[s]) / (pairs * len(paired))
        print(f"    {s:<8} {genrm[s]:>14.3f} {rm:>11.3f} {coverage[s]:>8.3f} {coverage[s] / coverage['swap']:>6.3f} "
              f"{coverage[s] / oracle:>7.3f}  " + "  ".join(f"{p:>16.3f} {p / q:>6.3f}" for p, q in zip(per_kept, swap)))
    print(f"    oracle coverage {oracle:.3f}; the GenRM's dispatches a world (each waits for its slowest request): "
          + ", ".join(f"{s} {np.mean([r['dispatches'] for r in mine[s]]):.2f} (at most "
                      f"{max(r['dispatches'] for r in mine[s])})" for s in STRATEGIES))
    if setting == 0:
        for x in COST_RATIOS:
            ratio = (sum(gpu_seconds(r, x) for r in mine["ladder"]) / kept["ladder"]) / (
                sum(gpu_seconds(r, x) for r in mine["swap"]) / kept["swap"])
            cover = coverage["ladder"] / coverage["swap"]
            verdict = "PASS" if ratio <= 0.3 and cover >= 0.9 else "FAIL"
            print(f"    the bar at {x:g}x: GPU-seconds per kept pair {ratio:.3f}x swap's (<= 0.3), coverage "
                  f"{cover:.3f}x swap's (>= 0.9): {verdict}")


def main() -> None:
    parser = world_parser(__doc__, 200, "worlds per setting judged by the ladder (validity)", 0.9, 1200)
    parser.add_argument("--compare", type=int, default=20, help="worlds per setting judged all three ways")
    args = parser.parse_args()
    chosen = chosen_settings(parser, args, len(SETTINGS))
    started = time.perf_counter()
    jobs = [(seed, setting, "ladder", args.target, args.risk, args.pairs)
            for setting in chosen for seed in range(args.worlds)]
    jobs += [(seed, setting, strategy, args.target, args.risk, args.pairs)
             for setting in chosen for seed in range(args.compare) for strategy in ("swap", "certify")]
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(one_world, jobs, chunksize=1))
    print(f"the judge ladder over seeded SIMULATED worlds: target {args.target:.1%}, risk {args.risk}, "
          f"{args.pairs:,} pairs a world, {args.worlds} worlds a setting (ladder), {args.compare} compared "
          f"({time.perf_counter() - started:.0f} s); the GenRM's GPU-seconds a request {GENRM_GPU_SECONDS:.2f} "
          f"(planning figure), the reward model's that / the cost ratio")
    at = {(r["setting"], r["strategy"], r["seed"]): r for r in results}

    if args.compare and args.worlds:
        print("\n(a) efficiency at the same certified target, over the compared worlds where all three certified")
    for setting in chosen if args.compare and args.worlds else []:
        efficiency(at, setting, args.compare, min(args.compare, args.worlds), args.pairs)

    if args.worlds:
        print("\n(b) validity of the ladder: worlds whose certified kept pairs truly agree below the target, of all "
              "worlds")
    for setting in chosen if args.worlds else []:
        mine = [at[(setting, "ladder", w)] for w in range(args.worlds)]
        certified = sum(r["certified"] and r["kept"] > 0 for r in mine)
        below = sum(r["certified"] and r["kept"] > 0 and r["exact"] < args.target for r in mine)
        low, high = interval(below, len(mine))
        exact = [r["exact"] for r in mine if r["certified"] and r["kept"]]
        print(f"  {SETTINGS[setting].name:<40} certified {certified:>3}/{len(mine)}, below {below:>2}/{len(mine)} "
              f"= {below / len(mine):.3f} (95% CI {low:.3f}-{high:.3f}; delta {args.risk}: "
              f"{'PASS' if below / len(mine) <= args.risk else 'FAIL'}); kept pairs' true "
              f"agreement: min {min(exact) if exact else float('nan'):.4f}, mean "
              f"{float(np.mean(exact)) if exact else float('nan'):.4f}")

    if args.cli_runs:
        print(f"\n(c) CLI runs: curate ingest / judge --strategy ladder / build-version, {args.cli_pairs:,} pairs "
              "(stand-ins: GPU-seconds from SIMULATED latencies)")
        for setting in chosen:
            for k in range(args.cli_runs):
                r = cli_run(setting, 60_000 + 100 * setting + k, args.target, args.risk, args.cli_pairs)
                said = (f"kept {r['kept']:,} ({r['kept'] / r['pairs']:.3f}), agreement {r['agreement']:.4f} "
                        f"({'below' if r['agreement'] < args.target else 'meets'} the target), "
                        f"{r['per_kept']} GPU-s a kept pair" if r["kept"] else "nothing certified")
                print(f"  {SETTINGS[setting].name:<40} GenRM requests {r['genrm']:,} ({r['genrm'] / r['pairs']:.3f} a "
                      f"pair), RM requests {r['rm']:,}; measured GPU-s {r['gpu_seconds']} {r['by_judge']}; {said}",
                      flush=True)


if __name__ == "__main__":
    main()

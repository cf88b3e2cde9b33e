"""Certified curation, measured over seeded simulated worlds (SIMULATED: the GenRM stand-in's verdict law and
synthetic raters, with the latent truth known).

    python benchmarks/certify.py                          # 40 worlds a setting, one CLI run a setting
    python benchmarks/certify.py --worlds 6 --pairs 1000 --cli-runs 0 --workers 1   # a quick look

Every world is curated as the CLI curates it: the labels from `certification_labels` (each source with people's
labels its own population, the risk split over them, pairs no label covers dropped), the certification from
`certify_version` as a first attempt over the policy's label-free filters (`certifiable`), and `certify` judged in rounds by the
rounds' own rule (`tasks.review.rounds.round_plan`).

(a) Validity, per setting: the share of worlds whose build certified and kept pairs (all of them) that agree with a
person's clear preference less than the target (computed exactly from the latent qualities), with its 95%
Clopper-Pearson interval; the guarantee is that it stays within δ = `--risk`. Beside it, the same builds as a share
of the certified builds alone, which no test bounds where certification is rare (see docs/certification.md).
(b) Efficiency, per setting, over the worlds where all three strategies certified: requests per kept pair of
`certify` against `swap` and `adaptive` (each certified the same way), coverage (kept / pairs) of each and the
oracle's (the largest set whose true agreement meets the target, each pair on its truly better side), and the most
requests `certify` sent in a world against `swap`'s.
Two settings measure labels that copy the judge (a poisoning of the calibration): 30% of the labelled pairs move to
a source `copycat` whose labels, declared as people's, are the judge's own first verdict. Before: the policy trusts
them (`judge_like_labels = "trust"`), so its pairs calibrate themselves; after: the default (`"exclude"`) leaves
them out of calibration, and its pairs are not covered.
(c) CLI runs (`--cli-runs N` a setting): the setting's rows written as files of declared sources (the copied-label
settings' `copycat` declared with `human_labels = true`, its labels the stand-in's own first verdicts), then `curate
ingest`, `curate judge --strategy certify` against the stand-in with the setting's biases and `curate
build-version --target-agreement`, as a user runs them; the kept rows' agreement computed from their texts.
(d) Where `certify`'s coverage goes (`--gap N`: N worlds a setting, 0 by default): each world judged both ways,
then `swap`'s pool certified again with the second order removed where `certify` stopped a pair at one order, from
the decisive one-order pairs alone, and from the others alone.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np
from scipy.stats import beta

from common.errors import UserError
from common.settings import get_settings
from tasks.curate.certification import decisive_verdict, first_orders, position_shift
from tasks.curate.confidence import pool_confidences
from tasks.curate.policy import make_policy
from tasks.ingest.latent import latent_quality
from tasks.ingest.source_facts import SourceFacts
from tasks.ingest.sources import known_facts
from tasks.judge.kinds import NO_ORDER
from tasks.judge.strategies import ORDERS, as_shown, first_order, oriented, parse_strategy
from tasks.review.certification import certification_labels, certify_version
from tasks.review.overrides import PoolReviews
from tasks.review.rounds import least_round, round_plan
from testing.simulated_worlds import (
    CLEAR_STEP,
    OTHER_SOURCE,
    clear_agreement,
    judge,
    make_world,
    pool_of,
)


@dataclass(frozen=True)
class Setting:
    name: str
    position: float = 0.0  # the judge's position bias (ranking units toward the answer shown first)
    length: float = 0.0  # its length bias (ranking units per unit of log length ratio)
    noise: float = 1.2  # the raters' noise (quality units)
    labelled: float = 1.0  # the share of the labelled source's pairs that carry a label
    other: float = 0.0  # the share of pairs from an unlabelled source of another kind (4-16x length ratios)
    copy: float = 0.0  # the share of labelled pairs moved to a source whose labels copy the judge's first verdict
    judge_like: str = "trust"  # the policy's judge_like_labels


SETTINGS = [
    Setting("unbiased judge, rater noise 1.2"),
    Setting("position bias 0.3", position=0.3),
    Setting("position 0.3 + length bias 1.0", position=0.3, length=1.0),
    Setting("unbiased judge, rater noise 0.8", noise=0.8),
    Setting("position bias 0.3, rater noise 0.8", position=0.3, noise=0.8),
    Setting("position 0.3 + length 1.0, rater noise 1.6", position=0.3, length=1.0, noise=1.6),
    Setting("length bias 2.0", position=0.3, length=2.0),
    Setting("strong position bias 0.6", position=0.6),
    Setting("very noisy raters (2.0)", position=0.3, noise=2.0),
    Setting("30% of pairs labelled", position=0.3, labelled=0.3),
    Setting("40% from an unlabelled long-answer source", position=0.3, length=1.0, other=0.4),
    Setting("30% of labels copy the judge, trusted (before)", position=0.3, length=1.0, copy=0.3),
    Setting("30% of labels copy the judge, excluded (after)", position=0.3, length=1.0, copy=0.3,
            judge_like="exclude"),
]
COPY_SOURCE = "copycat"  # a source whose labels, declared as people's, are the judge's own first verdict
FACTS = {**known_facts(), COPY_SOURCE: SourceFacts(COPY_SOURCE, clear_label=2.0, human_labels=True)}
STRATEGIES = ("certify", "swap", "adaptive")


def policy_of(target: float, risk: float, judge_like: str = "trust") -> dict:
    """The policy every world is built by: the defaults at the target and risk, the synthetic raters' labels
    trusted as people's (they are, by construction; with little rater noise they agree with an unbiased judge
    often enough for the judge-like check to leave them out), except in the copied-label setting's "after"."""
    return {"target_agreement": target, "risk": risk, "judge_like_labels": judge_like}


def copy_the_judge(world, share: float) -> None:
    """Move a `share` of the labelled pairs to `COPY_SOURCE`, each labelled with the judge's own first verdict
    (in the pair's first order, `first_order`, which the strategies that judge one order first ask first) as a
    strong preference: labels that copy the judge."""
    rng = random.Random(world.seed * 7919 + 1)
    for i, p in enumerate(world.pairs):
        if p.human_label is None or rng.random() >= share:
            continue
        first = first_order(False, False, len(p.response_a) > len(p.response_b))
        judge(world, i, first, 0)
        margin = world.verdicts[(i, first, 0)].margin
        world.pairs[i] = replace(p, source=COPY_SOURCE, human_label=3.0 if margin > 0 else -3.0 if margin < 0 else 0.0)


def confidences(pool):
    return pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)


def _read(pool):
    return pool, confidences(pool)


def judge_in_rounds(world, ladder, policy, read, among: np.ndarray | None = None,
                    counts: list[int] | None = None) -> int:
    """The rounds after the first (the rounds' cap, the first included): each asks the rungs the rounds' own rule
    (`round_plan`) gives the pool as `read()` returns it (the pool and its confidences); a slot with no order (a
    judge ladder's reward model, which scored every pair before the rounds) is never asked again; a round of fewer
    judgments than a run's least (`least_round`, CURATE_JUDGE_MIN_ROUND) is not sent and ends the rounds, as a
    run's. `among`: the run's pairs (bool per pair; default every pair); `counts`, if given, gets each round's
    judgments. Returns how many rounds were sent (each a dispatch)."""
    n = len(world.pairs)
    among = np.ones(n, bool) if among is None else among
    least = least_round(get_settings().judge_min_round, int(among.sum()))
    sent = 0
    for _ in range(2 * len(ladder) - 1):
        pool, c = read()
        labels = certification_labels(pool, c, PoolReviews.none(n), policy, FACTS)
        rungs = round_plan(pool, c, labels, policy, ladder, among).rungs
        firsts = first_orders(pool)  # each pair's rung in its first order, as a run asks it
        asked = [(int(i), order, sample) for i in np.flatnonzero(rungs >= 0)
                 for order, sample in oriented(ladder[rungs[i]], firsts[i])
                 if order != NO_ORDER and (int(i), order, sample) not in world.verdicts]
        if not asked or len(asked) < least:
            break
        for key in asked:
            judge(world, *key)
        sent += 1
        if counts is not None:
            counts.append(len(asked))
    return sent


def judge_world(world, strategy: str, policy) -> int:
    """Judge every pair as the strategy would: `certify` in rounds (the rounds' own rule, on the labels the CLI
    reads), `adaptive` by its borderline rule, `swap` both orders. Returns the GenRM's dispatches (one, but for
    `certify`'s later rounds)."""
    s = parse_strategy(strategy)
    n = len(world.pairs)
    if strategy == "certify":
        ladder = s.ladder()
        for i in range(n):
            for order, sample in initial_of(world, s, i, ladder[0]):
                judge(world, i, order, sample)
        return 1 + judge_in_rounds(world, ladder, policy, lambda: _read(pool_of(world, one_order_on_purpose=True)))
    for i in range(n):
        initial = initial_of(world, s, i, s.initial())
        for order, sample in initial:
            judge(world, i, order, sample)
        known = {(o, smp): world.verdicts[(i, o, smp)] for o, smp in initial}
        for order, sample in s.follow_ups(known):
            judge(world, i, order, sample)
    return 1


def initial_of(world, strategy, i: int, slots) -> list:
    """`slots` as pair `i` gets them first: in its first order where the strategy judges one order first
    (`first_order`, as the run's planner decides it: the order it already holds, else the shorter answer first)."""
    tried = [(i, order, 0) in world.verdicts for order in ORDERS]
    p = world.pairs[i]
    return as_shown(strategy, slots, *tried, len(p.response_a) > len(p.response_b))


def _phi(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(np.asarray(x, float) / math.sqrt(2.0)))


def truly_agree(d: np.ndarray, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Per pair whose chosen answer is better by `d` (latent quality): the chance a rater's label is a clear
    preference for it, and that it is clear at all."""
    agree = _phi((d - CLEAR_STEP) / noise)
    return agree, agree + _phi((-CLEAR_STEP - d) / noise)


def oracle_coverage(world, target: float) -> float:
    """The largest share of pairs whose true agreement with a clear preference meets the target, each pair on its
    truly better side, taken from the surest down."""
    agree, clear = truly_agree(np.abs(world.quality_a - world.quality_b), world.human_noise)
    order = np.argsort(-(agree / clear))
    ok = np.cumsum(agree[order]) / np.cumsum(clear[order]) >= target
    return float(np.flatnonzero(ok)[-1] + 1) / len(agree) if ok.any() else 0.0


def setting_world(seed: int, setting: int, pairs: int, natural: bool = False):
    """The seeded world of a setting, its copied labels (if it has them) in place, not yet judged."""
    s = SETTINGS[setting]
    world = make_world(seed, pairs, human_noise=s.noise, position_bias=s.position, length_bias=s.length,
                       labelled_share=s.labelled, other_share=s.other, natural=natural)
    if s.copy:
        copy_the_judge(world, s.copy)  # the stand-in's verdict law: what it gives over HTTP too
    return world


def judged_pool(seed: int, setting: int, strategy: str, pairs: int, policy):
    """A setting's world judged as `strategy` would judge it, and its pool."""
    world = setting_world(seed, setting, pairs)
    judge_world(world, strategy, policy)
    return world, pool_of(world, one_order_on_purpose=strategy != "swap")


def first_attempt(pool, c, policy):
    """The pool's certification as `curate build-version` makes it, a first attempt on its labels."""
    certified, _, _ = certify_version(pool, c, PoolReviews.none(len(pool)), policy, FACTS)
    return certified


def one_world(job: tuple[int, int, str, float, float, int]) -> dict:
    seed, setting, strategy, target, risk, pairs = job
    policy = make_policy(policy_of(target, risk, SETTINGS[setting].judge_like))
    world, pool = judged_pool(seed, setting, strategy, pairs, policy)
    c = confidences(pool)
    certified = first_attempt(pool, c, policy)
    kept = certified.accepted
    return {"setting": setting, "strategy": strategy, "seed": seed, "kept": int(kept.sum()), "pairs": pairs,
            "requests": world.requests, "exact": clear_agreement(world, c.direction, kept),
            "certified": certified.certified, "oracle": oracle_coverage(world, target) if strategy == "certify" else None}


def _without_second_order(pool, drop: np.ndarray):
    """`pool` with the ba verdicts of the pairs `drop` removed, as a strategy that stops at one order leaves them."""
    keep = ~(drop[pool.v_pair] & ~pool.v_ab)
    return replace(pool, one_order_on_purpose=np.ones(len(pool), bool),
                   **{name: getattr(pool, name)[keep] for name in pool.__slots__ if name.startswith("v_")})


def coverage_gap(job: tuple[int, int, float, float, int]) -> dict:
    """One world judged by `certify` and by `swap`; what `swap`'s pool keeps with the second order removed where
    `certify` held one, from the decisive one-order pairs alone (|margin| > 1 less the judge's position shift, scores
    agreeing, as the rounds read it), and from the rest."""
    seed, setting, target, risk, pairs = job
    policy = make_policy(policy_of(target, risk, SETTINGS[setting].judge_like))
    _, mine = judged_pool(seed, setting, "certify", pairs, policy)
    _, swap = judged_pool(seed, setting, "swap", pairs, policy)

    def kept(pool) -> int:
        return int(first_attempt(pool, confidences(pool), policy).accepted.sum())

    c = confidences(mine)
    one = c.verdicts == 1
    decisive = decisive_verdict(c, one, position_shift(c))  # where the rounds stop a pair at its one order
    return {"setting": setting, "certify": kept(mine), "swap": kept(swap),
            "one": kept(_without_second_order(swap, one)), "decisive": kept(_without_second_order(swap, decisive)),
            "rest": kept(_without_second_order(swap, one & ~decisive))}


def interval(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    low = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return low, high


def write_rows(world, folder: Path) -> tuple[Path, list[str]]:
    """The world's pairs as the files of declared pairwise sources (`sim-pairs`: the labelled kind, a rater's
    label of 2 or more a preference, below that a tie, no label null; `sim-long`: the other kind, unlabelled;
    `copycat`: labels that copy the judge, declared as people's) and the sources file declaring them. Returns the
    sources file and the sources with rows."""
    files: dict[str, list[dict]] = {"sim-pairs": [], OTHER_SOURCE: [], COPY_SOURCE: []}
    for p in world.pairs:
        label = p.human_label
        preference = None if label is None else "a" if label >= 2 else "b" if label <= -2 else "tie"
        name = p.source if p.source in (OTHER_SOURCE, COPY_SOURCE) else "sim-pairs"
        files[name].append({"id": p.pair_id, "prompt": p.history[-1]["content"], "response_a": p.response_a,
                            "response_b": p.response_b, "preference": preference})
    declared = []
    for name, rows in files.items():
        if not rows:
            continue
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        declared.append(f'[sources.{name}]\npath = "{name}.jsonl"\nformat = "pairwise"\n'
                        'label = { a = "a", b = "b", tie = ["tie"] }\nlicense = "internal"\ndomain = "general"\n'
                        f'language = "en"\nhuman_labels = {"true" if name in ("sim-pairs", COPY_SOURCE) else "false"}\n')
    sources = folder / "sources.toml"
    sources.write_text("\n".join(declared))
    return sources, [n for n, rows in files.items() if rows]


def ingested(world, work: Path, target: float, risk: float,
             judge_like: str = "trust") -> tuple[dict[str, str], Path, str]:
    """The world's rows ingested through the CLI into a warehouse in `work`, and the policy file of the target:
    (the environment to run `curate` in, the policy file, the warehouse)."""
    from cli_runs import bench_env, curate

    env = bench_env(work, "CURATE_JUDGE_STRATEGY", "CURATE_SOURCES_FILE")
    sources, names = write_rows(world, work)
    policy = work / "policy.toml"
    policy.write_text("[policy]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in policy_of(target, risk, judge_like).items()))
    warehouse = str(work / "w.duckdb")
    for name in names:
        curate("ingest", "--source", name, "--sources-file", str(sources), "--warehouse", warehouse, env=env)
    return env, policy, warehouse


def cli_run(setting: int, seed: int, target: float, risk: float, pairs: int) -> dict:
    """One setting's world through the CLI: ingest, `judge --strategy certify` against the stand-in with the
    setting's biases, `build-version --target-agreement`."""
    from cli_runs import curate

    from testing.genrm_standin import StandinConfig, StandinProcess
    from warehouse.store import Warehouse

    s = SETTINGS[setting]
    world = setting_world(seed, setting, pairs, natural=True)
    with tempfile.TemporaryDirectory(prefix="certify-cli-") as tmp:
        work = Path(tmp)
        env, policy, warehouse = ingested(world, work, target, risk, s.judge_like)
        config = StandinConfig(capacity=64, latency_mean=0.002, position_bias=s.position, length_bias=s.length)
        with StandinProcess(config) as server:
            judged = curate("judge", "--endpoint", server.url, "--strategy", "certify", "--policy", str(policy),
                            "--warehouse", warehouse, env=env)
        try:
            version = curate("build-version", "bench", "--policy", str(policy), "--warehouse", warehouse, env=env)
        except SystemExit as refused:  # nothing certified: exit 2, nothing written
            if "no selection certifies" not in str(refused):
                raise
            return {"setting": setting, "requests": judged["requests"], "pairs": pairs, "kept": 0,
                    "agreement": None, "certified": False, "ended": judged.get("rounds_ended"), "excluded": None}
        with Warehouse(Path(warehouse), read_only=True) as wh:
            rows = wh.versions.version_rows("bench", version["version"])
    d = np.array([latent_quality(r["chosen"]) - latent_quality(r["rejected"]) for r in rows])
    agree, clear = truly_agree(d, s.noise)
    return {"setting": setting, "requests": judged["requests"], "pairs": pairs, "kept": len(rows),
            "agreement": float(agree.sum() / clear.sum()) if len(rows) else None, "certified": True,
            "ended": judged.get("rounds_ended"),
            "excluded": sorted(version["stats"]["certification"].get("excluded_labels") or {})}


def world_parser(doc: str, worlds: int, worlds_help: str, target: float, cli_pairs: int) -> argparse.ArgumentParser:
    """A world benchmark's command line (this one's and `benchmarks/ladder.py`'s)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", type=int, default=worlds, help=worlds_help)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--target", type=float, default=target)
    parser.add_argument("--risk", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cli-runs", type=int, default=1, help="CLI runs per setting (0: none)")
    parser.add_argument("--cli-pairs", type=int, default=cli_pairs)
    parser.add_argument("--settings", type=str, default=None, help="comma-separated setting numbers (default all)")
    return parser


def chosen_settings(parser: argparse.ArgumentParser, args: argparse.Namespace, settings: int) -> list[int]:
    """The settings `--settings` names, of `settings` in all (default: every one). A count or rate out of range,
    or a setting that is not one, is refused as argparse refuses: one line naming the flag, exit 2."""
    least = {"pairs": 1, "workers": 1, "worlds": 0, "cli_runs": 0, "cli_pairs": 1, "gap": 0, "compare": 0}
    for name, low in least.items():
        value = getattr(args, name, None)
        if value is not None and value < low:
            parser.error(f"--{name.replace('_', '-')} {value}: at least {low}")
    for name in ("target", "risk"):
        if not 0.0 < getattr(args, name) < 1.0:
            parser.error(f"--{name} {getattr(args, name)}: between 0 and 1")
    if args.settings is None:
        return list(range(settings))
    chosen = [int(x) if x.strip().isdigit() else -1 for x in args.settings.split(",")]
    if any(not 0 <= x < settings for x in chosen):
        parser.error(f"--settings {args.settings}: comma-separated setting numbers from 0 to {settings - 1}")
    return chosen


def print_worlds(args: argparse.Namespace, chosen: list[int], at: dict) -> None:
    """Sections (a) and (b) over the in-process worlds, `at` each result by (setting, strategy, seed)."""
    print("\n(a) validity: builds whose kept pairs (all of them) truly agree less than the target, of all worlds (the "
          "guarantee: at most delta, with its interval), and of the certified builds alone")
    print(f"  {'setting':<44} " + "  ".join(f"{s:<40}" for s in STRATEGIES))
    worst = {s: 0.0 for s in STRATEGIES}
    for setting in chosen:
        cells = []
        for strategy in STRATEGIES:
            mine = [at[(setting, strategy, w)] for w in range(args.worlds)]
            built = [r for r in mine if r["certified"] and r["kept"]]
            below = sum(r["exact"] < args.target for r in built)
            low, high = interval(below, len(mine))
            worst[strategy] = max(worst[strategy], below / len(mine))
            cells.append(f"{below:>2}/{len(mine):<3} {below / len(mine):.3f} ({low:.3f}-{high:.3f}); "
                         f"{below}/{len(built)} certified")
        print(f"  {SETTINGS[setting].name:<44} " + "  ".join(f"{c:<40}" for c in cells))

    print("\n(b) efficiency over the worlds where all three certified: requests per kept pair and coverage")
    print(f"  {'setting':<44} {'worlds':>6} {'req/kept c':>10} {'s':>6} {'a':>6} {'c/s':>6} {'c/a':>6}  "
          f"{'coverage c':>10} {'s':>6} {'a':>6} {'oracle':>6}  {'max c/s':>7}")
    ratios_s, ratios_a, cover = [], [], []
    most = 0.0
    for setting in chosen:
        most = max([most] + [at[(setting, "certify", w)]["requests"] / at[(setting, "swap", w)]["requests"]
                             for w in range(args.worlds)])
        paired = [w for w in range(args.worlds) if all(at[(setting, s, w)]["certified"] and at[(setting, s, w)]["kept"]
                                                        for s in STRATEGIES)]
        if not paired:
            print(f"  {SETTINGS[setting].name:<44} {0:>6}  (no world where all three certified)")
            continue
        per_kept = {s: sum(at[(setting, s, w)]["requests"] for w in paired) /
                    sum(at[(setting, s, w)]["kept"] for w in paired) for s in STRATEGIES}
        coverage = {s: float(np.mean([at[(setting, s, w)]["kept"] / args.pairs for w in paired])) for s in STRATEGIES}
        oracle = float(np.mean([at[(setting, "certify", w)]["oracle"] for w in paired]))
        top = max(at[(setting, "certify", w)]["requests"] / at[(setting, "swap", w)]["requests"]
                  for w in range(args.worlds))
        rs, ra = per_kept["certify"] / per_kept["swap"], per_kept["certify"] / per_kept["adaptive"]
        ratios_s.append(rs)
        ratios_a.append(ra)
        cover.append((coverage["certify"], coverage["swap"], coverage["adaptive"]))
        print(f"  {SETTINGS[setting].name:<44} {len(paired):>6} {per_kept['certify']:>10.3f} {per_kept['swap']:>6.3f} "
              f"{per_kept['adaptive']:>6.3f} {rs:>6.3f} {ra:>6.3f}  {coverage['certify']:>10.3f} "
              f"{coverage['swap']:>6.3f} {coverage['adaptive']:>6.3f} {oracle:>6.3f}  {top:>7.3f}")
    if ratios_s:
        c, s, a = (float(np.mean(x)) for x in zip(*cover))
        print(f"\n  mean over settings: certify's requests per kept pair {np.mean(ratios_s):.3f}x swap's, "
              f"{np.mean(ratios_a):.3f}x adaptive's; coverage certify {c:.3f}, swap {s:.3f}, adaptive {a:.3f}; "
              f"most requests certify sent in a world: {most:.3f}x swap's")
    print("  worst share of worlds below the target in a setting: " + ", ".join(f"{s} {worst[s]:.3f}" for s in STRATEGIES)
          + f" (delta {args.risk})")


def main() -> None:
    parser = world_parser(__doc__, 40, "worlds per setting and strategy", 0.95, 2000)
    parser.add_argument("--gap", type=int, default=0, help="worlds a setting to say where certify's coverage goes")
    args = parser.parse_args()
    chosen = chosen_settings(parser, args, len(SETTINGS))
    started = time.perf_counter()
    jobs = [(seed, setting, strategy, args.target, args.risk, args.pairs)
            for setting in chosen for seed in range(args.worlds) for strategy in STRATEGIES]
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(one_world, jobs, chunksize=1))
    print(f"certified curation over seeded SIMULATED worlds: target {args.target:.1%}, risk {args.risk}, "
          f"{args.pairs:,} pairs a world, {args.worlds} worlds a setting and strategy "
          f"({time.perf_counter() - started:.0f} s)")
    if args.worlds:  # --worlds 0: only the coverage gap or the CLI runs
        print_worlds(args, chosen, {(r["setting"], r["strategy"], r["seed"]): r for r in results})

    if args.gap:
        print("\n(d) where certify's coverage goes: kept pairs of swap's pool with the second order removed where "
              "certify held one order, from the decisive one-order pairs alone, from the rest alone")
        jobs = [(seed, setting, args.target, args.risk, args.pairs) for setting in chosen for seed in range(args.gap)]
        with ProcessPoolExecutor(args.workers) as pool:
            gaps = list(pool.map(coverage_gap, jobs, chunksize=1))
        for setting in chosen:
            mine = [g for g in gaps if g["setting"] == setting]
            row = {k: ", ".join(f"{g[k]:,}" for g in mine) for k in ("certify", "swap", "one", "decisive", "rest")}
            print(f"  {SETTINGS[setting].name}: certify {row['certify']}; swap {row['swap']}; swap without the second "
                  f"order where certify held one {row['one']}; of the decisive ones {row['decisive']}; of the rest "
                  f"{row['rest']}")

    if args.cli_runs:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        print(f"\n(c) CLI runs: curate ingest / judge --strategy certify / build-version, {args.cli_pairs:,} pairs")
        for setting in chosen:
            for k in range(args.cli_runs):
                try:
                    r = cli_run(setting, 50_000 + 100 * setting + k, args.target, args.risk, args.cli_pairs)
                except (SystemExit, UserError) as failed:
                    print(f"  {SETTINGS[setting].name:<44} failed: {str(failed)[:300]}")
                    continue
                said = (f"kept {r['kept']:,} ({r['kept'] / r['pairs']:.3f}), agreement {r['agreement']:.4f} "
                        f"({'below' if r['agreement'] < args.target else 'meets'} the target)" if r["certified"]
                        and r["kept"] else "nothing certified")
                print(f"  {SETTINGS[setting].name:<44} requests {r['requests']:,} ({r['requests'] / (2 * r['pairs']):.3f}"
                      f" of swap's), {said}; rounds ended: {r['ended']}"
                      + (f"; labels left out of calibration: {', '.join(r['excluded']) or 'none'}"
                         if SETTINGS[setting].copy and r["excluded"] is not None else ""), flush=True)


if __name__ == "__main__":
    main()

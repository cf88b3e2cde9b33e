"""How close a ladder's estimate comes to what its run then asks of the GenRM, over many seeded simulated worlds
(SIMULATED: the GenRM stand-in's verdict law, the reward-model stand-in's scoring law and synthetic raters).

    python benchmarks/estimate_worlds.py [--worlds 40] [--first 500] [--pairs 1000] [--setting 0] [--target 0.9]
        [--labelled-share 1.0] [--other-share 0.0]

`benchmarks/estimate.py` times a few runs through the CLI; this one counts requests in process, over enough worlds
for a share with its interval. Each world (`benchmarks/ladder.py`'s setting, `--first` + `--pairs` pairs):

1. an earlier ladder run over the first pairs (the reward model scores them, then the GenRM's rounds as the rounds'
   own rule decides them);
2. the estimate's expected GenRM judgments for the pairs left, as `curate judge --estimate` reads them
   (`tasks.review.rounds.pending_shares`): before the run, and again once the reward model has scored them
   (`curate judge --reward-model-only`: the GenRM's first rung is then the rule's own decision, and only the rungs
   after it are replayed);
3. the run over the pairs left: the reward model's scores, then the GenRM's rounds as before.

Printed: per world the expected and sent GenRM judgments, and the run's judgments round by round beside the first
GenRM rung expected after the reward model's (the share of worlds where the two are equal); for each estimate the
share of worlds whose expected figure lies within ±25% of what was sent, with its 95% Clopper-Pearson interval, and
the ratio's quantiles; the same for the baseline in the same process, the earlier run's own GenRM judgments a pair
times the pairs left (what an estimate without the replay would say). PASS when every world's expected figure lies
within ±25% (what the judge ladder's issue asks of the estimate). The judgments only: a run's GPU-seconds also
spread with its dispatches and the server's timing, which `benchmarks/estimate.py` measures.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from certify import FACTS, interval, judge_in_rounds
from ladder import SETTINGS, ladder_pool, rm_margins, world_of

from common.settings import get_settings
from tasks.curate.policy import make_policy
from tasks.judge.strategies import parse_strategy
from tasks.review.certification import certification_labels
from tasks.review.overrides import PoolReviews
from tasks.review.rounds import judgments_a_pair, least_round, pending_shares

WITHIN = 0.25


def one_world(job: tuple[int, int, int, int, float, float, float]) -> dict:
    seed, setting, first, pending, target, labelled, other = job
    s = replace(SETTINGS[setting], labelled=labelled, other=other)
    n = first + pending
    world = world_of(seed, n, s)
    margins = rm_margins(world, s.rm)
    policy = make_policy({"target_agreement": target})
    ladder = parse_strategy("ladder").ladder()
    earlier = np.arange(n) < first
    scored = np.where(earlier, margins, np.nan)  # before the run the reward model scored the earlier pairs alone
    judge_in_rounds(world, ladder, policy, lambda: ladder_pool(world, scored), earlier)
    before = len(world.verdicts)
    least = least_round(get_settings().judge_min_round, pending)

    def expected_now(margins_now: np.ndarray) -> list[float] | None:
        """The GenRM judgments the estimate expects of the pending pairs per rung past the first, on the pool as it
        stands (`pending_shares`, what `curate judge --estimate` reads); None where it has no figure."""
        pool, c = ladder_pool(world, margins_now)
        labels = certification_labels(pool, c, PoolReviews.none(n), policy, FACTS)
        shares = pending_shares(pool, c, labels, policy, ladder, ~earlier, least)
        return None if shares is None or None in shares else [
            share * pending * judgments_a_pair(ladder[k + 1]) for k, share in enumerate(shares)]

    before_rung = expected_now(scored)
    # after the reward model's rung (`--reward-model-only`): every pending pair scored; its first GenRM rung apart
    after_rung = expected_now(margins)
    rounds: list[int] = []
    judge_in_rounds(world, ladder, policy, lambda: ladder_pool(world, margins), ~earlier, rounds)
    return {"seed": seed, "expected": None if before_rung is None else sum(before_rung),
            "sent": len(world.verdicts) - before, "baseline": before / first * pending,
            "rm_first": None if after_rung is None else sum(after_rung), "rounds": rounds,
            "first_rung": None if after_rung is None else round(after_rung[0])}


def summary(name: str, ratios: list[float]) -> str:
    r = np.array(ratios, float)
    ok = int((np.abs(r - 1.0) <= WITHIN).sum())
    low, high = interval(ok, len(r))
    q = np.quantile(r, [0.1, 0.5, 0.9]) if len(r) else [np.nan] * 3
    return (f"{name}: within ±{WITHIN:.0%} in {ok}/{len(r)} worlds = {ok / len(r) if len(r) else 0:.3f} "
            f"({low:.3f}-{high:.3f}); expected / sent 10%, 50%, 90%: {q[0]:.3f}, {q[1]:.3f}, {q[2]:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=40)
    ap.add_argument("--first", type=int, default=500, help="pairs the earlier run judged")
    ap.add_argument("--pairs", type=int, default=1000, help="pairs the run judges, estimated before it")
    ap.add_argument("--setting", type=int, default=0, help=f"benchmarks/ladder.py's setting (0-{len(SETTINGS) - 1})")
    ap.add_argument("--target", type=float, default=0.9)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=500, help="the first world's seed")
    ap.add_argument("--labelled-share", type=float, default=1.0,
                    help="the share of the setting's pairs with a label (the rest unlabelled)")
    ap.add_argument("--other-share", type=float, default=0.0,
                    help="the share of pairs from an unlabelled source of another kind (wide length gaps)")
    args = ap.parse_args()
    mixed = (f"; {args.labelled_share:.0%} of pairs labelled" if args.labelled_share < 1 else "") + (
        f"; {args.other_share:.0%} from an unlabelled source of another kind" if args.other_share else "")
    print(f"SIMULATED worlds ({SETTINGS[args.setting].name}{mixed}): {args.first} pairs judged first, then "
          f"{args.pairs}; target {args.target:.0%}; the GenRM's judgments the estimate expects against those the run "
          "sends")
    jobs = [(args.seed + k, args.setting, args.first, args.pairs, args.target, args.labelled_share, args.other_share)
            for k in range(args.worlds)]
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(one_world, jobs))
    replayed, baseline, rm_first, missing = [], [], [], 0
    for r in results:
        said = "-" if r["expected"] is None else f"{r['expected']:.0f}"
        after = "-" if r["rm_first"] is None else f"{r['rm_first']:.0f}"
        print(f"  seed {r['seed']}: expected {said}, sent {r['sent']}, baseline {r['baseline']:.0f}; "
              f"after the reward model's rung, expected {after} (its first GenRM rung {r['first_rung']}); "
              f"the run's rounds {r['rounds']}")
        if not r["sent"]:
            continue
        if r["expected"] is None:
            missing += 1  # no expected figure: a miss
            replayed.append(np.inf)
        else:
            replayed.append(r["expected"] / r["sent"])
        baseline.append(r["baseline"] / r["sent"])
        rm_first.append(np.inf if r["rm_first"] is None else r["rm_first"] / r["sent"])
    print(summary("the estimate (the replay)", replayed) + (f"; {missing} with no figure" if missing else ""))
    print(summary("baseline (the earlier run's judgments a pair)", baseline))
    print(summary("after the reward model's rung (its scores in, the GenRM's first rung decided)", rm_first))
    exact = sum(r["rounds"][:1] == [r["first_rung"]] for r in results if r["rounds"])
    print(f"after the reward model's rung, the GenRM's first rung expected exactly as the run's first round sent it: "
          f"{exact}/{sum(bool(r['rounds']) for r in results)} worlds")
    for name, ratios in (("before the run", replayed), ("after the reward model's rung", rm_first)):
        every = bool(ratios) and all(abs(r - 1.0) <= WITHIN for r in ratios)
        print(f"target, {name}: the expected judgments within ±{WITHIN:.0%} of those sent in every world: "
              f"{'PASS' if every else 'FAIL'}")


if __name__ == "__main__":
    main()

"""Does adaptive judging pay? Requests saved against `swap`, pairs kept by the default policy, and agreement
of the kept pairs with the latent truth, on a position-biased judge.

The stand-in gives every response a latent quality (a hash of its text, uniform in [0, 5)); its verdicts
follow the quality difference with noise, and `--position-bias 0.3` credits the response shown first by 0.3
ranking units. The latent truth of a pair is which response has the higher quality. One warehouse of
synthetic pairs is ingested with `curate ingest`, copied once per strategy, judged with `curate judge
--strategy S` and built with `curate build-version` under the default policy: the CLI end to end.

Targets (issue 13), for `--strategy adaptive` (its default variant, the opposite order only on borderline
pairs): requests <= 70% of swap's, kept pairs >= 90% of swap's, agreement with the latent truth within 1
point of swap's. `adaptive:2` (also a second sample of each order) is printed beside it for its trade-off.
Verdicts are SIMULATED.

Run: `python benchmarks/adaptive.py [--pairs 1500]` (about 2 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_runs import bench_env, curate

from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess, quality
from warehouse.store import Warehouse

POSITION_BIAS = 0.3


def run_strategy(strategy: str, base: Path, work: Path, env: dict[str, str]) -> dict:
    warehouse = work / f"{strategy.replace(':', '-')}.duckdb"
    shutil.copy(base, warehouse)
    config = StandinConfig(capacity=64, latency_mean=0.005, position_bias=POSITION_BIAS)
    with StandinProcess(config) as server:
        judged = curate("judge", "--endpoint", server.url, "--strategy", strategy, "--warehouse", str(warehouse),
                        env=env)
        requests = server.stats()["requests"]
    version = curate("build-version", "bench", "--warehouse", str(warehouse), env=env)
    with Warehouse(warehouse, read_only=True) as wh:
        rows = wh.versions.version_rows("bench", version["version"])
    agree = sum(quality(r["chosen"]) > quality(r["rejected"]) for r in rows)
    return {"strategy": strategy, "requests": requests, "judged": judged["judged"], "kept": len(rows),
            "agreement": agree / len(rows) if rows else 0.0, "dropped": version["stats"]["dropped"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="adaptive-") as tmp:
        work = Path(tmp)
        env = bench_env(work, "CURATE_JUDGE_STRATEGY")
        data = work / "hs.jsonl"
        write_synth(data, "helpsteer3", args.pairs, seed=13, pair_bytes=600, exact_dup_rate=0.0, near_dup_rate=0.0,
                    bad_rate=0.0)
        base = work / "base.duckdb"
        ingested = curate("ingest", "--source", "helpsteer3", "--path", str(data), "--warehouse", str(base), env=env)
        print(f"{ingested['new_pairs']} pairs; stand-in position bias {POSITION_BIAS} (SIMULATED verdicts)", flush=True)
        results = {s: run_strategy(s, base, work, env) for s in ("swap", "adaptive", "adaptive:2")}
    swap = results["swap"]
    print(f"\n{'strategy':<11} {'requests':>9} {'vs swap':>8} {'kept':>6} {'vs swap':>8} {'agreement':>10}  dropped")
    for r in results.values():
        print(f"{r['strategy']:<11} {r['requests']:>9} {r['requests'] / swap['requests']:>8.3f} {r['kept']:>6} "
              f"{r['kept'] / max(1, swap['kept']):>8.3f} {100 * r['agreement']:>9.2f}%  {r['dropped']}")
    a = results["adaptive"]
    checks = [
        ("adaptive requests <= 70% of swap's", a["requests"] <= 0.70 * swap["requests"],
         f"{a['requests'] / swap['requests']:.3f}"),
        ("adaptive keeps >= 90% as many pairs as swap", a["kept"] >= 0.90 * swap["kept"],
         f"{a['kept'] / max(1, swap['kept']):.3f}"),
        ("adaptive agreement with the latent truth within 1 point of swap's",
         abs(a["agreement"] - swap["agreement"]) <= 0.01,
         f"{100 * a['agreement']:.2f}% vs {100 * swap['agreement']:.2f}%"),
    ]
    print()
    for name, ok, value in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {value}")
    sys.exit(0 if all(ok for _, ok, _ in checks) else 1)


if __name__ == "__main__":
    main()

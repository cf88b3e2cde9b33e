"""`curate judge`, `judge-shard`, `evaluate-judge`, `endpoint-limit`, `judge-standin`: the GenRM's verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from curator.options import json_option, warehouse_option
from curator.output import err, out, print_json, print_summary
from curator.progress_bar import ProgressBar
from curator.runner import Runner, apply_flags, fail, guarded, runs_flows
from tasks.evaluate.benchmarks import BENCHMARKS
from tasks.judge.strategies import names as strategy_names
from tasks.judge.strategies import usage as strategy_usage

commands = typer.Typer()


def rounds_option(key: str, said: str) -> Any:
    """A flag of judging in rounds that is a filter-policy key, its range the policy's."""
    from common.errors import allowed_range
    from tasks.curate.policy import FilterPolicy

    return typer.Option(None, "--" + key.replace("_", "-"), help=f"{said} ({allowed_range(FilterPolicy, key)})")


def retry_exhausted_option() -> Any:
    """`--retry-exhausted`, as `curate judge` and `curate run` take it."""
    return typer.Option(False, "--retry-exhausted", help="ask again the judgments that hit the attempt limit "
                        "(CURATE_JUDGE_MAX_ATTEMPTS answers without a verdict), each with a fresh count of attempts; "
                        "verdicts already stored are never asked again")


# the flags of what judging costs, as `curate judge` and `curate run` take them: (default, bounds, help)
COST_FLAGS: dict[str, tuple[Any, dict[str, Any], str]] = {
    "--gpus": (None, {"min": 1}, "the GPUs the GenRM's server holds, for its measured GPU-seconds "
               "(CURATE_JUDGE_GPUS; default: tensor parallel x data parallel)"),
    "--rm-gpus": (None, {"min": 1}, "with ladder: the GPUs the reward model's server holds (CURATE_JUDGE_RM_GPUS; "
                  "default 1)"),
    "--estimate": (False, {}, "send no judging request: print the expected requests, tokens and GPU-hours per rung, "
                   "low and high, from the pending pairs' token counts and the per-judge costs earlier runs "
                   "measured (or the declared throughput where none ran yet)"),
    "--budget-gpu-hours": (None, {"min": 0.000001}, "send no pair whose judgments would take what the run spent, "
                           "its requests out included, past this many GPU-hours, exit 3 (CURATE_JUDGE_BUDGET_GPU_HOURS); a rerun with a larger "
                           "budget resumes"),
}


def cost_option(flag: str) -> Any:
    default, bounds, said = COST_FLAGS[flag]
    return typer.Option(default, flag, help=said, **bounds)


def check_judge(endpoints: Optional[list[str]], launch: Optional[str], refuse: Any = None) -> Any:
    """Refuse an unusable judge in seconds, before any flow (or the Prefect API) starts, and what `refuse` refuses
    of what the check found. Returns what the check found (None when the run starts its own server)."""
    from common.settings import get_settings
    from tasks.judge.endpoints import check_judge as check_endpoints

    settings = get_settings()
    if launch or settings.judge_launch:
        return None  # a server started by the run itself is checked once it is up
    report = guarded(check_endpoints, list(endpoints or settings.judge_endpoints), settings)
    if refuse is not None:
        guarded(refuse, report)
    for p in report.unreachable:
        err.print(f"warning: judge endpoint {p.url} does not answer ({p.error}); judging with the others",
                  highlight=False, soft_wrap=True)
    if report.simulated:
        err.print("[bold yellow]note:[/] the judge endpoint serves the GenRM STAND-IN: verdicts are SIMULATED "
                  "and marked so", highlight=False, markup=True)
    if report.weights:
        from tasks.judge.weights import weights_words

        err.print(f"note: the judge endpoint serves {weights_words(report.weights)}, not the published "
                  f"{settings.judge_model}: verdicts are filed under a configuration of their own", highlight=False,
                  markup=False, soft_wrap=True)
    return report


def judge_outcome(summary: dict[str, Any] | None) -> None:
    """Failed judgments are said on stderr in one line; a run in which every judgment failed exits 2."""
    from tasks.judge.outcome import failure_line

    line, all_failed = failure_line(summary or {})
    exhausted = (summary or {}).get("skipped_exhausted") or 0
    if exhausted:  # not asked, and not failed in this run: said apart, with what asks them again
        err.print(f"note: {exhausted:,} judgments at the attempt limit were not asked (--retry-exhausted asks them "
                  "again)", soft_wrap=True, highlight=False, markup=False)
    if line is None:
        return
    if all_failed:
        fail(line)
    err.print(f"warning: {line}", soft_wrap=True, highlight=False, markup=False)


@commands.command()
@runs_flows("judge")
def judge(
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="OpenAI-compatible base URL "
                                                                                "(repeatable)"),
    strategy: Optional[str] = typer.Option(None, "--strategy", help=strategy_usage(sep=" | ")),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="judge at most N pairs"),
    shard: Optional[str] = typer.Option(None, "--shard", help="only hash bucket i of n, as i/n (0 <= i < n)"),
    shards: Optional[int] = typer.Option(None, "--shards", min=1, help="plan the pairs in N signed shards through "
                                         "the exchange (CURATE_JUDGE_EXCHANGE), judged here one after the other "
                                         "and merged; with certify, each round"),
    request_timeout: Optional[float] = typer.Option(None, "--request-timeout", min=0.001, help="seconds a request may "
                                                                                               "live in all, its "
                                                                                               "reply body included "
                                                                                               "(> 0; default 900)"),
    max_in_flight: Optional[int] = typer.Option(None, "--max-in-flight", min=1, help="at most N requests in flight "
                                                "per endpoint (default: found from the server's batch)"),
    launch_vllm: bool = typer.Option(False, "--launch-vllm", help="start vLLM's OpenAI server on this worker"),
    launch_standin: bool = typer.Option(False, "--launch-standin", help="start the SIMULATED stand-in instead"),
    port: Optional[int] = typer.Option(None, "--port", min=1, max=65535, help="port of the launched server (default "
                                                                              "5000)"),
    allow_other_model: bool = typer.Option(False, "--allow-other-model", help="judge with an endpoint that serves "
                                           "another model than the configured judge (CURATE_JUDGE_MODEL)"),
    target_agreement: Optional[float] = rounds_option("target_agreement", "with certify: the agreement with human "
                                                      "preference the certified version is to reach, which the "
                                                      "rounds escalate toward"),
    risk: Optional[float] = rounds_option("risk", "with certify: the chance the guarantee may fail (delta; default: "
                                          "the policy's, 0.05)"),
    policy: Optional[Path] = typer.Option(None, "--policy", help="with certify: the filter policy TOML file the "
                                          "version will be built by (its target_agreement, risk, calibration_share "
                                          "and min_audit_reviews decide the rounds; a flag wins over its key)"),
    retry_exhausted: bool = retry_exhausted_option(),
    rm_endpoint: Optional[list[str]] = typer.Option(None, "--rm-endpoint", help="with ladder: a reward model's vLLM "
                                                    "pooling server (repeatable), rung 0 of the ladder"),
    reward_model_only: bool = typer.Option(False, "--reward-model-only", help="with ladder: score the reward "
                                           "model's rung and stop before the GenRM's; an --estimate then decides "
                                           "the GenRM's first rung as the run will"),
    gpus: Optional[int] = cost_option("--gpus"),
    rm_gpus: Optional[int] = cost_option("--rm-gpus"),
    estimate: bool = cost_option("--estimate"),
    budget_gpu_hours: Optional[float] = cost_option("--budget-gpu-hours"),
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
    runner: Runner = None,
) -> None:
    """Judge the pending pairs with the GenRM; reruns send only what is missing. `--strategy certify[:K]` judges
    in rounds toward `--target-agreement`, asking more only of the pairs not yet sure (with `--shards N`, each
    round in N shards)."""
    apply_flags(warehouse, judge_allow_other_model=allow_other_model)
    if launch_vllm and launch_standin:
        fail("choose one of --launch-vllm and --launch-standin")
    from common.settings import get_settings
    from curator import refusals

    launch = "vllm" if launch_vllm else "standin" if launch_standin else None
    guarded(refusals.endpoint_given, endpoint, launch, get_settings())  # arguments, the warehouse, the endpoints
    from tasks.curate.policy import in_rounds
    from tasks.judge.context import JudgeRun

    # the run the flow is given, checked once: its arguments, then a run in rounds' policy file
    run = guarded(JudgeRun.of, endpoints=endpoint or None, strategy=strategy, shard=shard, shards=shards, limit=limit,
                  launch=launch, port=port, max_in_flight=max_in_flight, request_timeout=request_timeout,
                  target_agreement=target_agreement, risk=risk, policy_path=None if policy is None else str(policy),
                  warehouse=str(get_settings().warehouse), retry_exhausted=retry_exhausted,
                  rm_endpoints=rm_endpoint or None, gpus=gpus, rm_gpus=rm_gpus, budget_gpu_hours=budget_gpu_hours,
                  reward_model_only=reward_model_only)
    run = guarded(in_rounds, run)
    guarded(refusals.warehouse, run.settings)
    report = check_judge(endpoint, launch)
    if estimate:
        print_estimate(run, report, as_json)
        return
    if shards:  # the coordinator merges the exchange first: never answered from the warehouse alone
        from flows.judge_shards import judge_sharded_here

        with ProgressBar(as_json):
            summary = runner.flow(judge_sharded_here, **run.flow_parameters(judge_sharded_here))
        print_summary("judge", summary if as_json else with_rounds_apart(summary), as_json)
        judge_outcome(summary)
        budget_outcome(summary)
        return
    summary = None
    if report is not None and not retry_exhausted and not rm_endpoint:  # the endpoints answer: anything to judge?
        from curator.noop import judge_noop

        summary = runner.noop(judge_noop, report, run)
    if summary is None:
        from flows.judge import judge as judge_flow

        with ProgressBar(as_json):
            summary = runner.flow(judge_flow, **run.flow_parameters(judge_flow))
    print_summary("judge", summary if as_json else with_rounds_apart(summary), as_json)
    judge_outcome(summary)
    budget_outcome(summary)


def print_estimate(run: Any, report: Any, as_json: bool) -> None:
    """What `run` is expected to cost (`tasks.judge.estimate.estimate_run`), sending no judging request: as JSON
    (`estimate`), or one line per rung."""
    from tasks.judge.estimate_run import estimate_run
    from tasks.judge.kinds import REWARD_MODEL
    from tasks.judge.targets import judge_config_from
    from tasks.review.rounds import climb_shares
    from warehouse.store import Warehouse

    settings = run.settings
    run = run.served_by(list(report.usable) if report is not None else [], judge_config_from(settings, report))
    with Warehouse(settings.warehouse, read_only=True) as wh:
        found = guarded(estimate_run, wh, run, lambda pending: climb_shares(wh, run, pending))
    if as_json:
        print_json({"estimate": found})
        return
    hours = found["gpu_hours"]
    expected = f" (expected {hours['expected']:.6g})" if hours.get("expected") is not None else ""
    out.print(f"estimate for {found['strategy']}: {hours['low']:.6g} .. {hours['high']:.6g} GPU-hours{expected}, "
              f"{found['requests']['low']:,} .. {found['requests']['high']:,} requests, "
              f"{found['tokens']['low']:,} .. {found['tokens']['high']:,} tokens; nothing was sent", highlight=False,
              soft_wrap=True)
    for r in found["rungs"]:
        climbing = f" (expected {r['requests']['expected']:,})" if "expected" in r["requests"] else ""
        out.print(f"  {r['judge']}: {r['how']}: {r['requests']['low']:,} .. {r['requests']['high']:,} requests{climbing}, "
                  f"{r['tokens']['low']:,} .. {r['tokens']['high']:,} tokens, {r['gpu_hours']['low']:.6g} .. "
                  f"{r['gpu_hours']['high']:.6g} GPU-hours"
                  + (f" (expected {r['gpu_hours']['expected']:.6g})" if r["gpu_hours"]["expected"] is not None else "")
                  + f" ({r['basis']})", highlight=False, soft_wrap=True)
    unscored = any(r["judge"] == REWARD_MODEL.name and r["requests"]["high"] for r in found["rungs"])
    if unscored and len(found["rungs"]) > 1:
        out.print("  the GenRM's rungs are replayed from earlier pairs until the reward model has scored these: "
                  "`--reward-model-only` first makes its first rung the run's own decision (docs/judge-ladder.md"
                  "#estimate-and-budget)", highlight=False, soft_wrap=True)


def budget_outcome(summary: dict[str, Any] | None) -> None:
    """A run stopped at its GPU-hour budget says what it spent and what is left in one line, and exits 3."""
    budget = (summary or {}).get("budget") or {}
    if not budget.get("stopped"):
        return
    err.print(f"stopped at the GPU-hour budget: {budget['spent_gpu_hours']:.6g} of {budget['gpu_hours']:.6g} "
              f"GPU-hours spent, {budget['left_gpu_hours']:.6g} left, the next step would exceed it"
              + (f" (expected {budget['next_step_gpu_hours']:.6g} GPU-hours)" if "next_step_gpu_hours" in budget else "")
              + "; a rerun with a "
              "larger --budget-gpu-hours resumes and pays nothing twice", soft_wrap=True, highlight=False, markup=False)
    raise typer.Exit(3)


def with_rounds_apart(summary: dict[str, Any]) -> dict[str, Any]:
    """A run in rounds as the table shows it: one line per round, in place of the list."""
    rounds = summary.get("rounds")
    if not rounds:
        return summary
    apart = {f"round {r['round']}": f"{r['pairs_asked']:,} pairs asked"
                                    + (f" in {len(r['shards'])} shards" if "shards" in r else "")
                                    + f", {r['requests']:,} requests, {r['judged']:,} judged; {r['certified']:,} "
                                      f"pairs certified after it ({r['how']})" for r in rounds}
    return {**{k: v for k, v in summary.items() if k != "rounds"}, **apart}


@commands.command("judge-shard")
@runs_flows("judge-shard")
def judge_shard(
    work: str = typer.Argument(..., help="a shard's work file (<exchange>/plans/<plan>/shard-i-of-n.parquet; a "
                               "path or an fsspec URL such as s3://...)"),
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="OpenAI-compatible base URL "
                                                                                "(repeatable)"),
    launch_vllm: bool = typer.Option(False, "--launch-vllm", help="start vLLM's OpenAI server on this worker"),
    port: Optional[int] = typer.Option(None, "--port", min=1, max=65535, help="port of the launched server (default "
                                                                              "5000)"),
    max_in_flight: Optional[int] = typer.Option(None, "--max-in-flight", min=1, help="at most N requests in flight "
                                                "per endpoint (default: found from the server's batch)"),
    as_json: bool = json_option(),
    runner: Runner = None,
) -> None:
    """Judge one shard of a sharded plan by hand, as a GPU worker does; results go to the exchange folder."""
    from curator import refusals

    guarded(refusals.shard_work, str(work))  # a changed work file, or a key on one side only
    from flows.judge import judge_worker

    with ProgressBar(as_json):
        summary = runner.flow(judge_worker, work=str(work), endpoints=endpoint or None,
                              launch="vllm" if launch_vllm else None, port=port, max_in_flight=max_in_flight)
    print_summary("judge shard", summary, as_json)


@commands.command("evaluate-judge")
@runs_flows("evaluate-judge")
def evaluate_judge(
    benchmark: str = typer.Option(..., "--benchmark", "-b", help=" | ".join(BENCHMARKS)),
    path: Optional[Path] = typer.Option(None, "--path", help="a local JSONL/Parquet copy (default: the Hub)"),
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="OpenAI-compatible base URL "
                                                                                "(repeatable)"),
    strategy: str = typer.Option("swap", "--strategy",
                                 help=strategy_usage(strategy_names(follow_ups=False), sep=" | ")),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="the first N benchmark rows"),
    launch_vllm: bool = typer.Option(False, "--launch-vllm", help="start vLLM's OpenAI server here"),
    revision: Optional[str] = typer.Option(None, "--revision", help="Hub branch, tag or commit of the benchmark "
                                                                    "(default: main)"),
    warehouse: Optional[Path] = warehouse_option(),
    write_oracle: Optional[Path] = typer.Option(None, "--write-oracle", help="only write the labels as a stand-in "
                                                "--oracle file (checking the scoring) and stop"),
    as_json: bool = json_option(),
    runner: Runner = None,
) -> None:
    """Judge a benchmark and report accuracy by category beside the model card's figures."""
    apply_flags(warehouse)
    from common.settings import get_settings
    from curator import refusals

    guarded(refusals.benchmark, benchmark, strategy, get_settings())
    if write_oracle is None:
        guarded(refusals.endpoint_given, endpoint, "vllm" if launch_vllm else None, get_settings())
    if path is not None and not path.is_file():
        fail(f"{path}: no such file")
    if write_oracle is not None:
        from tasks.evaluate.benchmarks import comparisons, oracle_rows
        from tasks.ingest.read import read_local

        if path is None:
            fail("--write-oracle needs --path (a local copy of the benchmark)")
        rows = [r for batch in read_local(path, 10_000) for r in batch.rows]
        try:
            labels = oracle_rows(comparisons(benchmark, rows))
        except (KeyError, ValueError) as e:
            fail(f"{path}: {e}")
        write_oracle.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in labels), encoding="utf-8")
        out.print(f"{write_oracle}: {len(labels)} labelled comparisons of {len(rows)} {benchmark} rows "
                  f"(for `curate judge-standin --oracle {write_oracle}`)")
        return
    guarded(refusals.warehouse, get_settings(), creates=True)  # a benchmark needs no ingested pairs
    check_judge(endpoint, "vllm" if launch_vllm else None)
    from flows.evaluate import evaluate_judge as evaluate_flow

    with ProgressBar(as_json):
        result = runner.flow(evaluate_flow, benchmark=benchmark, path=str(path) if path else None,
                             endpoints=endpoint or None, strategy=strategy, limit=limit,
                             launch="vllm" if launch_vllm else None, revision=revision,
                             warehouse=str(get_settings().warehouse))
    if as_json:
        print_json(result)
        return
    card = result["model_card"]
    out.print(f"{result['benchmark']}: accuracy {result['accuracy']}% (model card {card['overall']}%) over "
              f"{result['scored']} comparisons, {result['failed']} failed; served by {', '.join(result['served_models'])}")
    for name, acc in [*result["by_category"].items(), *result.get("by_difficulty", {}).items()]:
        out.print(f"  {name:<10} {acc}%" + (f"   (model card {card[name]}%)" if name in card else ""))
    if result.get("domains_missing"):
        out.print(f"  not in this copy: {', '.join(result['domains_missing'])} (the overall averages the rest)")


@commands.command("endpoint-limit")
def endpoint_limit(
    endpoint: str = typer.Argument(..., help="judge base URL, e.g. http://gpu-3:8000/v1"),
    slots: int = typer.Option(..., "--slots", min=1, help="requests in flight at once, over every flow"),
) -> None:
    """Cap the requests all judge runs send to one endpoint (a Prefect global concurrency limit)."""
    from common import aio
    from tasks.judge.limits import checked_endpoint, set_endpoint_limit

    guarded(checked_endpoint, endpoint)
    name = aio.run(set_endpoint_limit(endpoint, slots))
    out.print(f"{endpoint}: at most {slots} requests in flight over all flows (global concurrency limit {name!r})")


@commands.command("judge-standin")
def judge_standin(
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="port to serve on"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to serve on"),
    capacity: int = typer.Option(64, "--capacity", min=1, help="requests processed at once; the rest queue"),
    latency_mean: float = typer.Option(0.05, "--latency-mean", min=0.0, help="seconds a request takes, lognormal mean "
                                                                             "(>= 0)"),
    latency_sigma: float = typer.Option(0.5, "--latency-sigma", min=0.0, help="spread of the latency, lognormal sigma "
                                                                              "(>= 0)"),
    position_bias: float = typer.Option(0.0, "--position-bias", help="ranking units favouring the response shown "
                                                                     "first (0: none; -2.5 .. 2.5)"),
    length_bias: float = typer.Option(0.0, "--length-bias", help="ranking units favouring the longer response, "
                                      "per unit of log length ratio (0: none; < 0 favours the shorter)"),
    error_rate: float = typer.Option(0.0, "--error-rate", help="share of requests answered with HTTP 500 (0 .. 1)"),
    hang_rate: float = typer.Option(0.0, "--hang-rate", help="share of requests never answered (0 .. 1)"),
    malformed_rate: float = typer.Option(0.0, "--malformed-rate", help="share of answers without a verdict (0 .. 1)"),
    truncated_rate: float = typer.Option(0.0, "--truncated-rate", help="share of answers cut off at max_tokens (0 .. "
                                                                       "1)"),
    unclosed_rate: float = typer.Option(0.0, "--unclosed-rate", help="share of answers whose reasoning never closed "
                                                                     "(0 .. 1)"),
    seed: int = typer.Option(0, "--seed", help="seed of the simulated noise and faults (any integer)"),
    oracle: Optional[Path] = typer.Option(None, "--oracle", help='JSONL of {"prompt", "better", "worse"}: rank by these labels'),
    first_wins_rate: float = typer.Option(0.0, "--first-wins-rate", help="share of verdicts given to the first-shown "
                                                                         "answer (0 .. 1)"),
    max_model_len: int = typer.Option(40_000, "--max-model-len", min=256, help="the served context in tokens, as "
                                      "vLLM's flag: /v1/models reports it, and longer requests get vLLM's 400"),
    drop_response_roles: bool = typer.Option(False, "--drop-response-roles", help="render prompts as the base Qwen3 "
                                             "template does, without response_1 / response_2 (a misconfigured server)"),
    kind: str = typer.Option("genrm", "--kind", help="genrm | reward-model: the reward-model stand-in serves vLLM's "
                             "pooling API (/classify, /pooling) with SIMULATED scores"),
    noise: float = typer.Option(0.6, "--noise", min=0.0, help="reward-model: a score's noise, in latent-quality units"),
    weak_share: float = typer.Option(0.25, "--weak-share", min=0.0, max=1.0, help="reward-model: the share of prompts "
                                     "of the domain it is bad at (0 .. 1)"),
) -> None:
    """Serve the GenRM STAND-IN: an OpenAI-compatible server whose verdicts are SIMULATED (tests, demo, benchmarks);
    `--kind reward-model`: the reward-model stand-in, whose scores are SIMULATED."""
    if kind == "reward-model":
        from testing.reward_model_standin import serve_reward_model

        serve_reward_model(port=port, host=host, capacity=capacity, length_bias=length_bias, noise=noise,
                           weak_share=weak_share, seed=seed, max_model_len=max_model_len)
        return
    if kind != "genrm":
        fail(f"--kind must be genrm or reward-model, not {kind!r}")
    from testing import genrm_standin as standin

    if oracle is not None and not oracle.is_file():
        fail(f"{oracle}: no such file")
    try:
        config = standin.StandinConfig(
            capacity=capacity, latency_mean=latency_mean, latency_sigma=latency_sigma, position_bias=position_bias,
            length_bias=length_bias,
            error_rate=error_rate, hang_rate=hang_rate, malformed_rate=malformed_rate, truncated_rate=truncated_rate,
            unclosed_rate=unclosed_rate, seed=seed, oracle=str(oracle or ""), first_wins_rate=first_wins_rate,
            max_model_len=max_model_len, drop_response_roles=drop_response_roles)
    except ValueError as e:
        fail(str(e))
    standin.serve(config, host=host, port=port)


# a policy key's `--no-<flag>` reads worse than these

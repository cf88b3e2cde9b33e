"""`curate run` and `curate demo`: every stage at once."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from curator.commands.judge import (
    budget_outcome,
    check_judge,
    cost_option,
    judge_outcome,
    print_estimate,
    retry_exhausted_option,
)
from curator.options import json_option, sources_file_option, warehouse_option
from curator.output import out, print_json
from curator.runner import Runner, apply_flags, fail, guarded, runs_flows
from schemas.summaries import PipelineSummary
from schemas.version import hub_repo
from tasks.judge.strategies import usage as strategy_usage

commands = typer.Typer()


@commands.command()
@runs_flows("run")
def run(
    source: Optional[list[str]] = typer.Option(None, "--source", "-s", help="NAME (built-in or declared) or NAME=FILE, "
                                                                         "repeatable"),
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="judge base URL, repeatable"),
    rm_endpoint: Optional[list[str]] = typer.Option(None, "--rm-endpoint", help="with ladder: a reward model's vLLM "
                                                    "pooling server (repeatable), rung 0 of the ladder"),
    reward_model_only: bool = typer.Option(False, "--reward-model-only", help="with ladder: judging scores the "
                                           "reward model's rung and stops (no version); an --estimate then decides "
                                           "the GenRM's first rung as the run will"),
    launch_vllm: bool = typer.Option(False, "--launch-vllm", help="start vLLM's OpenAI server on this host to judge"),
    strategy: Optional[str] = typer.Option(None, "--strategy", help=f"{strategy_usage(sep=' | ')}, K >= 1 "
                                                                    "(default: CURATE_JUDGE_STRATEGY)"),
    dataset: str = typer.Option("preferences", "--dataset", help="dataset name of the version (letters, digits, . _ "
                                                                 "-)"),
    policy: Optional[Path] = typer.Option(None, "--policy", help="filter policy TOML file (default: the default "
                                                                 "policy)"),
    publish_to: Optional[str] = typer.Option("published", "--publish-to", help="a local folder (Hub layout) or "
                                                                               "hf://ORG/NAME"),
    skip: Optional[list[str]] = typer.Option(None, "--skip", help="a stage to leave out, repeatable: ingest | judge | "
                                                                  "version | publish"),
    warehouse: Optional[Path] = warehouse_option(),
    sources_file: Optional[Path] = sources_file_option(),
    shards: int = typer.Option(0, "--shards", min=0, help="judge in N shards on the gpu work pool (needs a Prefect "
                                                          "server; 0: here)"),
    allow_other_model: bool = typer.Option(False, "--allow-other-model", help="judge with an endpoint that serves "
                                           "another model than the configured judge (CURATE_JUDGE_MODEL)"),
    allow_other_weights: bool = typer.Option(False, "--allow-other-weights", help="publish to the Hub a version "
                                             "judged by other weights than the judge's published ones"),
    retry_exhausted: bool = retry_exhausted_option(),
    estimate: bool = cost_option("--estimate"),
    budget_gpu_hours: Optional[float] = cost_option("--budget-gpu-hours"),
    as_json: bool = json_option(),
    runner: Runner = None,
) -> None:
    """The whole pipeline: ingest → judge → build version → publish. `--estimate` runs no stage: it estimates
    the judge stage on the pairs pending now."""
    apply_flags(warehouse, judge_allow_other_model=allow_other_model, sources_file=sources_file)
    from common.settings import get_settings
    from curator import refusals
    from tasks.pipeline.context import PipelineRun

    settings = get_settings()
    launch = "vllm" if launch_vllm else None
    parameters = {"sources": source, "endpoints": endpoint or None, "rm_endpoints": rm_endpoint or None,
                  "launch": launch, "strategy": strategy,
                  "dataset": dataset, "policy_path": str(policy) if policy else None, "publish_to": publish_to,
                  "skip": skip, "judge_shards": shards, "allow_other_weights": allow_other_weights,
                  "retry_exhausted": retry_exhausted, "budget_gpu_hours": budget_gpu_hours,
                  "reward_model_only": reward_model_only,
                  "warehouse": str(settings.warehouse),
                  "sources_file": str(settings.sources_file) if settings.sources_file is not None else None}
    # the run's arguments and files as the flow checks them, then the warehouse, the endpoints and the Hub
    run = guarded(PipelineRun.of, **parameters)
    judging = guarded(run.check_files)
    guarded(refusals.warehouse, settings, creates="ingest" not in run.skip)
    guarded(refusals.pii_detector, settings)
    if estimate:
        if judging is None or shards:
            fail("--estimate estimates the judge stage judged here: drop --skip judge and --shards")
        print_estimate(judging, check_judge(endpoint, launch), as_json)
        return
    publishing = "publish" not in run.skip and run.publish_to
    repo = hub_repo(run.publish_to) if publishing else None
    if publishing:
        guarded(refusals.publish_folder, run.publish_to, run.dataset)
    hub_weights = None  # the judge's weights, when they are not the published ones and the version goes to the Hub
    if repo is not None and "judge" not in run.skip:
        hub_weights = functools.partial(refusals.judge_weights_to_hub, settings, launch=launch, shards=shards,
                                        to=run.publish_to, allow_other_weights=allow_other_weights)
    report = None
    if "judge" not in run.skip and not shards:
        report = check_judge(endpoint, launch, refuse=hub_weights)
    if hub_weights is not None and report is None:  # a server the run starts, or sharded: known from the settings
        guarded(hub_weights, None)
    if repo is not None:
        from tasks.publish.hub import check_reachable

        guarded(check_reachable, repo, retries=settings.hub_retries, retry_wait=settings.hub_retry_wait)
    from flows.pipeline import curate_pipeline

    summary = runner.flow(curate_pipeline, **parameters)
    if as_json:
        print_json(summary)
    else:
        print_pipeline(summary)
    judge_outcome(summary.get("judge"))
    budget_outcome(summary.get("judge"))


def print_pipeline(summary: PipelineSummary) -> None:
    """A pipeline run in a line a stage."""
    from common.numbers import count
    from tasks.judge.ladder import REWARD_MODEL_ONLY

    for name, s in summary["ingest"].items():
        if s.get("format"):  # a declared source: its format, and whether it was told from the rows
            name = f"{name} ({s['format']}{', told from its columns' if s.get('format_detected') else ''})"
        if str(s.get("note", "")).startswith("unchanged"):
            out.print(f"ingest {name}: unchanged, nothing read ({s['source_revision']} was read in full before)")
            continue
        out.print(f"ingest {name}: read {count(s['read'])}, valid {count(s['valid'])}, new pairs {count(s['new_pairs'])}, "
                  f"quarantined {count(s['quarantined_rows'])}, near duplicates {count(s['near_duplicates'])}, "
                  f"contaminated {count(s['contaminated'])}" + (f" ({s['note']})" if s.get("note") else ""))
    if summary.get("judge"):
        j = summary["judge"]
        failed = sum(j["failed"].values())
        if not j["requests"] and not j["judged"] and not failed:
            out.print(f"judge: nothing to judge, 0 requests ({count(j['skipped_cached'])} verdicts already in the cache)")
        else:
            served = ", ".join(j.get("served_models") or [])
            out.print(f"judge: {count(j['judged'])} judged, {count(failed)} failed, {count(j['skipped_cached'])} from "
                      f"the cache, {count(j['requests'])} requests in {j['seconds']:,.1f} s" + (f" ({served})" if served else ""))
        if j.get("rounds_ended") == REWARD_MODEL_ONLY:
            out.print(f"judge: {REWARD_MODEL_ONLY}; no version built, nothing published")
    if summary.get("version"):
        v = summary["version"]
        out.print(f"version: {v.get('name')} v{v.get('version')} with {count(v.get('rows'))} rows" +
                  (" (SIMULATED verdicts)" if v.get("simulated") or (v.get("stats") or {}).get("simulated") else "") +
                  (f" (judged by other weights: {v['judge_weights']})" if v.get("judge_weights") else "") +
                  (f" ({v['note']})" if v.get("note") else ""))
    for failure in summary.get("failed") or []:
        out.print(f"{failure['stage']}: {failure['error']}")
    if summary.get("publish"):
        p = summary["publish"]
        out.print(f"published: {p['target']}" + (" (already there)" if p["already_published"] else ""))


def _hub_reachable(timeout: float = 3.0) -> bool:
    import urllib.request

    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    try:
        urllib.request.urlopen("https://huggingface.co/api/datasets/nvidia/HelpSteer3", timeout=timeout).close()
        return True
    except OSError:
        return False


# The demo's choice of data, by name (the guard tests allow it here alone): the source it reads from the Hub when
# the Hub is reachable, else a seeded sample of each synthetic source (--rows divided by its number).


DEMO_HUB_SOURCE = "helpsteer3"


DEMO_SYNTH_SOURCES = {"helpsteer3": 1, "arena": 2}


DEMO_EVAL_SET = "rm-bench"


@commands.command()
@runs_flows("demo")
def demo(
    workdir: Path = typer.Option(Path("data/demo"), "--workdir", help="where the demo writes its inputs"),
    rows: int = typer.Option(2000, "--rows", min=10, help="HelpSteer3 rows to read (arena-shaped rows: half as many)"),
    publish_to: str = typer.Option("published", "--publish-to", help="the folder the version is published to (Hub "
                                                                     "layout)"),
    warehouse: Optional[Path] = warehouse_option(),
    runner: Runner = None,
) -> None:
    """The main job on embedded defaults: ingest, judge (a SIMULATED stand-in judge), version, publish."""
    apply_flags(warehouse)
    from common.settings import get_settings
    from flows.ingest import load_eval_set
    from flows.pipeline import curate_pipeline
    from tasks.ingest import synth as s
    from tasks.ingest.declared.model import AUTO, FORMAT_NAMES
    from tasks.ingest.declared.registry import sources_file
    from testing.genrm_standin import StandinConfig, StandinProcess

    workdir.mkdir(parents=True, exist_ok=True)
    prompts = s.synth_eval_prompts(200)
    s.write_eval_set(workdir / "eval_prompts.jsonl", prompts)
    if _hub_reachable():
        sources, limit, made_from = [DEMO_HUB_SOURCE], rows, "HelpSteer3 rows from the Hub"
        read_from = f"the first {rows:,} rows of HelpSteer3 from the Hub (pinned revision)"
    else:
        for seed, (name, divided_by) in enumerate(DEMO_SYNTH_SOURCES.items(), start=1):
            s.write_synth(workdir / f"{name}.jsonl", name, rows // divided_by, seed=seed, contamination_rate=0.01,
                          eval_prompts=prompts)
        # whole files, read in full: a rerun reads nothing (the same seed writes the same bytes)
        sources, limit = [f"{name}={workdir / f'{name}.jsonl'}" for name in DEMO_SYNTH_SOURCES], None
        made_from = "synthetic rows"
        read_from = f"synthetic rows (the Hub is not reachable): a seeded sample written to {workdir}"
    out.print(f"[bold]demo:[/] reading {escape(read_from)}", highlight=False, markup=True)
    runner.flow(load_eval_set, benchmark=DEMO_EVAL_SET, path=str(workdir / "eval_prompts.jsonl"))
    out.print("[bold yellow]demo:[/] judging with the GenRM STAND-IN: its verdicts are SIMULATED, not the real judge",
              highlight=False, markup=True)
    with StandinProcess(StandinConfig(capacity=64, latency_mean=0.01, position_bias=0.3)) as standin:
        summary = runner.flow(curate_pipeline, sources=sources, endpoints=[standin.url], strategy="swap",
                              dataset="demo-preferences", publish_to=publish_to, limit=limit)
    print_pipeline(summary)
    published = (summary.get("publish") or {}).get("target", "(not published)")
    me = os.path.relpath(sys.argv[0]) if os.path.exists(sys.argv[0]) else "curate"
    # printed with markup (the bold titles): the paths are escaped, and so is the TOML header below (it once vanished)
    published, me = escape(str(published)), escape(me)
    out.print(
        f"\n[bold]made:[/] from {made_from}: warehouse {escape(str(get_settings().warehouse))}; "
        f"dataset demo-preferences published at {published}"
        f"\n[bold]next:[/]\n"
        f"  {me} status\n"
        f"  {me} versions demo-preferences\n"
        f"  {me} dashboard            # the data team's dashboard on http://127.0.0.1:8501\n"
        f"  {os.path.relpath(sys.executable)} -c \"import datasets; print(datasets.load_dataset('{published}', 'dpo'))\"\n"
        f"  # with the real judge (8 GPUs):\n"
        f"  python3 -m vllm.entrypoints.openai.api_server --model nvidia/Qwen3-Nemotron-235B-A22B-GenRM "
        f"--trust-remote-code --seed=1 --host 0.0.0.0 --port 5000 --served-model-name "
        f"nvidia/Qwen3-Nemotron-235B-A22B-GenRM --tensor-parallel-size=8 --max-model-len=40000 "
        f"--gpu-memory-utilization=0.95\n"
        f"  {me} run --source helpsteer3 --endpoint http://GPU-HOST:5000/v1 --dataset preferences\n"
        f"  # your own preference data, no code: a table in {escape(str(sources_file(get_settings())[0]))} "
        f"(docs/sources.md#declared-sources)\n"
        f"  #   \\[sources.my-pairs]\n"
        f"  #   path = \"my-pairs.jsonl\"   # beside that file; or hub_id = \"ORG/NAME\"\n"
        f"  #   format = \"trl\"            # {' | '.join((*FORMAT_NAMES, AUTO))}\n"
        f"  #   license = \"cc-by-4.0\"\n"
        f"  {me} sources\n"
        f"  {me} ingest --source my-pairs\n",
        soft_wrap=True, markup=True,
    )

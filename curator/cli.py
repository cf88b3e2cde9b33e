"""`curate`: the one entry point. Thin: parse flags, run a flow, print its summary."""

from __future__ import annotations

import functools
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

# Offline-friendly Prefect defaults, set before Prefect is imported (a user's own values win).
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# Arrow's own allocator keeps freed batches cached; the system allocator returns them (a long ingest's peak
# memory, measured: 1.85 -> 1.56 GiB over 300k rows, with DuckDB's memory_limit at 512MB)
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from schemas.summaries import PipelineSummary  # noqa: E402

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Curate human-preference data into versioned preference datasets.")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluation sets whose prompts are kept out of training data.")
app.add_typer(eval_app, name="eval-set")
err = Console(stderr=True)
out = Console()



@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="show Prefect's logs and tracebacks on stderr "
                                       "(by default they go to logs/curate.log beside the warehouse)")) -> None:
    from curator.cli_logging import quiet_terminal

    quiet_terminal(verbose)


def _settings_env(warehouse: Optional[Path], **settings: Any) -> None:
    """Flags become settings (CURATE_* variables) for this process and the flows it runs."""
    given = {k: v for k, v in {"warehouse": warehouse, **settings}.items() if v not in (None, False)}
    for name, value in given.items():
        os.environ[f"CURATE_{name.upper()}"] = "true" if value is True else str(value)
    if given:
        from common.settings import get_settings

        get_settings.cache_clear()


def _guarded(fn, *args: Any, **kwargs: Any) -> Any:
    """Call `fn`; turn the errors a user can act on into one clear line and exit code 2."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        from common.processes import stop_requested

        if _is_user_error(e) and stop_requested() is None:  # a stopping command says one thing only
            _fail(str(e), getattr(e, "hint", None))
        raise


def _run(fn, *args: Any, **kwargs: Any) -> Any:
    """Run a flow (on the configured Prefect server, or a temporary one); errors a user can act on become one
    clear line and exit code 2, the rest go to the log file."""
    from common.settings import get_settings
    from curator.cli_logging import log_to_file
    from curator.watchdog import start_watchdog

    global _watchdog
    log_to_file(Path(get_settings().warehouse).parent / "logs" / "curate.log")
    _watchdog = _watchdog or start_watchdog()  # stops Prefect's temporary server if this process is SIGKILLed
    _start_prefect_api()
    if _api is None:
        return _guarded(fn, *args, **kwargs)
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: _guarded(_api.wait_ready, _api_timeout())}):
        return _guarded(fn, *args, **kwargs)


_watchdog = None
_api = None


def _api_timeout() -> float:
    return float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120"))


def _start_prefect_api() -> None:
    """Start Prefect's temporary API now, when no server is configured, so that its start-up overlaps what the
    command does before its flow runs (`_run` waits for it)."""
    global _api, _watchdog
    if _api is not None:
        return
    from curator.noop import prefect_server_configured

    if prefect_server_configured():
        return
    from curator.prefect_api import TemporaryApi
    from curator.watchdog import start_watchdog

    _watchdog = _watchdog or start_watchdog()
    _api = TemporaryApi().start()


def _stop_in_order(since: datetime) -> int | None:
    """After a stop signal, once the flow has unwound: mark the runs this command leaves unfinished as
    interrupted, then stop Prefect's temporary API and the watchdog. Returns how many runs were marked (None:
    the warehouse could not be opened)."""
    import logging

    from common.settings import get_settings
    from warehouse.store import Warehouse

    marked: int | None = 0
    try:
        if Path(get_settings().warehouse).exists():
            with Warehouse(get_settings().warehouse) as wh:
                marked = wh.mark_own_runs_interrupted(since)
    except Exception:  # noqa: BLE001 - the next writer marks them instead; the stop goes on
        logging.getLogger("curator.stopping").info("marking interrupted runs failed", exc_info=True)
        marked = None
    if _api is not None:
        _api.stop(wait=3)
    if _watchdog is not None and _watchdog.poll() is None:
        _watchdog.terminate()  # nothing is left for it to stop
    return marked


def _stop_at_once() -> None:
    """A second stop signal: tell the API to stop and leave; the watchdog stops the rest once we are gone."""
    if _api is not None:
        _api.kill_now()


def _stoppable(name: str):
    """A command that runs a flow: Ctrl-C or SIGTERM stops it in order, in one line (curator/interrupt.py)."""

    def wrap(fn):
        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            from curator.interrupt import stoppable

            with stoppable(name, _stop_in_order, _stop_at_once):
                return fn(*args, **kwargs)

        return command

    return wrap


def _noop_answer(fn, *args: Any) -> Any | None:
    """The answer of a call with nothing to do, found without starting Prefect; None when there is work (or a
    Prefect server is configured: then every call is a flow run there)."""
    from curator.noop import prefect_server_configured

    if prefect_server_configured():
        return None
    answer = _guarded(fn, *args)
    if answer is None:
        _start_prefect_api()  # a flow will run: its API boots while the flow's modules are imported
    return answer


def _is_user_error(e: BaseException) -> bool:
    from common.errors import UserError

    # DuckDB finding a damaged page mid-command (a truncated file a reader could open) names the file.
    damaged = type(e).__name__ == "IOException" and "Could not read enough bytes" in str(e)
    return isinstance(e, UserError) or damaged


def _fail(message: str, hint: str | None = None) -> None:
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    if hint:
        err.print(f"hint: {escape(hint)}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def _check_judge(endpoints: Optional[list[str]], launch: Optional[str]) -> Any:
    """Refuse an unusable judge in seconds, before any flow (or the Prefect API) starts. Returns what the check
    found (None when the run starts its own server)."""
    from common.settings import get_settings
    from tasks.judge.endpoints import check_judge

    settings = get_settings()
    if launch or settings.judge_launch:
        return None  # a server started by the run itself is checked once it is up
    report = _guarded(check_judge, list(endpoints or settings.judge_endpoints), settings)
    for p in report.unreachable:
        err.print(f"warning: judge endpoint {p.url} does not answer ({p.error}); judging with the others",
                  highlight=False, soft_wrap=True)
    if report.simulated:
        err.print("[bold yellow]note:[/] the judge endpoint serves the GenRM STAND-IN: verdicts are SIMULATED "
                  "and marked so", highlight=False)
    return report


def _preflight(source: str, path: Optional[Path], kind: str) -> None:
    """Refuse what can be refused before a flow run starts: a clear line instead of a flow failure."""
    from common.errors import NotFoundError
    from common.settings import get_settings
    from tasks.ingest.sources import get_source
    from warehouse.store import Warehouse

    def check() -> None:
        get_source(source, kind=kind)
        if path is not None and not path.is_file():
            raise NotFoundError(f"{path}: no such file")
        Warehouse(get_settings().warehouse).close()  # migrates, or names the process holding the lock

    _guarded(check)


def _RateColumn():  # noqa: N802 - reads like the rich columns beside it
    """Items per second, for the progress bar."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task):  # noqa: ANN001
            return Text(f"{task.speed:,.1f}/s" if task.speed else "-/s")

    return RateColumn()


class _Bar:
    """A rich progress bar fed by `curator.progress.report`."""

    def __init__(self, enabled: bool):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = (
            Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _RateColumn(),
                     TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
            if enabled else None
        )
        self.task = None

    def __enter__(self) -> _Bar:
        from common import progress

        if self.progress is not None:
            self.progress.start()
            progress.set_reporter(self.update)
        return self

    def update(self, advance: int, total: int | None, label: str) -> None:
        if self.task is None:
            self.task = self.progress.add_task(label, total=total)
        self.progress.update(self.task, advance=advance, total=total)

    def __exit__(self, *exc: Any) -> None:
        from common import progress

        progress.set_reporter(None)
        if self.progress is not None:
            self.progress.stop()


def _judge_outcome(summary: dict[str, Any] | None) -> None:
    """Failed judgments are said on stderr in one line; a run in which every judgment failed exits 2."""
    from tasks.judge.outcome import failure_line

    line, all_failed = failure_line(summary or {})
    if line is None:
        return
    if all_failed:
        _fail(line)
    err.print(f"warning: {line}", soft_wrap=True, highlight=False, markup=False)


def _print_summary(title: str, summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(summary, default=str) + "\n")
        return
    table = Table(title=title, show_header=False)
    for key, value in summary.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items()) or "-"
        table.add_row(key, str(value))
    out.print(table)


@app.command()
@_stoppable("ingest")
def ingest(
    source: str = typer.Option(..., "--source", "-s", help="helpsteer3 | arena | chatbot-arena"),
    path: Optional[Path] = typer.Option(None, "--path", help="local JSONL(.gz) or Parquet file instead of the Hub"),
    revision: Optional[str] = typer.Option(None, "--revision", help="Hub branch, tag or commit (default: the pinned one)"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="read at most N rows"),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", min=1),
    force: bool = typer.Option(False, "--force", help="read a revision again even if it was read in full"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse", help="DuckDB file (env CURATE_WAREHOUSE)"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as one JSON object"),
) -> None:
    """Read a source, validate, deduplicate, decontaminate, and land new pairs in the warehouse."""
    _settings_env(warehouse)
    _preflight(source, path, "pairs")
    from curator.noop import ingest_noop

    summary = _noop_answer(ingest_noop, source, path, revision, limit, force)
    if summary is None:
        from flows.ingest import ingest as ingest_flow

        with _Bar(enabled=not as_json and sys.stderr.isatty()):
            summary = _run(ingest_flow, source, str(path) if path else None, revision, limit, None, batch_size, force)
    _print_summary(f"ingest {source}", summary, as_json)


@eval_app.command("load")
@_stoppable("eval-set load")
def eval_set_load(
    benchmark: str = typer.Argument(..., help="rm-bench | judgebench"),
    path: Optional[Path] = typer.Option(None, "--path", help="local JSONL or Parquet file instead of the Hub"),
    revision: Optional[str] = typer.Option(None, "--revision"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Load an evaluation set's prompts and flag every pair that overlaps them."""
    _settings_env(warehouse)
    _preflight(benchmark, path, "eval_prompts")
    from flows.ingest import load_eval_set

    summary = _run(load_eval_set, benchmark, str(path) if path else None, revision)
    _print_summary(f"eval set {benchmark}", summary, as_json)


@app.command()
@_stoppable("judge")
def judge(
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="OpenAI-compatible base URL (repeatable)"),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="single | swap | adaptive[:K] | samples:K"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="judge at most N pairs"),
    shard: Optional[str] = typer.Option(None, "--shard", help="only hash bucket i of n, as i/n"),
    request_timeout: Optional[float] = typer.Option(None, "--request-timeout", help="seconds a request may live in all, its reply body included (default 900)"),
    max_in_flight: Optional[int] = typer.Option(None, "--max-in-flight", min=1, help="at most N requests in flight "
                                                "per endpoint (default: found from the server's batch)"),
    launch_vllm: bool = typer.Option(False, "--launch-vllm", help="start vLLM's OpenAI server on this worker"),
    launch_standin: bool = typer.Option(False, "--launch-standin", help="start the SIMULATED stand-in instead"),
    port: Optional[int] = typer.Option(None, "--port", help="port of the launched server"),
    allow_other_model: bool = typer.Option(False, "--allow-other-model", help="judge with an endpoint that serves "
                                           "another model than the configured judge (CURATE_JUDGE_MODEL)"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Judge the pending pairs with the GenRM; reruns send only what is missing."""
    _settings_env(warehouse, judge_allow_other_model=allow_other_model)
    if launch_vllm and launch_standin:
        _fail("choose one of --launch-vllm and --launch-standin")
    from common.settings import get_settings
    from warehouse.store import Warehouse

    launch = "vllm" if launch_vllm else "standin" if launch_standin else None
    report = _check_judge(endpoint, launch)
    _guarded(lambda: Warehouse(get_settings().warehouse).close())
    summary = None
    if report is not None:  # the endpoints are known and answer: is anything left to judge?
        from curator.noop import judge_noop

        summary = _noop_answer(judge_noop, report, strategy, shard, limit)
    if summary is None:
        from flows.judge import judge as judge_flow

        with _Bar(enabled=not as_json and sys.stderr.isatty()):
            summary = _run(judge_flow, endpoint or None, strategy, shard, limit, launch, port, max_in_flight,
                           request_timeout)
    _print_summary("judge", summary, as_json)
    _judge_outcome(summary)


@app.command("judge-shard")
@_stoppable("judge-shard")
def judge_shard(
    work: str = typer.Argument(..., help="a shard's work file (<exchange>/plans/<plan>/shard-i-of-n.parquet; a "
                               "path or an fsspec URL such as s3://...)"),
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="OpenAI-compatible base URL (repeatable)"),
    launch_vllm: bool = typer.Option(False, "--launch-vllm", help="start vLLM's OpenAI server on this worker"),
    port: Optional[int] = typer.Option(None, "--port", help="port of the launched server"),
    max_in_flight: Optional[int] = typer.Option(None, "--max-in-flight", min=1, help="at most N requests in flight "
                                                "per endpoint (default: found from the server's batch)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Judge one shard of a sharded plan by hand, as a GPU worker does; results go to the exchange folder."""
    from flows.judge import judge_worker

    with _Bar(enabled=not as_json and sys.stderr.isatty()):
        summary = _run(judge_worker, str(work), endpoint or None, "vllm" if launch_vllm else None, port, max_in_flight)
    _print_summary("judge shard", summary, as_json)


@app.command()
@_stoppable("run")
def run(
    source: Optional[list[str]] = typer.Option(None, "--source", "-s", help="NAME (Hub) or NAME=FILE, repeatable"),
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="judge base URL, repeatable"),
    launch_vllm: bool = typer.Option(False, "--launch-vllm"),
    strategy: Optional[str] = typer.Option(None, "--strategy"),
    dataset: str = typer.Option("preferences", "--dataset", help="dataset name of the version"),
    policy: Optional[Path] = typer.Option(None, "--policy"),
    publish_to: Optional[str] = typer.Option("published", "--publish-to", help="DIR or hf://ORG/NAME"),
    skip: Optional[list[str]] = typer.Option(None, "--skip", help="ingest | judge | version | publish"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    shards: int = typer.Option(0, "--shards", help="judge in N shards on the gpu work pool (needs a Prefect server)"),
    allow_other_model: bool = typer.Option(False, "--allow-other-model", help="judge with an endpoint that serves "
                                           "another model than the configured judge (CURATE_JUDGE_MODEL)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The whole pipeline: ingest → judge → build version → publish."""
    _settings_env(warehouse, judge_allow_other_model=allow_other_model)
    if "judge" not in (skip or []) and not shards:
        _check_judge(endpoint, "vllm" if launch_vllm else None)
    from flows.pipeline import curate_pipeline

    summary = _run(curate_pipeline, source, endpoint or None, "vllm" if launch_vllm else None, strategy, dataset,
                   str(policy) if policy else None, publish_to, skip, judge_shards=shards)
    if as_json:
        sys.stdout.write(json.dumps(summary, default=str) + "\n")
    else:
        _print_pipeline(summary)
    _judge_outcome(summary.get("judge"))


def _print_pipeline(summary: PipelineSummary) -> None:
    for name, s in summary["ingest"].items():
        out.print(f"ingest {name}: read {s['read']}, valid {s['valid']}, new pairs {s['new_pairs']}, "
                  f"quarantined {s['quarantined_rows']}, near duplicates {s['near_duplicates']}, "
                  f"contaminated {s['contaminated']}")
    if summary.get("judge"):
        j = summary["judge"]
        out.print(f"judge: {j['judged']} judged, {sum(j['failed'].values())} failed, {j['skipped_cached']} from the "
                  f"cache, {j['requests']} requests in {j['seconds']} s ({', '.join(j.get('served_models', []))})")
    if summary.get("version"):
        v = summary["version"]
        out.print(f"version: {v.get('name')} v{v.get('version')} with {v.get('rows')} rows" +
                  (" (SIMULATED verdicts)" if (v.get("stats") or {}).get("simulated") else "") +
                  (f" ({v['note']})" if v.get("note") else "") if "error" not in v else f"version: {v['error']}")
    if summary.get("publish"):
        p = summary["publish"]
        out.print(f"published: {p['target']}" + (" (already there)" if p["already_published"] else ""))


@app.command("evaluate-judge")
@_stoppable("evaluate-judge")
def evaluate_judge(
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="rm-bench | judgebench"),
    path: Optional[Path] = typer.Option(None, "--path", help="a local JSONL/Parquet copy (default: the Hub)"),
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="OpenAI-compatible base URL (repeatable)"),
    strategy: str = typer.Option("swap", "--strategy", help="single | swap | samples:K"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="the first N benchmark rows"),
    launch_vllm: bool = typer.Option(False, "--launch-vllm", help="start vLLM's OpenAI server here"),
    revision: Optional[str] = typer.Option(None, "--revision"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    write_oracle: Optional[Path] = typer.Option(None, "--write-oracle", help="only write the labels as a stand-in "
                                                "--oracle file (checking the scoring) and stop"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Judge RM-Bench or JudgeBench and report accuracy by category beside the model card's figures."""
    _settings_env(warehouse)
    from flows.evaluate import evaluate_judge as evaluate_flow

    if path is not None and not path.is_file():
        _fail(f"{path}: no such file")
    if write_oracle is not None:
        from tasks.evaluate.benchmarks import comparisons, oracle_rows
        from tasks.ingest.read import read_local

        if path is None:
            _fail("--write-oracle needs --path (a local copy of the benchmark)")
        rows = [r for batch in read_local(path, 10_000) for r in batch.rows]
        try:
            labels = oracle_rows(comparisons(benchmark, rows))
        except (KeyError, ValueError) as e:
            _fail(f"{path}: {e}")
        write_oracle.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in labels), encoding="utf-8")
        out.print(f"{write_oracle}: {len(labels)} labelled comparisons of {len(rows)} {benchmark} rows "
                  f"(for `curate judge-standin --oracle {write_oracle}`)")
        return
    with _Bar(enabled=not as_json and sys.stderr.isatty()):
        result = _run(evaluate_flow, benchmark, str(path) if path else None, endpoint or None, strategy, limit,
                      "vllm" if launch_vllm else None, None, revision)
    if as_json:
        sys.stdout.write(json.dumps(result, default=str) + "\n")
        return
    card = result["model_card"]
    out.print(f"{result['benchmark']}: accuracy {result['accuracy']}% (model card {card['overall']}%) over "
              f"{result['scored']} comparisons, {result['failed']} failed; served by {', '.join(result['served_models'])}")
    for name, acc in [*result["by_category"].items(), *result.get("by_difficulty", {}).items()]:
        out.print(f"  {name:<10} {acc}%" + (f"   (model card {card[name]}%)" if name in card else ""))
    if result.get("domains_missing"):
        out.print(f"  not in this copy: {', '.join(result['domains_missing'])} (the overall averages the rest)")


@app.command()
def snapshot(warehouse: Optional[Path] = typer.Option(None, "--warehouse")) -> None:
    """Refresh the dashboard's snapshot from the warehouse (the pipeline does this after each stage)."""
    _settings_env(warehouse)
    from common.settings import get_settings
    from tasks.curate.cost import cost_model
    from warehouse.snapshot import refresh_snapshot, snapshot_path
    from warehouse.store import Warehouse

    settings = get_settings()
    _guarded(lambda: Warehouse(settings.warehouse).close())  # migrates, or names the process holding the lock
    target = snapshot_path(settings.warehouse, settings.dashboard_snapshot)
    counts = refresh_snapshot(settings.warehouse, target, "manual",
                              {"server_tokens_per_second": settings.cost_server_tokens_per_second,
                               "gpus_per_server": cost_model(settings).gpus_per_server})
    out.print(f"snapshot {target}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


@app.command()
def dashboard(
    port: int = typer.Option(8501, "--port"),
    host: str = typer.Option("127.0.0.1", "--host"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    refresh: bool = typer.Option(True, "--refresh/--no-refresh", help="refresh the snapshot first when the warehouse is free"),
) -> None:
    """The data team's web dashboard (read-only, over the snapshot the pipeline refreshes)."""
    _settings_env(warehouse)

    from common.settings import get_settings
    from warehouse.snapshot import snapshot_path

    settings = get_settings()
    target = snapshot_path(settings.warehouse, settings.dashboard_snapshot)
    if refresh and settings.warehouse.exists():
        try:
            snapshot(warehouse)
        except typer.Exit:
            err.print(f"the warehouse is busy: showing the last snapshot {target}")
    app_file = Path(__file__).with_name("dashboard") / "app.py"
    out.print(f"dashboard on http://{host}:{port} (read-only, snapshot {target}); Ctrl-C stops it")
    raise typer.Exit(_serve_until_stopped([
        sys.executable, "-m", "streamlit", "run", str(app_file), "--server.headless", "true", "--server.port",
        str(port), "--server.address", host, "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal",
        "--", "--snapshot", str(target)]))


def _serve_until_stopped(argv: list[str]) -> int:
    """Run a server as a child and pass SIGTERM/SIGINT on to it, waiting for it to stop: a `kill` of this
    command never leaves the server running on its own."""
    import signal
    import subprocess

    child = subprocess.Popen(argv)

    def forward(signum, frame):  # noqa: ANN001, ARG001
        if child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        try:
            return child.wait()
        finally:
            if child.poll() is None:  # we are leaving for another reason: take the server along
                child.terminate()
                try:
                    child.wait(15)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@app.command("endpoint-limit")
def endpoint_limit(
    endpoint: str = typer.Argument(..., help="judge base URL, e.g. http://gpu-3:8000/v1"),
    slots: int = typer.Option(..., "--slots", min=1, help="requests in flight at once, over every flow"),
) -> None:
    """Cap the requests all judge runs send to one endpoint (a Prefect global concurrency limit)."""
    import asyncio

    from tasks.judge.limits import set_endpoint_limit

    name = asyncio.run(set_endpoint_limit(endpoint, slots))
    out.print(f"{endpoint}: at most {slots} requests in flight over all flows (global concurrency limit {name!r})")


@app.command("judge-standin")
def judge_standin(
    port: int = typer.Option(8000, "--port"),
    host: str = typer.Option("127.0.0.1", "--host"),
    capacity: int = typer.Option(64, "--capacity", help="requests processed at once; the rest queue"),
    latency_mean: float = typer.Option(0.05, "--latency-mean", help="seconds, lognormal mean"),
    latency_sigma: float = typer.Option(0.5, "--latency-sigma"),
    position_bias: float = typer.Option(0.0, "--position-bias", help="ranking units favouring the response shown first"),
    length_bias: float = typer.Option(0.0, "--length-bias", help="ranking units favouring the longer response, "
                                      "per unit of log length ratio"),
    error_rate: float = typer.Option(0.0, "--error-rate", help="share of requests answered with HTTP 500"),
    hang_rate: float = typer.Option(0.0, "--hang-rate", help="share of requests never answered"),
    malformed_rate: float = typer.Option(0.0, "--malformed-rate", help="share of answers without a verdict"),
    truncated_rate: float = typer.Option(0.0, "--truncated-rate", help="share of answers cut off at max_tokens"),
    unclosed_rate: float = typer.Option(0.0, "--unclosed-rate", help="share of answers whose reasoning never closed"),
    seed: int = typer.Option(0, "--seed"),
    oracle: Optional[Path] = typer.Option(None, "--oracle", help='JSONL of {"prompt", "better", "worse"}: rank by these labels'),
    first_wins_rate: float = typer.Option(0.0, "--first-wins-rate", help="share of verdicts given to the first-shown answer"),
    max_model_len: int = typer.Option(40_000, "--max-model-len", min=256, help="the served context in tokens, as "
                                      "vLLM's flag: /v1/models reports it, and longer requests get vLLM's 400"),
    drop_response_roles: bool = typer.Option(False, "--drop-response-roles", help="render prompts as the base Qwen3 "
                                             "template does, without response_1 / response_2 (a misconfigured server)"),
) -> None:
    """Serve the GenRM STAND-IN: an OpenAI-compatible server whose verdicts are SIMULATED (tests, demo, benchmarks)."""
    from testing import genrm_standin as standin

    if oracle is not None and not oracle.is_file():
        _fail(f"{oracle}: no such file")
    try:
        config = standin.StandinConfig(
            capacity=capacity, latency_mean=latency_mean, latency_sigma=latency_sigma, position_bias=position_bias,
            length_bias=length_bias,
            error_rate=error_rate, hang_rate=hang_rate, malformed_rate=malformed_rate, truncated_rate=truncated_rate,
            unclosed_rate=unclosed_rate, seed=seed, oracle=str(oracle or ""), first_wins_rate=first_wins_rate,
            max_model_len=max_model_len, drop_response_roles=drop_response_roles)
    except ValueError as e:
        _fail(str(e))
    standin.serve(config, host=host, port=port)


@app.command("build-version")
@_stoppable("build-version")
def build_version(
    name: str = typer.Argument(..., help="dataset name (letters, digits, . _ -)"),
    policy: Optional[Path] = typer.Option(None, "--policy", help="filter policy TOML file"),
    judge_config: Optional[str] = typer.Option(None, "--judge-config", help="judge configuration id (default: latest)"),
    min_abs_margin: Optional[float] = typer.Option(None, "--min-abs-margin"),
    min_confidence: Optional[float] = typer.Option(None, "--min-confidence"),
    min_p_correct: Optional[float] = typer.Option(None, "--min-p-correct", help="keep pairs whose calibrated "
                                                  "probability of matching a clear human preference is at least this"),
    max_chosen_longer_share: Optional[float] = typer.Option(None, "--max-chosen-longer-share", help="at most this "
                                                            "share of kept pairs with the longer answer chosen"),
    max_chosen_more_markdown_share: Optional[float] = typer.Option(None, "--max-chosen-more-markdown-share"),
    require_order_agreement: Optional[bool] = typer.Option(None, "--require-order-agreement/--allow-order-disagreement"),
    require_score_agreement: Optional[bool] = typer.Option(None, "--require-score-agreement/--allow-score-disagreement"),
    max_spread: Optional[float] = typer.Option(None, "--max-spread"),
    human_label: Optional[str] = typer.Option(None, "--human-label", help="ignore | require_agreement | flag_disagreement"),
    human_ties: Optional[str] = typer.Option(None, "--human-ties", help="keep | drop"),
    both_bad: Optional[str] = typer.Option(None, "--both-bad", help="keep | drop"),
    max_per_source: Optional[int] = typer.Option(None, "--max-per-source"),
    max_per_domain: Optional[int] = typer.Option(None, "--max-per-domain"),
    max_per_prompt: Optional[int] = typer.Option(None, "--max-per-prompt"),
    exclude_contaminated: Optional[bool] = typer.Option(None, "--exclude-contaminated/--include-contaminated"),
    validation_share: Optional[float] = typer.Option(None, "--validation-share"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Materialize the next immutable version of NAME from the judged pairs and a filter policy."""
    _settings_env(warehouse)
    overrides = {k: v for k, v in dict(
        min_abs_margin=min_abs_margin, min_confidence=min_confidence, min_p_correct=min_p_correct,
        max_chosen_longer_share=max_chosen_longer_share, max_chosen_more_markdown_share=max_chosen_more_markdown_share,
        require_order_agreement=require_order_agreement,
        require_score_agreement=require_score_agreement, max_spread=max_spread, human_label=human_label,
        human_ties=human_ties, both_bad=both_bad, max_per_source=max_per_source, max_per_domain=max_per_domain,
        max_per_prompt=max_per_prompt, exclude_contaminated=exclude_contaminated, validation_share=validation_share,
    ).items() if v is not None}
    from tasks.curate.policy import load_policy

    _guarded(load_policy, policy, overrides)  # refuse a bad policy before any flow run starts
    from curator.noop import version_noop

    summary = _noop_answer(version_noop, name, policy, overrides, judge_config)
    if summary is None:
        from flows.versions import build_version as build_flow

        summary = _run(build_flow, name, str(policy) if policy else None, overrides, judge_config)
    _print_summary(f"version {name}", summary, as_json)


@app.command()
def versions(
    name: Optional[str] = typer.Argument(None),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List dataset versions."""
    _settings_env(warehouse)
    from common.settings import get_settings
    from warehouse.store import Warehouse

    with _guarded(Warehouse, get_settings().warehouse, read_only=True) as wh:
        found = wh.versions(name)
    if as_json:
        sys.stdout.write(json.dumps(found, default=str) + "\n")
        return
    table = Table("name", "version", "parent", "created", "rows", "content hash", "judge config", "published")
    for v in found:
        table.add_row(v["name"], str(v["version"]), str(v["parent_version"] or "-"), str(v["created_at"])[:19],
                      str(v["row_count"]), v["content_hash"], v["judge_config_id"], v["published_tag"] or "-")
    out.print(table)


@app.command()
def diff(
    name: str = typer.Argument(...),
    old: int = typer.Argument(..., metavar="A", help="the earlier version"),
    new: int = typer.Argument(..., metavar="B", help="the later version"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Pairs added, removed and flipped between versions A and B of NAME, and how the statistics moved."""
    _settings_env(warehouse)
    from common.settings import get_settings
    from tasks.curate.diff import diff_versions
    from warehouse.store import Warehouse

    with _guarded(Warehouse, get_settings().warehouse, read_only=True) as wh:
        missing = [v for v in (old, new) if wh.version_meta(name, v) is None or wh.version_meta(name, v)["version"] != v]
        if missing:
            _fail(f"{name} has no version {missing[0]}")
        result = diff_versions(wh.version_rows(name, old), wh.version_rows(name, new))
    if as_json:
        sys.stdout.write(json.dumps(result) + "\n")
        return
    summary = {"added": len(result["added"]), "removed": len(result["removed"]), "flipped": len(result["flipped"])}
    for key in ("rows", "mean_margin", "mean_confidence", "by_source", "by_split"):
        summary[key] = f"{result['before'][key]} -> {result['after'][key]}"
    _print_summary(f"{name} v{old} -> v{new}", summary, False)


@app.command()
@_stoppable("publish")
def publish(
    name: str = typer.Argument(...),
    version: Optional[int] = typer.Argument(None, help="default: the latest version"),
    to: str = typer.Option("published", "--to", help="a local folder (Hub layout) or hf://ORG/NAME"),
    private: bool = typer.Option(False, "--private", help="create the Hub repo private"),
    allow_simulated: bool = typer.Option(False, "--allow-simulated", help="push a version judged by the SIMULATED "
                                         "stand-in to the Hub anyway (its card still says so)"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Publish a version: Parquet shards per format and split, a dataset card, a tag per version."""
    _settings_env(warehouse)
    from curator.noop import publish_noop

    if to.startswith("hf://"):  # an offline host fails in seconds, not after Prefect's start-up
        from common.settings import get_settings
        from tasks.publish.hub import check_reachable

        _guarded(check_reachable, to[len("hf://"):].strip("/"), retries=get_settings().hub_retries,
                 retry_wait=get_settings().hub_retry_wait)
    summary = _noop_answer(publish_noop, name, version, to)
    if summary is None:
        from flows.publish import publish as publish_flow

        summary = _run(publish_flow, name, version, to, private, allow_simulated=allow_simulated)
    if not as_json:
        summary = {**summary, "files": f"{len(summary['files'])} files"}
    _print_summary(f"publish {name}", summary, as_json)


@app.command()
def synth(
    kind: str = typer.Argument(..., help="helpsteer3 | arena | eval"),
    out_path: Path = typer.Argument(..., metavar="OUT", help="JSONL file to write (a .manifest.json goes beside it)"),
    rows: int = typer.Option(1000, "--rows", "-n", min=1),
    seed: int = typer.Option(0, "--seed"),
    pair_bytes: int = typer.Option(6000, "--pair-bytes", help="median text bytes per pair"),
    exact_dup_rate: float = typer.Option(0.03, "--exact-dup-rate"),
    near_dup_rate: float = typer.Option(0.03, "--near-dup-rate"),
    bad_rate: float = typer.Option(0.02, "--bad-rate"),
    contamination_rate: float = typer.Option(0.0, "--contamination-rate", help="needs --eval-prompts-seed"),
    eval_prompts: int = typer.Option(200, "--eval-prompts", help="size of the made-up evaluation set"),
) -> None:
    """Write seeded synthetic rows with planted duplicates, near duplicates and bad rows."""
    from tasks.ingest import synth as s

    prompts = s.synth_eval_prompts(eval_prompts)
    if kind == "eval":
        s.write_eval_set(out_path, prompts)
        err.print(f"wrote {len(prompts)} evaluation prompts to {out_path}")
        return
    if kind not in ("helpsteer3", "arena"):
        _fail("kind must be helpsteer3, arena or eval")
    m = s.write_synth(
        out_path, kind, rows, seed, pair_bytes=pair_bytes, exact_dup_rate=exact_dup_rate, near_dup_rate=near_dup_rate,
        bad_rate=bad_rate, contamination_rate=contamination_rate, eval_prompts=prompts,
    )
    err.print(
        f"wrote {m.rows} {kind} rows to {out_path}: {len(m.exact_duplicates)} exact duplicates, "
        f"{len(m.near_duplicates)} near duplicates, {len(m.bad_rows)} bad rows, {len(m.contaminated)} contaminated"
    )


@app.command()
def sources() -> None:
    """List the sources and evaluation sets this build knows."""
    from tasks.ingest.sources import SOURCES

    table = Table("name", "kind", "hub dataset", "splits", "license")
    for s in SOURCES.values():
        table.add_row(s.name, s.kind, s.hub_id + (f" ({s.config})" if s.config else ""), ", ".join(s.splits), s.license)
    out.print(table)


@app.command()
def status(
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Counts of what the warehouse holds, and the latest ingest runs."""
    _settings_env(warehouse)
    from common.settings import get_settings
    from warehouse.store import Warehouse

    with _guarded(Warehouse, get_settings().warehouse, read_only=True) as wh:
        counts = wh.counts()
        runs = wh.ingest_runs(10)
        interrupted = wh.interrupted_runs(10)
        judging = wh.judging_status()
        found = wh.versions()
    if as_json:
        sys.stdout.write(json.dumps({"counts": counts, "runs": runs, "interrupted": interrupted, "judging": judging,
                                     "versions": found}, default=str) + "\n")
        return
    _print_summary("warehouse", counts, False)
    if judging:
        table = Table("judge configuration", "model", "judgments ok", "failed", "pairs judged", "pairs pending",
                      title="judging")
        for j in judging:
            table.add_row(j["judge_config_id"], ("SIMULATED stand-in" if j["simulated"] else j["model"]),
                          f"{j['ok']:,}", f"{j['failed']:,}", f"{counts['pairs_for_curation'] - j['pairs_pending']:,}",
                          f"{j['pairs_pending']:,}")
        out.print(table)
    if found:
        table = Table("name", "version", "rows", "judge", "content hash", "published", title="versions")
        for v in found:
            table.add_row(v["name"], str(v["version"]), f"{v['row_count']:,}", "SIMULATED" if v["simulated"] else "real",
                          v["content_hash"], v["published_tag"] or "-")
        out.print(table)
    if interrupted:
        table = Table("started", "kind", "subject", "run id", "process", "noticed", title="interrupted runs")
        for r in interrupted:
            table.add_row(str(r["started_at"])[:19], r["kind"], r["subject"], r["run_id"], f"{r['pid']} on {r['host']}",
                          str(r["interrupted_at"] or "now (recorded by the next writer)")[:19])
        out.print(table)
    table = Table("started", "source", "status", "read", "new pairs", "revision")
    for r in runs:
        s = json.loads(r["summary"]) if r["summary"] else {}
        table.add_row(str(r["started_at"])[:19], r["source"], r["status"], str(s.get("read", "")), str(s.get("new_pairs", "")), r["source_revision"])
    out.print(table)


def _hub_reachable(timeout: float = 3.0) -> bool:
    import urllib.request

    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    try:
        urllib.request.urlopen("https://huggingface.co/api/datasets/nvidia/HelpSteer3", timeout=timeout).close()
        return True
    except OSError:
        return False


@app.command()
@_stoppable("demo")
def demo(
    workdir: Path = typer.Option(Path("data/demo"), "--workdir", help="where the demo writes its inputs"),
    rows: int = typer.Option(2000, "--rows", min=10),
    publish_to: str = typer.Option("published", "--publish-to"),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse"),
) -> None:
    """The main job on embedded defaults: ingest, judge (a SIMULATED stand-in judge), version, publish."""
    _settings_env(warehouse)
    from common.settings import get_settings
    from flows.ingest import load_eval_set
    from flows.pipeline import curate_pipeline
    from tasks.ingest import synth as s
    from testing.genrm_standin import StandinConfig, StandinProcess

    workdir.mkdir(parents=True, exist_ok=True)
    prompts = s.synth_eval_prompts(200)
    s.write_eval_set(workdir / "eval_prompts.jsonl", prompts)
    if _hub_reachable():
        sources = ["helpsteer3"]
        err.print(f"[bold]demo:[/] the Hub is reachable: ingesting the first {rows} rows of HelpSteer3 (pinned revision)")
    else:
        s.write_synth(workdir / "helpsteer3.jsonl", "helpsteer3", rows, seed=1, contamination_rate=0.01,
                      eval_prompts=prompts)
        s.write_synth(workdir / "arena.jsonl", "arena", rows // 2, seed=2, contamination_rate=0.01, eval_prompts=prompts)
        sources = [f"helpsteer3={workdir / 'helpsteer3.jsonl'}", f"arena={workdir / 'arena.jsonl'}"]
        err.print(f"[bold]demo:[/] the Hub is not reachable: using a generated sample in {workdir} (synthetic rows)")
    _run(load_eval_set, "rm-bench", str(workdir / "eval_prompts.jsonl"))
    err.print("[bold yellow]demo:[/] judging with the GenRM STAND-IN: its verdicts are SIMULATED, not the real judge")
    with StandinProcess(StandinConfig(capacity=64, latency_mean=0.01, position_bias=0.3)) as standin:
        summary = _run(curate_pipeline, sources, [standin.url], None, "swap", "demo-preferences", None, publish_to,
                       limit=rows)
    _print_pipeline(summary)
    published = (summary.get("publish") or {}).get("target", "(not published)")
    me = os.path.relpath(sys.argv[0]) if os.path.exists(sys.argv[0]) else "curate"
    out.print(
        f"\n[bold]made:[/] warehouse {get_settings().warehouse}; dataset demo-preferences published at {published}"
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
        f"  {me} run --source helpsteer3 --endpoint http://GPU-HOST:5000/v1 --dataset preferences\n",
        soft_wrap=True,
    )


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    main()

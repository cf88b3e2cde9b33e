"""`curate`: the one entry point. Thin: parse flags, run a flow, print its summary."""

from __future__ import annotations

import functools
import inspect
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

from common.errors import allowed_range  # noqa: E402
from common.settings import Settings  # noqa: E402
from curator.output import cell, judge_label, print_table, staged_group, version_lines, widen_help  # noqa: E402
from curator.review_cli import review_app  # noqa: E402
from tasks.ingest.context import IngestRun  # noqa: E402
from tasks.publish.context import PublishRun  # noqa: E402
from schemas.summaries import PipelineSummary  # noqa: E402
from tasks.curate.policy import FilterPolicy  # noqa: E402
from tasks.evaluate.benchmarks import BENCHMARKS  # noqa: E402
from tasks.judge.strategies import names as strategy_names  # noqa: E402
from tasks.judge.strategies import usage as strategy_usage  # noqa: E402

app = typer.Typer(cls=staged_group(), add_completion=False, no_args_is_help=True,
                  help="Curate human-preference data into versioned preference datasets.")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluation sets whose prompts are kept out of training data.")
app.add_typer(eval_app, name="eval-set")
app.add_typer(review_app, name="review")
err = Console(stderr=True)
out = Console(soft_wrap=True)  # a line is never broken at 80 columns in a pipe or a log
widen_help()


def _warehouse_option() -> Any:
    return typer.Option(None, "--warehouse", metavar="FILE", help="the DuckDB warehouse (default: CURATE_WAREHOUSE, "
                        "else ./data/warehouse.duckdb)")


def _json_option() -> Any:
    return typer.Option(False, "--json", help="print the result as one JSON object on stdout (messages on stderr)")


def _bounds(model: Any, field: str) -> dict[str, Any]:
    """typer's `min` / `max` from a model field's closed bounds (`Settings`, a run context): the flag refuses what
    the model refuses, on every path, from one place. An open bound, which typer cannot say, is left to the model."""
    metadata = model.model_fields[field].metadata
    found = {k: getattr(m, k) for m in metadata for k in ("ge", "le") if getattr(m, k, None) is not None}
    return {"min": found.get("ge"), "max": found.get("le")}


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="show Prefect's logs and tracebacks on stderr "
                                       "(by default they go to logs/curate.log beside the warehouse)")) -> None:
    from curator.cli_logging import quiet_terminal

    quiet_terminal(verbose)


def _settings_env(warehouse: Optional[Path], **settings: Any) -> None:
    """Flags become settings (CURATE_* variables) for this process and the flows it runs."""
    from common.settings import get_settings

    given = {k: v for k, v in {"warehouse": warehouse, **settings}.items() if v not in (None, False)}
    for name, value in given.items():
        os.environ[f"CURATE_{name.upper()}"] = "true" if value is True else str(value)
    if given:
        get_settings.cache_clear()
    _guarded(get_settings)  # a CURATE_* value out of its bounds is one line naming it, before anything starts


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
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    # No heartbeats to a server that ends with this command: nothing would read them, and a flow's end waits up
    # to a second for the heartbeat thread.
    with temporary_settings({PREFECT_API_URL: _guarded(_api.wait_ready, _api_timeout()),
                             PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
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


def _warehouse_exists() -> bool:
    from common.settings import get_settings

    return Path(get_settings().warehouse).exists()


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
                marked = wh.runs.mark_own_runs_interrupted(since)
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


def _check_judge(endpoints: Optional[list[str]], launch: Optional[str], refuse: Any = None) -> Any:
    """Refuse an unusable judge in seconds, before any flow (or the Prefect API) starts, and what `refuse` refuses
    of what the check found. Returns what the check found (None when the run starts its own server)."""
    from common.settings import get_settings
    from tasks.judge.endpoints import check_judge

    settings = get_settings()
    if launch or settings.judge_launch:
        return None  # a server started by the run itself is checked once it is up
    report = _guarded(check_judge, list(endpoints or settings.judge_endpoints), settings)
    if refuse is not None:
        _guarded(refuse, report)
    for p in report.unreachable:
        err.print(f"warning: judge endpoint {p.url} does not answer ({p.error}); judging with the others",
                  highlight=False, soft_wrap=True)
    if report.simulated:
        err.print("[bold yellow]note:[/] the judge endpoint serves the GenRM STAND-IN: verdicts are SIMULATED "
                  "and marked so", highlight=False)
    if report.weights:
        from tasks.judge.weights import weights_words

        err.print(f"note: the judge endpoint serves {weights_words(report.weights)}, not the published "
                  f"{settings.judge_model}: verdicts are filed under a configuration of their own", highlight=False,
                  markup=False, soft_wrap=True)
    return report


def _preflight(source: str, path: Optional[Path], kind: str, batch_size: Optional[int] = None,
               limit: Optional[int] = None) -> None:
    """Refuse what can be refused before a flow run starts, arguments first, then files: the source's name, its
    file (there, readable, and of this source), the warehouse."""
    from common.settings import get_settings
    from curator import refusals
    from tasks.ingest.sources import get_source

    def check() -> None:
        settings = get_settings()
        found = get_source(source, kind=kind)
        refusals.input_file(found, path, batch_size or settings.batch_size, limit)
        refusals.warehouse(settings, creates=True)  # migrates, or names the process holding the lock

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


def _print_json(value: Any) -> None:
    from common.numbers import jsonable

    sys.stdout.write(json.dumps(value, default=jsonable) + "\n")


def _print_summary(title: str, summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        _print_json(summary)
        return
    print_table(out, ["", ""], [(key, cell(value)) for key, value in summary.items()], title=title, show_header=False)


@app.command()
@_stoppable("ingest")
def ingest(
    source: str = typer.Option(..., "--source", "-s", help="a pair source by name, e.g. helpsteer3 (an unknown "
                                                         "name is refused with the list of them)"),
    path: Optional[Path] = typer.Option(None, "--path", help="local JSONL(.gz) or Parquet file instead of the Hub"),
    revision: Optional[str] = typer.Option(None, "--revision", help="Hub branch, tag or commit (default: the pinned "
                                                                    "one)"),
    limit: Optional[int] = typer.Option(None, "--limit", **_bounds(IngestRun, "limit"), help="read at most N rows"),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", **_bounds(Settings, "batch_size"),
                                             help="rows per batch written in one transaction (default: "
                                                  "CURATE_BATCH_SIZE, 5000)"),
    force: bool = typer.Option(False, "--force", help="read a revision again even if it was read in full"),
    warehouse: Optional[Path] = _warehouse_option(),
    as_json: bool = _json_option(),
) -> None:
    """Read a source, validate, deduplicate, decontaminate, and land new pairs in the warehouse."""
    _settings_env(warehouse)
    if force or limit is not None or not _warehouse_exists():
        _start_prefect_api()  # no answer without a flow is possible: boot the API while the inputs are checked
    run = _guarded(IngestRun.of, source, path, revision, limit, force, batch_size=batch_size)
    _preflight(run.source, run.path, "pairs", run.batch_size, run.limit)
    from curator.noop import ingest_noop

    summary = _noop_answer(ingest_noop, run)
    if summary is None:
        from flows.ingest import ingest as ingest_flow
        from tasks.ingest.read import file_revision

        if run.path is not None:
            file_revision(run.path)  # hashed while Prefect's API boots; the flow finds the hash remembered
        with _Bar(enabled=not as_json and sys.stderr.isatty()):
            # the flow builds the same context from its parameters (a deployment passes no other way)
            summary = _run(ingest_flow, run.source, run.file, run.revision, run.limit, None, batch_size, run.force)
    _print_summary(f"ingest {run.source}", summary, as_json)


@eval_app.command("load")
@_stoppable("eval-set load")
def eval_set_load(
    benchmark: str = typer.Argument(..., help="an evaluation set (`curate sources` lists them)"),
    path: Optional[Path] = typer.Option(None, "--path", help="local JSONL or Parquet file instead of the Hub"),
    revision: Optional[str] = typer.Option(None, "--revision", help="Hub branch, tag or commit (default: the pinned "
                                                                    "one)"),
    warehouse: Optional[Path] = _warehouse_option(),
    as_json: bool = _json_option(),
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
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="OpenAI-compatible base URL "
                                                                                "(repeatable)"),
    strategy: Optional[str] = typer.Option(None, "--strategy", help=strategy_usage(sep=" | ")),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="judge at most N pairs"),
    shard: Optional[str] = typer.Option(None, "--shard", help="only hash bucket i of n, as i/n (0 <= i < n)"),
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
    warehouse: Optional[Path] = _warehouse_option(),
    as_json: bool = _json_option(),
) -> None:
    """Judge the pending pairs with the GenRM; reruns send only what is missing."""
    _settings_env(warehouse, judge_allow_other_model=allow_other_model)
    if launch_vllm and launch_standin:
        _fail("choose one of --launch-vllm and --launch-standin")
    from common.settings import get_settings
    from curator import refusals

    launch = "vllm" if launch_vllm else "standin" if launch_standin else None
    _guarded(refusals.endpoint_given, endpoint, launch, get_settings())  # arguments, the warehouse, the endpoints
    _guarded(refusals.strategy, strategy, get_settings())
    _guarded(refusals.shard, shard)
    _guarded(refusals.warehouse, get_settings())
    report = _check_judge(endpoint, launch)
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
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="OpenAI-compatible base URL "
                                                                                "(repeatable)"),
    launch_vllm: bool = typer.Option(False, "--launch-vllm", help="start vLLM's OpenAI server on this worker"),
    port: Optional[int] = typer.Option(None, "--port", min=1, max=65535, help="port of the launched server (default "
                                                                              "5000)"),
    max_in_flight: Optional[int] = typer.Option(None, "--max-in-flight", min=1, help="at most N requests in flight "
                                                "per endpoint (default: found from the server's batch)"),
    as_json: bool = _json_option(),
) -> None:
    """Judge one shard of a sharded plan by hand, as a GPU worker does; results go to the exchange folder."""
    from curator import refusals

    _guarded(refusals.shard_work, str(work))  # a changed work file, or a key on one side only
    from flows.judge import judge_worker

    with _Bar(enabled=not as_json and sys.stderr.isatty()):
        summary = _run(judge_worker, str(work), endpoint or None, "vllm" if launch_vllm else None, port, max_in_flight)
    _print_summary("judge shard", summary, as_json)


@app.command()
@_stoppable("run")
def run(
    source: Optional[list[str]] = typer.Option(None, "--source", "-s", help="NAME (Hub) or NAME=FILE, repeatable"),
    endpoint: Optional[list[str]] = typer.Option(None, "--endpoint", "-e", help="judge base URL, repeatable"),
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
    warehouse: Optional[Path] = _warehouse_option(),
    shards: int = typer.Option(0, "--shards", min=0, help="judge in N shards on the gpu work pool (needs a Prefect "
                                                          "server; 0: here)"),
    allow_other_model: bool = typer.Option(False, "--allow-other-model", help="judge with an endpoint that serves "
                                           "another model than the configured judge (CURATE_JUDGE_MODEL)"),
    allow_other_weights: bool = typer.Option(False, "--allow-other-weights", help="publish to the Hub a version "
                                             "judged by other weights than the judge's published ones"),
    as_json: bool = _json_option(),
) -> None:
    """The whole pipeline: ingest → judge → build version → publish."""
    _settings_env(warehouse, judge_allow_other_model=allow_other_model)
    from common.settings import get_settings
    from curator import refusals
    from schemas.version import check_name, hub_repo
    from tasks.curate.policy import load_policy

    settings = get_settings()
    # arguments, then files (each source's file, the policy, the warehouse), then the endpoints and the Hub
    _guarded(refusals.skipped_stages, skip)
    if "judge" not in (skip or []) and not shards:
        _guarded(refusals.endpoint_given, endpoint, "vllm" if launch_vllm else None, settings)
    _guarded(refusals.strategy, strategy, settings)
    _guarded(check_name, dataset)
    repo = _guarded(hub_repo, publish_to) if publish_to and "publish" not in (skip or []) else None
    inputs = _guarded(refusals.source_specs, source) if "ingest" not in (skip or []) else []
    for found, path in inputs:
        _guarded(refusals.input_file, found, path, settings.batch_size)
    _guarded(load_policy, policy)
    _guarded(refusals.warehouse, settings, creates="ingest" not in (skip or []))
    if "publish" not in (skip or []):
        _guarded(refusals.publish_folder, publish_to, dataset)
    hub_weights = None  # the judge's weights, when they are not the published ones and the version goes to the Hub
    if repo is not None and "judge" not in (skip or []):
        hub_weights = functools.partial(refusals.judge_weights_to_hub, settings, launch="vllm" if launch_vllm else None,
                                        shards=shards, to=publish_to, allow_other_weights=allow_other_weights)
    report = None
    if "judge" not in (skip or []) and not shards:
        report = _check_judge(endpoint, "vllm" if launch_vllm else None, refuse=hub_weights)
    if hub_weights is not None and report is None:  # a server the run starts, or sharded: known from the settings
        _guarded(hub_weights, None)
    if repo is not None:
        from tasks.publish.hub import check_reachable

        _guarded(check_reachable, repo, retries=settings.hub_retries, retry_wait=settings.hub_retry_wait)
    from flows.pipeline import curate_pipeline

    summary = _run(curate_pipeline, source, endpoint or None, "vllm" if launch_vllm else None, strategy, dataset,
                   str(policy) if policy else None, publish_to, skip, judge_shards=shards,
                   allow_other_weights=allow_other_weights)
    if as_json:
        _print_json(summary)
    else:
        _print_pipeline(summary)
    _judge_outcome(summary.get("judge"))


def _print_pipeline(summary: PipelineSummary) -> None:
    from common.numbers import count

    for name, s in summary["ingest"].items():
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
    if summary.get("version"):
        v = summary["version"]
        out.print(f"version: {v.get('name')} v{v.get('version')} with {count(v.get('rows'))} rows" +
                  (" (SIMULATED verdicts)" if v.get("simulated") or (v.get("stats") or {}).get("simulated") else "") +
                  (f" (judged by other weights: {v['judge_weights']})" if v.get("judge_weights") else "") +
                  (f" ({v['note']})" if v.get("note") else "") if "error" not in v else f"version: {v['error']}")
    if summary.get("publish"):
        p = summary["publish"]
        out.print(f"published: {p['target']}" + (" (already there)" if p["already_published"] else ""))


@app.command("evaluate-judge")
@_stoppable("evaluate-judge")
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
    warehouse: Optional[Path] = _warehouse_option(),
    write_oracle: Optional[Path] = typer.Option(None, "--write-oracle", help="only write the labels as a stand-in "
                                                "--oracle file (checking the scoring) and stop"),
    as_json: bool = _json_option(),
) -> None:
    """Judge a benchmark and report accuracy by category beside the model card's figures."""
    _settings_env(warehouse)
    from common.settings import get_settings
    from curator import refusals

    _guarded(refusals.benchmark, benchmark, strategy, get_settings())
    if write_oracle is None:
        _guarded(refusals.endpoint_given, endpoint, "vllm" if launch_vllm else None, get_settings())
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
    _guarded(refusals.warehouse, get_settings(), creates=True)  # a benchmark needs no ingested pairs
    _check_judge(endpoint, "vllm" if launch_vllm else None)
    from flows.evaluate import evaluate_judge as evaluate_flow

    with _Bar(enabled=not as_json and sys.stderr.isatty()):
        result = _run(evaluate_flow, benchmark, str(path) if path else None, endpoint or None, strategy, limit,
                      "vllm" if launch_vllm else None, None, revision)
    if as_json:
        _print_json(result)
        return
    card = result["model_card"]
    out.print(f"{result['benchmark']}: accuracy {result['accuracy']}% (model card {card['overall']}%) over "
              f"{result['scored']} comparisons, {result['failed']} failed; served by {', '.join(result['served_models'])}")
    for name, acc in [*result["by_category"].items(), *result.get("by_difficulty", {}).items()]:
        out.print(f"  {name:<10} {acc}%" + (f"   (model card {card[name]}%)" if name in card else ""))
    if result.get("domains_missing"):
        out.print(f"  not in this copy: {', '.join(result['domains_missing'])} (the overall averages the rest)")


@app.command()
def snapshot(warehouse: Optional[Path] = _warehouse_option()) -> None:
    """Refresh the dashboard's snapshot from the warehouse (the pipeline does this after each stage)."""
    _settings_env(warehouse)
    from common.settings import get_settings
    from tasks.judge.cost import cost_model
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
    port: int = typer.Option(8501, "--port", min=1, max=65535, help="port to serve on"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to serve on (0.0.0.0: every interface)"),
    warehouse: Optional[Path] = _warehouse_option(),
    refresh: bool = typer.Option(True, "--refresh/--no-refresh", help="refresh the snapshot first when the warehouse "
                                                                      "is free"),
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

    from common.processes import stop_process

    child = subprocess.Popen(argv)

    def forward(signum, frame):  # noqa: ANN001, ARG001
        if child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        try:
            return child.wait()
        finally:
            stop_process(child, 15)  # we are leaving for another reason: take the server along
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


# a policy key's `--no-<flag>` reads worse than these
_POLICY_OFF_FLAGS = {"require_order_agreement": "--allow-order-disagreement",
                     "require_score_agreement": "--allow-score-disagreement",
                     "exclude_contaminated": "--include-contaminated"}


def _policy_flag(key: str) -> inspect.Parameter:
    """The flag `--<key-with-dashes>` of a filter-policy key: the key's description with its range or choices and
    default as help; None unless given. Its value is checked by the policy itself, as a policy file's is."""
    from types import NoneType, UnionType
    from typing import Literal, Union, get_args, get_origin

    field = FilterPolicy.model_fields[key]
    kind = field.annotation
    if get_origin(kind) in (Union, UnionType):
        kind = next(a for a in get_args(kind) if a is not NoneType)
    flag, default = "--" + key.replace("_", "-"), field.default
    decls = [flag]
    if kind is bool:
        decls = [f"{flag}/{_POLICY_OFF_FLAGS.get(key, '--no-' + flag[2:])}"]
        said = f"default: {'on' if default else 'off'}"
    elif get_origin(kind) is Literal:
        kind, said = str, f"{' | '.join(get_args(kind))}; default {default}"
    else:
        said = "; ".join([allowed_range(FilterPolicy, key) or "any",
                          "default: none" if default is None else f"default {default}"])
    return inspect.Parameter(key, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Optional[kind],
                             default=typer.Option(None, *decls, help=f"{field.description} ({said})"))


def _with_policy_flags(command):
    """One flag per filter-policy key, generated from the policy model, before the command's `warehouse`; the
    values reach the command's `**policy_flags` (None: not given)."""
    own = [p for p in inspect.signature(command).parameters.values() if p.kind is not p.VAR_KEYWORD]
    at = [p.name for p in own].index("warehouse")
    command.__signature__ = inspect.Signature([*own[:at], *map(_policy_flag, FilterPolicy.model_fields),
                                               *own[at:]])
    return command


@app.command("build-version")
@_stoppable("build-version")
@_with_policy_flags
def build_version(
    name: str = typer.Argument(..., help="dataset name (letters, digits, . _ -)"),
    policy: Optional[Path] = typer.Option(None, "--policy", help="filter policy TOML file (a flag wins over its key)"),
    judge_config: Optional[str] = typer.Option(None, "--judge-config", help="judge configuration id (default: latest)"),
    warehouse: Optional[Path] = _warehouse_option(),
    as_json: bool = _json_option(),
    **policy_flags: Any,
) -> None:
    """Materialize the next immutable version of NAME from the judged pairs and a filter policy."""
    _settings_env(warehouse)
    overrides = {k: v for k, v in policy_flags.items() if v is not None}
    from curator import refusals
    from tasks.curate.context import VersionRun

    # arguments (the name, the flags' values), then files (the policy, the warehouse and its verdicts)
    run = _guarded(VersionRun.of, name, policy, overrides, judge_config)
    _guarded(refusals.warehouse, run.settings)
    _guarded(refusals.judged, run.settings, run.judge_config_id)
    from curator.noop import version_noop

    summary = _noop_answer(version_noop, run)
    if summary is None:
        from flows.versions import build_version as build_flow

        summary = _run(build_flow, run.name, str(policy) if policy else None, overrides, judge_config)
    if as_json:
        _print_json(summary)
    else:
        print_table(out, ["", ""], version_lines(summary), title=f"version {name}", show_header=False)


@app.command()
def versions(
    name: Optional[str] = typer.Argument(None, help="only this dataset's versions (default: every dataset)"),
    warehouse: Optional[Path] = _warehouse_option(),
    as_json: bool = _json_option(),
) -> None:
    """List dataset versions: rows, content hash, judge (SIMULATED or real), where published."""
    _settings_env(warehouse)
    from common.numbers import count
    from common.settings import get_settings
    from warehouse.store import Warehouse

    with _guarded(Warehouse, get_settings().warehouse, read_only=True) as wh:
        found = wh.versions.versions(name)
        known = sorted({v["name"] for v in wh.versions.versions()}) if name and not found else []
    if name and not found:
        _fail(f"no dataset named {name!r}" + (f"; datasets: {', '.join(known)}" if known else ": no version yet"),
              f"build one with `curate build-version {name}`" if not known else None)
    if as_json:
        _print_json(found)
        return
    print_table(out, ["name", "version", "parent", "created", "rows", "judge", "content hash", "judge config",
                      "published"],
                [(v["name"], v["version"], v["parent_version"], str(v["created_at"])[:19], count(v["row_count"]),
                  judge_label(v["simulated"], v["judge_weights"]), v["content_hash"], v["judge_config_id"],
                  v["published_tag"]) for v in found])


@app.command()
def diff(
    name: str = typer.Argument(..., help="the dataset"),
    old: int = typer.Argument(..., metavar="A", min=1, help="the earlier version (a number, as `curate versions` "
                                                            "lists it)"),
    new: int = typer.Argument(..., metavar="B", min=1, help="the later version"),
    warehouse: Optional[Path] = _warehouse_option(),
    as_json: bool = _json_option(),
) -> None:
    """Pairs added, removed and flipped between versions A and B of NAME, and how the statistics moved."""
    _settings_env(warehouse)
    from common.numbers import count
    from common.settings import get_settings
    from tasks.curate.diff import changes_text, diff_versions
    from warehouse.store import Warehouse

    with _guarded(Warehouse, get_settings().warehouse, read_only=True) as wh:
        metas = {v: wh.versions.version_meta(name, v) for v in (old, new)}
        missing = [v for v, m in metas.items() if m is None or m["version"] != v]
        if missing:
            known = [v["version"] for v in wh.versions.versions(name)]
            _fail(f"{name} has no version {missing[0]}" + (f": its versions are {', '.join(f'v{k}' for k in known)}"
                                                           if known else ": no such dataset"))
        result = diff_versions(wh.versions.version_rows(name, old), wh.versions.version_rows(name, new), metas[old], metas[new])
    if as_json:
        _print_json(result)
        return
    summary = {"added": len(result["added"]), "removed": len(result["removed"]), "flipped": len(result["flipped"]),
               "values moved": len(result["changed"])}
    def counted(value: Any) -> str:
        return cell({k: count(v) for k, v in value.items()} if isinstance(value, dict) else value)

    summary["rows"] = f"{count(result['before']['rows'])} -> {count(result['after']['rows'])}"
    for key in ("mean_margin", "mean_confidence", "by_source", "by_split"):
        summary[key] = f"{counted(result['before'][key])} -> {counted(result['after'][key])}"
    summary["policy"] = changes_text(result["policy_changes"]) or "unchanged"
    if result["judge_config"]:
        summary["judge configuration"] = " -> ".join(result["judge_config"])
    if result["note"]:
        summary["note"] = result["note"]
    _print_summary(f"{name} v{old} -> v{new}", summary, False)


@app.command()
@_stoppable("publish")
def publish(
    name: str = typer.Argument(..., help="the dataset (letters, digits, . _ -)"),
    version: Optional[int] = typer.Argument(None, **_bounds(PublishRun, "version"), help="the version to publish "
                                            "(default: the latest)"),
    to: str = typer.Option("published", "--to", help="a local folder (Hub layout) or hf://ORG/NAME"),
    private: bool = typer.Option(False, "--private", help="create the Hub repo private"),
    allow_simulated: bool = typer.Option(False, "--allow-simulated", help="push a version judged by the SIMULATED "
                                         "stand-in to the Hub anyway (its card still says so)"),
    allow_other_weights: bool = typer.Option(False, "--allow-other-weights", help="push a version judged by other "
                                             "weights than the judge's published ones to the Hub anyway (its card "
                                             "still names them)"),
    warehouse: Optional[Path] = _warehouse_option(),
    as_json: bool = _json_option(),
) -> None:
    """Publish a version: Parquet shards per format and split, a dataset card, a tag per version."""
    _settings_env(warehouse)
    from curator import refusals
    from curator.noop import publish_noop

    # arguments (the names), then files (the version and whether it may go where asked), then the Hub
    run = _guarded(PublishRun.of, name, version, to, private, allow_simulated, allow_other_weights=allow_other_weights)
    _guarded(refusals.version, run.settings, run.name, run.version, run.to, run.allow_simulated,
             run.allow_other_weights)
    if run.repo is not None:  # an offline host fails in seconds, not after Prefect's start-up
        from tasks.publish.hub import check_reachable

        _guarded(check_reachable, run.repo, retries=run.settings.hub_retries, retry_wait=run.settings.hub_retry_wait)
    summary = _noop_answer(publish_noop, run)
    if summary is None:
        from flows.publish import publish as publish_flow

        summary = _run(publish_flow, run.name, run.version, run.to, run.private, allow_simulated=run.allow_simulated,
                       allow_other_weights=run.allow_other_weights)
    if not as_json:
        summary = {**summary, "files": f"{len(summary['files'])} files"}
    _print_summary(f"publish {name}", summary, as_json)


@app.command()
def synth(
    kind: str = typer.Argument(..., help="a source with synthetic rows (`curate sources` marks them) or eval"),
    out_path: Path = typer.Argument(..., metavar="OUT", help="JSONL file to write (a .manifest.json goes beside it)"),
    rows: int = typer.Option(1000, "--rows", "-n", min=1, help="rows to write"),
    seed: int = typer.Option(0, "--seed", help="the same seed writes the same rows (any integer)"),
    pair_bytes: int = typer.Option(6000, "--pair-bytes", min=1, help="median text bytes per pair"),
    exact_dup_rate: float = typer.Option(0.03, "--exact-dup-rate", help="share of rows repeating an earlier pair, A "
                                                                        "and B maybe swapped (0 .. 1)"),
    near_dup_rate: float = typer.Option(0.03, "--near-dup-rate", help="share of rows lightly edited from an earlier "
                                                                      "one (0 .. 1)"),
    bad_rate: float = typer.Option(0.02, "--bad-rate", help="share of rows broken on purpose, each a quarantine "
                                                            "reason (0 .. 1)"),
    contamination_rate: float = typer.Option(0.0, "--contamination-rate", help="share of rows whose prompt is one of "
                                                                               "the made-up evaluation prompts "
                                                                               "(0 .. 1)"),
    eval_prompts: int = typer.Option(200, "--eval-prompts", min=1, help="size of the made-up evaluation set (the "
                                                                        "`eval` kind writes it)"),
) -> None:
    """Write seeded synthetic rows with planted duplicates, near duplicates and bad rows."""
    from tasks.ingest import synth as s

    kinds = (*s.synth_kinds(), "eval")
    if kind not in kinds:
        _fail(f"unknown kind {kind!r}: use {', '.join(kinds[:-1])} or {kinds[-1]}")
    for flag, rate in (("--exact-dup-rate", exact_dup_rate), ("--near-dup-rate", near_dup_rate),
                       ("--bad-rate", bad_rate), ("--contamination-rate", contamination_rate)):
        if not 0.0 <= rate <= 1.0:
            _fail(f"{flag} is a share of the rows: 0 .. 1, not {rate}")

    prompts = s.synth_eval_prompts(eval_prompts)
    if kind == "eval":
        s.write_eval_set(out_path, prompts)
        err.print(f"wrote {len(prompts)} evaluation prompts to {out_path}")
        return
    m = s.write_synth(
        out_path, kind, rows, seed, pair_bytes=pair_bytes, exact_dup_rate=exact_dup_rate, near_dup_rate=near_dup_rate,
        bad_rate=bad_rate, contamination_rate=contamination_rate, eval_prompts=prompts,
    )
    several = (f"; {sum(m.pairs.values())} valid pairs from {len(m.pairs)} rows, {len(m.no_clear_preference)} rows "
               "whose completions all tie") if m.pairs else ""  # the kinds that make several pairs a row
    err.print(
        f"wrote {m.rows} {kind} rows to {out_path}: {len(m.exact_duplicates)} exact duplicates, "
        f"{len(m.near_duplicates)} near duplicates, {len(m.bad_rows)} bad rows, {len(m.contaminated)} contaminated"
        f"{several}"
    )


@app.command()
def sources() -> None:
    """List the sources and evaluation sets this build knows."""
    from tasks.ingest.sources import SOURCES

    print_table(out, ["name", "kind", "hub dataset", "splits", "license", "synthetic rows"],
                [(s.name, s.kind, s.hub_id + (f" ({s.config})" if s.config else ""), ", ".join(s.splits), s.license,
                  s.synth is not None) for s in SOURCES.values()])


@app.command()
def status(
    warehouse: Optional[Path] = _warehouse_option(),
    as_json: bool = _json_option(),
) -> None:
    """What the warehouse holds: counts, judging per judge configuration, versions with their figures, runs."""
    _settings_env(warehouse)
    from common.settings import get_settings
    from warehouse.store import Warehouse

    with _guarded(Warehouse, get_settings().warehouse, read_only=True) as wh:
        counts = wh.counts()
        runs = wh.runs.ingest_runs(10)
        interrupted = wh.runs.interrupted_runs(10)
        judging = wh.judging.judging_status()
        found = wh.versions.versions()
    if as_json:
        _print_json({"counts": counts, "runs": runs, "interrupted": interrupted, "judging": judging, "versions": found})
        return
    from common.numbers import count, percent

    _print_summary("warehouse", {k: count(v) for k, v in counts.items()}, False)
    if judging:
        print_table(out, ["judge configuration", "model", "judgments ok", "failed", "pairs judged", "pairs pending"],
                    [(j["judge_config_id"], "SIMULATED stand-in" if j["simulated"] else
                      judge_label(False, j["weights"], j["model"]), count(j["ok"]),
                      count(j["failed"]), count(counts["pairs_for_curation"] - j["pairs_pending"]),
                      count(j["pairs_pending"])) for j in judging], title="judging")
    if found:
        def figure(v: dict[str, Any], key: str) -> Any:
            return (v["figures"] or {}).get(key)

        def agreement(v: dict[str, Any]) -> str:
            kept = (figure(v, "human_agreement") or {}).get("kept") or {}
            return f"{percent(kept['rate'])} of {count(kept['comparable'])}" if kept.get("rate") is not None else "-"

        print_table(out, ["name", "version", "pairs judged", "pairs kept", "agreement with humans", "judge",
                          "content hash", "published"],
                    [(v["name"], v["version"], count(figure(v, "pairs_judged")), count(v["row_count"]), agreement(v),
                      judge_label(v["simulated"], v["judge_weights"]), v["content_hash"], v["published_tag"])
                     for v in found],
                    title="versions")
    if interrupted:
        print_table(out, ["started", "kind", "subject", "run id", "process", "noticed"],
                    [(str(r["started_at"])[:19], r["kind"], r["subject"], r["run_id"], f"{r['pid']} on {r['host']}",
                      str(r["interrupted_at"] or "now (recorded by the next writer)")[:19]) for r in interrupted],
                    title="interrupted runs")
    rows = []
    for r in runs:
        s = json.loads(r["summary"]) if r["summary"] else {}
        rows.append((str(r["started_at"])[:19], r["source"], r["status"], count(s.get("read")),
                     count(s.get("new_pairs")), r["source_revision"]))
    print_table(out, ["started", "source", "status", "read", "new pairs", "revision"], rows, title="ingest runs")


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


@app.command()
@_stoppable("demo")
def demo(
    workdir: Path = typer.Option(Path("data/demo"), "--workdir", help="where the demo writes its inputs"),
    rows: int = typer.Option(2000, "--rows", min=10, help="HelpSteer3 rows to read (arena-shaped rows: half as many)"),
    publish_to: str = typer.Option("published", "--publish-to", help="the folder the version is published to (Hub "
                                                                     "layout)"),
    warehouse: Optional[Path] = _warehouse_option(),
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
    out.print(f"[bold]demo:[/] reading {read_from}", highlight=False)
    _run(load_eval_set, DEMO_EVAL_SET, str(workdir / "eval_prompts.jsonl"))
    out.print("[bold yellow]demo:[/] judging with the GenRM STAND-IN: its verdicts are SIMULATED, not the real judge",
              highlight=False)
    with StandinProcess(StandinConfig(capacity=64, latency_mean=0.01, position_bias=0.3)) as standin:
        summary = _run(curate_pipeline, sources, [standin.url], None, "swap", "demo-preferences", None, publish_to,
                       limit=limit)
    _print_pipeline(summary)
    published = (summary.get("publish") or {}).get("target", "(not published)")
    me = os.path.relpath(sys.argv[0]) if os.path.exists(sys.argv[0]) else "curate"
    out.print(
        f"\n[bold]made:[/] from {made_from}: warehouse {get_settings().warehouse}; "
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
        f"  {me} run --source helpsteer3 --endpoint http://GPU-HOST:5000/v1 --dataset preferences\n",
        soft_wrap=True,
    )


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    main()

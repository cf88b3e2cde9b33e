"""`curate ingest`, `curate eval-set load`, `curate synth`, `curate sources`: rows into the warehouse."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from common.settings import Settings
from curator.options import bounds, json_option, sources_file_option, warehouse_option
from curator.output import err, out, print_json, print_summary, print_table
from curator.progress_bar import ProgressBar
from curator.runner import Runner, apply_flags, fail, guarded, runs_flows
from tasks.ingest.context import IngestRun

commands = typer.Typer()
eval_set = typer.Typer(no_args_is_help=True, help="Evaluation sets whose prompts are kept out of training data.")


def _preflight(source: str, path: Optional[Path], kind: str, batch_size: Optional[int] = None,
               limit: Optional[int] = None) -> None:
    """Refuse what can be refused before a flow run starts, arguments first, then files: the source's name, its
    file (there, readable, and of this source), the warehouse, the personal-data scan's detector model."""
    from common.settings import get_settings
    from curator import refusals
    from tasks.ingest.sources import get_source

    def check() -> None:
        settings = get_settings()
        found = get_source(source, kind=kind)
        refusals.input_file(found, path, batch_size or settings.batch_size, limit, settings.row_byte_limit)
        refusals.warehouse(settings, creates=True)  # migrates, or names the process holding the lock
        refusals.pii_detector(settings)  # the scan's detector model, when one is named

    guarded(check)


@commands.command()
@runs_flows("ingest")
def ingest(
    source: str = typer.Option(..., "--source", "-s", help="a pair source by name, built-in or declared (`curate "
                                                         "sources` lists them; an unknown name is refused with the "
                                                         "list of them)"),
    path: Optional[Path] = typer.Option(None, "--path", help="local JSONL(.gz) or Parquet file instead of the Hub"),
    revision: Optional[str] = typer.Option(None, "--revision", help="Hub branch, tag or commit (default: the pinned "
                                                                    "one)"),
    limit: Optional[int] = typer.Option(None, "--limit", **bounds(IngestRun, "limit"), help="read at most N rows"),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", **bounds(Settings, "batch_size"),
                                             help="rows per batch written in one transaction (default: "
                                                  "CURATE_BATCH_SIZE, 5000)"),
    force: bool = typer.Option(False, "--force", help="read a revision again even if it was read in full"),
    warehouse: Optional[Path] = warehouse_option(),
    sources_file: Optional[Path] = sources_file_option(),
    as_json: bool = json_option(),
    runner: Runner = None,
) -> None:
    """Read a source, validate, deduplicate, decontaminate, and land new pairs in the warehouse."""
    apply_flags(warehouse, sources_file=sources_file)
    run = guarded(IngestRun.of, source=source, path=path, revision=revision, limit=limit, force=force,
                  batch_size=batch_size)
    if force or limit is not None or not run.warehouse.exists():
        runner.start_api()  # no answer without a flow is possible: boot the API while the inputs are checked
    _preflight(run.source, run.path, "pairs", run.batch_size, run.limit)
    from curator.noop import ingest_noop

    summary = runner.noop(ingest_noop, run)
    if summary is None:
        from flows.ingest import ingest as ingest_flow
        from tasks.ingest.read import file_revision

        if run.path is not None:
            file_revision(run.path)  # hashed while Prefect's API boots; the flow finds the hash remembered
        with ProgressBar(as_json):
            # the flow builds the same context from its parameters (a deployment passes no other way)
            summary = runner.flow(ingest_flow, **run.flow_parameters())
    print_summary(f"ingest {run.source}", summary, as_json)


@eval_set.command("load")
@runs_flows("eval-set load")
def eval_set_load(
    benchmark: str = typer.Argument(..., help="an evaluation set (`curate sources` lists them)"),
    path: Optional[Path] = typer.Option(None, "--path", help="local JSONL or Parquet file instead of the Hub"),
    revision: Optional[str] = typer.Option(None, "--revision", help="Hub branch, tag or commit (default: the pinned "
                                                                    "one)"),
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
    runner: Runner = None,
) -> None:
    """Load an evaluation set's prompts and flag every pair that overlaps them."""
    apply_flags(warehouse)
    _preflight(benchmark, path, "eval_prompts")
    from flows.ingest import load_eval_set

    summary = runner.flow(load_eval_set, benchmark=benchmark, path=str(path) if path else None, revision=revision)
    print_summary(f"eval set {benchmark}", summary, as_json)


@commands.command()
def synth(
    kind: str = typer.Argument(..., help="a source with synthetic rows, built-in or declared (`curate sources` marks "
                                         "them), or eval"),
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
    sources_file: Optional[Path] = sources_file_option(),
) -> None:
    """Write seeded synthetic rows with planted duplicates, near duplicates and bad rows."""
    from tasks.ingest import synth as s

    apply_flags(sources_file=sources_file)
    if kind != "eval":
        guarded(s.synth_class, kind)  # a source, built-in or declared, with synthetic rows
    for flag, rate in (("--exact-dup-rate", exact_dup_rate), ("--near-dup-rate", near_dup_rate),
                       ("--bad-rate", bad_rate), ("--contamination-rate", contamination_rate)):
        if not 0.0 <= rate <= 1.0:
            fail(f"{flag} is a share of the rows: 0 .. 1, not {rate}")

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


@commands.command()
def sources(
    sources_file: Optional[Path] = sources_file_option(),
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
) -> None:
    """List the sources: the built-in ones and evaluation sets, then those the sources file declares."""
    apply_flags(warehouse, sources_file=sources_file)
    from tasks.ingest.sources import all_sources, source_listing

    facts = [source_listing(s) for s in guarded(all_sources).values()]
    if as_json:
        print_json(facts)
        return
    print_table(out, ["name", "kind", "format", "rows", "license", "synthetic rows", "from"],
                [(f["name"], f["kind"], f["format"] or "-", f["location"] + (f" ({f['config']})" if f["config"] else "")
                  + (f" [{', '.join(f['splits'])}]" if f["location"].startswith("hf://") else ""), f["license"],
                  f["synthetic_rows"], f["origin"]) for f in facts])

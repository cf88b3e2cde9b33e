"""Ingest: read a source in batches, validate, normalize, deduplicate, decontaminate, land in DuckDB.

Reads like the process it runs: resolve what to read, open the warehouse and its indexes, then for each
batch one task that prepares and lands it in one transaction. The summary is returned, stored with
the run, and left as a Prefect table artifact.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from common import progress
from common.settings import Settings, settings_with
from flows.runs import current_run_id
from schemas.summaries import EvalSetSummary, IngestSummary
from tasks.ingest.context import IngestRun
from tasks.ingest.declared.misfit import SAMPLE_ROWS, misfit
from tasks.ingest.declared.registry import chosen_format, with_format_settled
from tasks.ingest.declared.source import is_settled
from tasks.ingest.decontam import Decontaminator
from tasks.ingest.dedup import NearDupIndex
from tasks.ingest.land import BackgroundWriter, BatchCounts, flag_contamination, land_batch
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import (
    RawBatch,
    SourceDamagedError,
    count_rows,
    limit_rows,
)
from tasks.ingest.revisions import pin_revision, run_revision, source_batches
from tasks.ingest.source_facts import facts_changes, record_facts
from tasks.ingest.sources import EvalPrompt, Source, get_source
from tasks.ingest.summary import SUMMARY_KEYS, record_if_unchanged, summarize
from tasks.ingest.synth import written_by_synth
from warehouse.store import Warehouse


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Python's cycle collector, tuned for the batches: every batch allocates a few hundred thousand dicts and
    lists, and the collector's default of a pass per 700 new objects, each older pass walking every object alive
    (Prefect's and pandas' included), measured 1.2-2 s of a 100k-row ingest's 16 s of main-thread work.
    What is alive before the batches is frozen (left out of every pass) and a pass waits for 50,000 new
    objects. Restored after."""
    thresholds = gc.get_threshold()
    ours = gc.get_freeze_count() == 0  # someone else's frozen objects stay as they were
    if ours:
        gc.freeze()
    gc.set_threshold(50_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if ours:
            gc.unfreeze()


@task(cache_policy=NO_CACHE)
def open_indexes(wh: Warehouse, settings: Settings) -> tuple[NearDupIndex, Decontaminator]:
    """The near-duplicate index (this run's kept pairs in memory, earlier runs' looked up in the warehouse by
    band key), and the evaluation prompts to avoid."""
    perms = settings.minhash_perms
    probe = NearDupIndex(perms, settings.near_dup_threshold)
    wh.ingest.index_unkeyed_signatures(perms, probe.stored_keys)  # pairs kept before the warehouse indexed keys
    before = wh.ingest.index_start()
    # A warehouse without kept pairs has nothing to look up (index_start() is 1): no query per batch.
    index = NearDupIndex(perms, settings.near_dup_threshold,
                         lookup=(lambda keys: wh.ingest.near_dup_candidates(perms, keys, before)) if before > 1 else None)
    prompts = [EvalPrompt(*row) for row in wh.ingest.eval_prompts()]
    return index, Decontaminator(prompts, settings.decontam_ngram, settings.decontam_threshold)


@task(cache_policy=NO_CACHE)
def ingest_batch(
    wh: Warehouse,
    batch: RawBatch,
    *,
    source: Source,
    settings: Settings,
    revision: str,
    run_id: str,
    index: NearDupIndex,
    decontaminator: Decontaminator,
    where: str,
    writer: BackgroundWriter,
    first: bool,
) -> BatchCounts:
    prepared = prepare_batch(batch, source, settings, where, first=first)
    return land_batch(wh.ingest, prepared, source=source.name, revision=revision, run_id=run_id, index=index,
                      decontaminator=decontaminator, writer=writer)


def landed_before_damage(counts: BatchCounts) -> str:
    """What a run that met a damaged file kept, and what to do next (the error's hint line)."""
    return (f"the {counts.read:,} rows that could be read are in the warehouse ({counts.new_pairs:,} new pairs, "
            f"{counts.quarantined_rows:,} quarantined); repair or replace the file and ingest it again: "
            "what is already there is not added twice")


def _artifact(summary: IngestSummary) -> None:
    rows = [{"measure": k, "value": summary[k]} for k in SUMMARY_KEYS if k != "quarantined"]
    rows.append({"measure": "quarantined_rows", "value": summary["quarantined_rows"]})
    rows += [{"measure": f"quarantined: {r}", "value": n} for r, n in summary["quarantined"].items()]
    rows.append({"measure": "already_ingested", "value": summary["already_ingested"]})
    create_table_artifact(
        key=f"ingest-{summary['source']}".replace("_", "-").lower(),
        table=rows,
        description=f"Ingest of {summary['source']} at {summary['source_revision']} ({summary['location']})",
    )


@flow(name="ingest", log_prints=False)
def ingest(
    source: str,
    *, path: str | None = None,
    revision: str | None = None,
    limit: int | None = None,
    warehouse: str | None = None,
    batch_size: int | None = None,
    force: bool = False,
    sources_file: str | None = None,
) -> IngestSummary:
    """Ingest one source (a local JSONL/Parquet file, or the Hub at a pinned revision) into the warehouse.

    A revision already read in full is not read again (a nightly run on unchanged sources costs nothing)
    unless `force`."""
    log = get_run_logger()
    started = time.perf_counter()
    asked = IngestRun.of(source, path=path, revision=revision, limit=limit, force=force, warehouse=warehouse,
                         batch_size=batch_size, sources_file=sources_file)
    settings, src, path, limit = asked.settings, asked.src, asked.file, asked.limit  # the checked values from here
    with Warehouse(settings.warehouse) as wh:
        # what the source says of its labels travels with its pairs: a changed meaning is refused before anything
        # is written, and the facts are recorded once the revision is pinned (the run is recorded next)
        # (a declared `auto` source's facts are known once its format is told from the first batch, below)
        facts = src.facts() if is_settled(src) else None
        if facts is not None:
            facts_changes(wh.sources, facts)
        read_rev, location = pin_revision(wh.ingest, src, asked.revision, path)
        rev = run_revision(src, read_rev)  # a declared source's: with its declaration's digest
        run_id = current_run_id()
        for note in record_facts(wh.sources, facts, run_id) if facts is not None else ():
            log.warning("ingest %s: %s", src.name, note)
        unchanged = None if asked.force or limit is not None else record_if_unchanged(wh, src, rev, location, run_id,
                                                                                        settings, started)
        if unchanged is not None:
            log.info(unchanged["note"])
            _artifact(unchanged)
            return unchanged
        counts = BatchCounts()
        writer = BackgroundWriter()
        with wh.runs.recorded_run("ingest", run_id, source=src.name, location=location, revision=rev,
                             settings={**settings.model_dump(mode="json"), "limit": limit}) as run:
            run.so_far = lambda: summarize(counts)
            index, decontaminator = open_indexes(wh, settings)
            total = count_rows(Path(path)) if path else None
            if limit is not None:
                total = min(total, limit) if total is not None else limit
            try:
                # The writer is left first, error or not: its last write ends before anything else uses the
                # connection (the checkpoint settings restored, the run recorded), and is committed before the run
                # says it completed.
                with wh.ingest.checkpoints_per_row_group(), _fewer_collections(), writer:
                    batches = limit_rows(source_batches(src, path, read_rev, settings), limit)
                    src, batches = with_format_settled(src, batches)  # a declared `auto` source: its format told
                    if facts is None and is_settled(src):  # ... and with it what its labels mean, before any row lands
                        facts_changes(wh.sources, src.facts())
                        for note in record_facts(wh.sources, src.facts(), run_id):
                            log.warning("ingest %s: %s", src.name, note)
                    if chosen_format(src).get("format_detected"):
                        log.info("ingest %s: format auto: reading it as %s, told from the first batch's columns",
                                 src.name, chosen_format(src)["format"])
                    sample: list = []  # the first batch's first rows: the format they fit, if none made a pair
                    for n, batch in enumerate(batches):
                        if n == 0:
                            sample = batch.rows[:SAMPLE_ROWS]
                        # quote(): Prefect would otherwise walk every row of the batch (and the index) looking for
                        # futures, twice per task: about a second per 5,000-row batch, measured.
                        counts.add(ingest_batch(wh, quote(batch), source=src, settings=settings, revision=rev,
                                                run_id=run_id, index=quote(index), decontaminator=quote(decontaminator),
                                                where=location, writer=quote(writer), first=n == 0))
                        progress.report(len(batch), total, src.name)
            except SourceDamagedError as err:
                if writer.failed is None:
                    err.hint = landed_before_damage(counts)
                raise
            run.summary = summary = summarize(
                counts, source=src.name, location=location, source_revision=rev, run_id=run_id,
                warehouse=str(settings.warehouse), decontaminated_against=wh.ingest.eval_prompt_counts(),
                seconds=round(time.perf_counter() - started, 3), **chosen_format(src),
            )
            if path and written_by_synth(Path(path), rev):  # a card of these pairs says they are synthetic
                summary["synthetic"] = True
            # a declared source whose rows are another format's: one line naming it (the run recorded as failed)
            wrong_format = misfit(src, counts.read, counts.flags.get("rows_paired", 0), counts.quarantined_rows,
                                  counts.quarantined, sample, location)
            if wrong_format is not None:
                raise wrong_format
    log.info(
        "ingest %s: read %d, valid %d, quarantined %d, exact dups %d, near dups %d, contaminated %d, new pairs %d",
        src.name, summary["read"], summary["valid"], summary["quarantined_rows"], summary["exact_duplicates"],
        summary["near_duplicates"], summary["contaminated"], summary["new_pairs"],
    )
    _artifact(summary)
    return summary


@flow(name="load-eval-set", log_prints=False)
def load_eval_set(
    benchmark: str, *, path: str | None = None, revision: str | None = None, warehouse: str | None = None
) -> EvalSetSummary:
    """Load an evaluation set's prompts, then flag every pair in the warehouse that overlaps them."""
    settings = settings_with(warehouse=warehouse)
    src = get_source(benchmark, kind="eval_prompts")
    with Warehouse(settings.warehouse) as wh:
        rev, location = pin_revision(wh.ingest, src, revision, path)
        counts = BatchCounts()
        prompts: dict[str, str] = {}
        run_id = current_run_id()
        for n, batch in enumerate(source_batches(src, path, rev, settings)):
            prepared = prepare_batch(batch, src, settings, location, first=n == 0)
            prompts.update({p.benchmark_id: p.prompt for p in prepared.prompts})
            counts.add(land_batch(wh.ingest, prepared, source=src.name, revision=rev, run_id=run_id,
                                  index=NearDupIndex(settings.minhash_perms, settings.near_dup_threshold),
                                  decontaminator=None))
        new = wh.ingest.upsert_eval_prompts(src.name, sorted(prompts.items()), rev)
        all_prompts = [EvalPrompt(*row) for row in wh.ingest.eval_prompts()]
        flagged = flag_contamination(wh.ingest, Decontaminator(all_prompts, settings.decontam_ngram, settings.decontam_threshold))
        summary: EvalSetSummary = {
            "benchmark": src.name,
            "location": location,
            "source_revision": rev,
            "read": counts.read,
            "prompts": len(prompts),
            "new_prompts": new,
            "quarantined": dict(counts.quarantined.most_common()),
            "contaminated_pairs": flagged,
        }
    create_table_artifact(
        key=f"eval-set-{src.name}", table=[{"measure": k, "value": str(v)} for k, v in summary.items()],
        description=f"Evaluation prompts of {src.name} loaded for decontamination",
    )
    return summary

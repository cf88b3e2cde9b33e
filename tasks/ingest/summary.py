"""An ingest run's summary, and the answer for a revision already read in full (which reads nothing)."""

from __future__ import annotations

import time
from typing import Any

from common.settings import Settings
from schemas.summaries import IngestSummary
from tasks.ingest.land import BatchCounts
from tasks.ingest.sources import Source
from warehouse.store import Warehouse

SUMMARY_KEYS = ("read", "valid", "rows_paired", "rows_partly_quarantined", "quarantined", "exact_duplicates",
                "near_duplicates", "contaminated", "new_pairs")


def summarize(counts: BatchCounts, **extra: Any) -> IngestSummary:
    summary = {
        "read": counts.read,
        "valid": counts.valid,
        # `valid` counts pairs, these count rows: those that made at least one valid pair, and of them those with a
        # part quarantined too (an unusable completion). read = rows_paired + quarantined_rows - rows_partly_
        # quarantined; a source making one pair a row has rows_paired = valid and none partly quarantined.
        "rows_paired": counts.flags.get("rows_paired", 0),
        "rows_partly_quarantined": counts.flags.get("rows_partly_quarantined", 0),
        "quarantined": dict(counts.quarantined.most_common()),
        "quarantined_rows": counts.quarantined_rows,
        "new_quarantined": counts.new_quarantined,
        "already_ingested": counts.already_ingested,
        "exact_duplicates": counts.exact_duplicates,
        "near_duplicates": counts.near_duplicates,
        "contaminated": counts.contaminated,
        "new_pairs": counts.new_pairs,
        "multi_turn": dict(counts.multi_turn),
        # valid pairs kept with a note: `reasoning_trace_stripped` (an answer opened with its own <think> trace,
        # judged on its final answer), `estimate_over_budget` (the cheap estimate says the prompt may not fit:
        # the judge counts it exactly before sending)
        "flags": {k: counts.flags.get(k, 0) for k in ("reasoning_trace_stripped", "estimate_over_budget")},
    }
    summary.update(extra)
    if counts.read and counts.new_pairs == 0 and counts.new_quarantined == 0 and counts.exact_duplicates == 0 \
            and counts.near_duplicates == 0:
        summary["note"] = "nothing new: every row read was already in the warehouse"
    return summary


def record_if_unchanged(wh: Warehouse, source: Source, revision: str, location: str, run_id: str,
                        settings: Settings, started: float) -> IngestSummary | None:
    """When `source` at `revision` was read in full before, record this run as reading nothing and return its
    summary (a nightly run on an unchanged source costs nothing); None when there is reading to do."""
    earlier = wh.runs.completed_full_ingest(source.name, revision)
    if earlier is None:
        return None
    with wh.runs.recorded_run("ingest", run_id, source=source.name, location=location, revision=revision,
                         settings={**settings.model_dump(mode="json"), "limit": None}) as run:
        run.summary = summarize(BatchCounts(), source=source.name, location=location, source_revision=revision,
                                run_id=run_id, warehouse=str(settings.warehouse),
                                decontaminated_against=wh.ingest.eval_prompt_counts(),
                                seconds=round(time.perf_counter() - started, 3))
        run.summary["note"] = (f"unchanged: {source.name} at {revision} was read in full by run {earlier}; nothing "
                               "read (force to read it again)")
    return run.summary

"""Evaluate the judge on a benchmark before trusting a deployment: any benchmark of the registry
(`tasks.evaluate.benchmarks`), scored the benchmark's way and set beside the model card's figures.

Reads like the process: read the benchmark, turn its rows into comparisons, judge what the cache lacks
(benchmark judgments are cached apart from curation judgments, never paid twice), score, record.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_table_artifact

from common.reasons import BenchmarkRejection
from common.settings import settings_with
from flows.runs import JUDGE_SERVERS, current_run_id
from schemas.summaries import EvaluationSummary
from tasks.evaluate.benchmarks import get_benchmark, scoring_plan
from tasks.evaluate.scoring import score
from tasks.ingest.revisions import pin_revision, source_batches
from tasks.judge.config import config_record
from tasks.judge.context import JudgeRun
from tasks.judge.run import as_states, run_judging, split_pending
from tasks.judge.targets import checked_targets, judge_config_from, judge_targets
from warehouse.judging import PairText
from warehouse.store import Warehouse


def _read_rows(src, path, rev, settings, limit) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """(rows, rejected): every row the reader could parse, and the unreadable ones with their reason and detail."""
    rows, rejected = [], []
    for batch in source_batches(src, path, rev, settings):
        rows.extend(batch.rows)
        rejected.extend({"position": u.position, "reason": u.reason, "detail": u.error} for u in batch.unreadable)
        if limit is not None and len(rows) >= limit:
            return rows[:limit], rejected
    return rows, rejected


@flow(name="evaluate-judge", log_prints=False)
def evaluate_judge(
    benchmark: str,
    *, path: str | None = None,
    endpoints: list[str] | None = None,
    strategy: str | None = "swap",
    limit: int | None = None,
    launch: str | None = None,
    port: int | None = None,
    revision: str | None = None,
    warehouse: str | None = None,
) -> EvaluationSummary:
    """Judge `benchmark` (a name of `tasks.evaluate.benchmarks.BENCHMARKS`) on the endpoints and report accuracy by
    category."""
    log = get_run_logger()
    settings = settings_with(warehouse=warehouse)
    bench = get_benchmark(benchmark)
    src = bench.source
    plan = scoring_plan(bench.name, strategy, settings)
    orders = sorted({order for order, _ in plan.initial()})
    run = JudgeRun.with_config(settings, config=judge_config_from(settings), run_id=current_run_id(),
                               strategy=plan.label)
    server, targets = judge_targets(endpoints, launch, port, settings, run.config, JUDGE_SERVERS)
    run_id = run.run_id
    with server:  # up (when launched here) and checked before anything is read
        run = run.served_by(*checked_targets(targets, run.config, settings, log))
        targets, config = list(run.targets), run.config
        with Warehouse(settings.warehouse) as wh:
            rev, location = pin_revision(wh.ingest, src, revision, path)
            rows, rejected = _read_rows(src, path, rev, settings, limit)
            items = []
            for i, row in enumerate(rows):
                try:
                    items.extend(bench.comparisons(row))
                except (KeyError, TypeError, ValueError) as err:
                    rejected.append({"position": f"{location}[{i}]",
                                     "reason": BenchmarkRejection.NOT_A_COMPARISON.of(type(err).__name__),
                                     "detail": str(err)})
            for r in rejected:
                log.warning("%s: row %s rejected: %s (%s)", src.name, r["position"], r["reason"], r["detail"])
            wh.judging.register_judge_config(config_record(config))
            ids = [c.item_id for c in items]
            states = as_states(wh.judging.judgment_states(config.id, ids, table="eval_judgments"))
            pending, done = split_pending(ids, plan, states, run.max_attempts)
            keep = set(pending)
            pairs = [PairText(c.item_id, c.history, c.response_a, c.response_b) for c in items if c.item_id in keep]
            judged = run_judging(run, pairs, states, done, lambda t: wh.judging.write_judgments(t, "eval_judgments"), log)
            result = score(bench.name, items, wh.judging.eval_margins(config.id, ids), orders)
            served = wh.judging.served_models(run_id, "eval_judgments")
            result.update(rows=len(rows), rejected=rejected, benchmark_revision=rev, location=location,
                          judge_config_id=config.id, strategy=plan.label, endpoints=targets, served_models=served,
                          judge={k: judged[k] for k in ("judged", "failed", "skipped_cached", "requests", "tokens_in",
                                                         "tokens_out", "seconds")})
            wh.judging.record_evaluation({
                "evaluation_id": run_id, "benchmark": src.name, "benchmark_revision": rev, "judge_config_id": config.id,
                "strategy": plan.label, "endpoints": targets, "served_models": served, "pairs": result["pairs"],
                "scored": result["scored"], "failed": result["failed"], "accuracy": result["accuracy"],
                "result": {k: result[k] for k in ("by_category", "by_difficulty", "matrix", "model_card", "vs_model_card",
                                                  "outcomes", "domains_missing") if k in result},
                "requests": judged["requests"], "tokens_in": judged["tokens_in"], "tokens_out": judged["tokens_out"],
                "seconds": judged["seconds"],
            })
    card = result["model_card"]
    table = [{"category": k, "accuracy %": v, "model card %": card.get(k), "difference": result["vs_model_card"].get(k)}
             for k, v in [("overall", result["accuracy"]), *result["by_category"].items(),
                          *result.get("by_difficulty", {}).items()]]
    create_table_artifact(key=f"judge-eval-{src.name}", table=table,
                          description=f"{src.name}: {config.model} ({config.id}), {plan.label}; served by {served}")
    log.info("%s: accuracy %s%% over %d comparisons (%d failed), model card %s%%", src.name, result["accuracy"],
             result["scored"], result["failed"], card["overall"])
    return result

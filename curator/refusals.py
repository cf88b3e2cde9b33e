"""What a command refuses before Prefect starts or the network is asked, in the order a person fixes things:
its arguments first, then its files (an input file, the warehouse and what it holds), and only then the judge's
endpoints and the Hub (which `curator.cli` checks after these). Each check raises the error the flow would raise
for the same cause, so the line a user reads is the same, only seconds sooner.

Nothing here imports Prefect: a refusal costs what `curate status` costs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common.errors import InvalidInputError, UserError
from common.settings import Settings


class NothingJudgedError(UserError):
    """A version needs judged pairs (the build-version flow says the same)."""


def benchmark(name: str, text: str | None, settings: Settings) -> None:
    """A judge benchmark and a strategy it can be scored with."""
    from tasks.evaluate.benchmarks import scoring_plan

    scoring_plan(name, text, settings)


def pii_detector(settings: Settings) -> None:
    """The detector model the settings name for names and street addresses loads (`CURATE_PII_DETECTOR`): a
    library that is absent or a function not found is refused here, not at the first batch."""
    if settings.pii_detector:
        from tasks.ingest.pii_detector import load_detector

        load_detector(settings.pii_detector)


def endpoint_given(urls: list[str] | None, launch: str | None, settings: Settings) -> None:
    """A judge to ask (`tasks.judge.endpoints.require_endpoint`)."""
    from tasks.judge.endpoints import require_endpoint

    require_endpoint(urls, launch, settings)


def shard_work(work: str) -> None:
    """A shard's work file this worker may judge: there, unchanged, and signed exactly when the worker holds
    the exchange's key (CURATE_JUDGE_EXCHANGE_KEY)."""
    from tasks.judge.exchange import Exchange, shared_secret, verify_work

    ex, path = Exchange.of_work(work)
    verify_work(ex, path, shared_secret())


def input_file(source: Any, path: Path | None, batch_size: int, limit: int | None = None,
               max_row_bytes: int | None = None) -> None:
    """A local file that exists and is of this source (`tasks.ingest.prepare.check_input_file`)."""
    from tasks.ingest.prepare import check_input_file

    check_input_file(source, path, batch_size, limit, max_row_bytes)


def warehouse(settings: Settings, creates: bool = False) -> None:
    """The warehouse opens (and migrates), or the line says why: missing, locked, damaged, not writable. A command
    that `creates` it (an ingest, a run) is not refused a missing one, and none is made here."""
    from warehouse.store import Warehouse

    if not Path(settings.warehouse).exists():
        if creates:
            return
        Warehouse(settings.warehouse, read_only=True).close()  # says there is none and what makes one
    Warehouse(settings.warehouse).close()


def judged(settings: Settings, judge_config: str | None, policy: Any = None) -> None:
    """A version can be built: the warehouse holds verdicts (of the configuration asked for), and the pairs of
    every source the `policy` makes it of (`FilterPolicy.check_sources`)."""
    from warehouse.store import Warehouse

    with Warehouse(settings.warehouse, read_only=True) as wh:
        latest = wh.versions.latest_judge_config_id()
        if latest is None:
            raise NothingJudgedError("no judged pairs yet: run `curate judge` first")
        if judge_config is not None and "model" not in wh.judging.judge_config(judge_config):  # not a recorded one
            raise InvalidInputError(f"unknown judge configuration {judge_config!r}; `curate status` lists them")
        if policy is not None and policy.version_sources() is not None:
            policy.check_sources(wh.versions.pool_sources(), judge_config or latest)


def version(settings: Settings, name: str, number: int | None, to: str, allow_simulated: bool,
            allow_other_weights: bool = False, private: bool = False, allow_restricted_licenses: bool = False) -> None:
    """The version to publish exists; a SIMULATED one, or one judged by other weights than the judge's published
    ones, is refused on its way to the Hub unless allowed; and a local target that already holds something else,
    or cannot be written where the version would go."""
    from schemas.version import hub_repo
    from tasks.ingest.sources import warehouse_facts
    from tasks.publish.layout import already_there, check_writable_target, version_folder
    from tasks.publish.summary import (
        refuse_other_weights,
        refuse_restricted_licenses,
        refuse_simulated,
        restricted_sources,
        version_to_publish,
    )
    from warehouse.store import Warehouse

    with Warehouse(settings.warehouse, read_only=True) as wh:
        meta = version_to_publish(wh.versions, name, number)
        if hub_repo(to) is not None:
            restricted = restricted_sources(wh.versions.version_rows(name, meta["version"]), warehouse_facts(wh.sources))
    if hub_repo(to) is not None:
        refuse_simulated(meta, to, allow_simulated)
        refuse_other_weights(meta, to, allow_other_weights)
        refuse_restricted_licenses(meta, to, restricted, private, allow_restricted_licenses)
        return
    final = version_folder(to, meta)
    if not already_there(final, meta):  # a version already in place is not written again
        check_writable_target(final)


def judge_weights_to_hub(settings: Settings, report: Any, *, launch: str | None, shards: int, to: str,
                         allow_other_weights: bool) -> None:
    """`curate run` to the Hub with a judge that serves other weights than the judge's published ones, unless
    allowed. The weights: what the endpoint check found (`report`), what a vLLM started here will load, or, for
    sharded runs, what the plan will record (CURATE_JUDGE_WEIGHTS)."""
    from tasks.judge.targets import judge_config_from, launched_weights, planned_weights
    from tasks.publish.summary import refuse_judging_other_weights

    if report is not None:
        weights = report.weights
    elif shards:
        weights = planned_weights(settings)
    elif (launch or settings.judge_launch) == "vllm":
        weights = launched_weights(settings, judge_config_from(settings))
    else:
        weights = ""
    refuse_judging_other_weights(weights, settings.judge_model, to, allow_other_weights)


def publish_folder(to: str | None, dataset: str) -> None:
    """`curate run --publish-to DIR`: the dataset's folder under DIR can be written (a Hub target is checked
    as an argument, by `schemas.version.hub_repo`)."""
    from schemas.version import hub_repo
    from tasks.publish.layout import check_writable_target

    if to and hub_repo(to) is None:
        check_writable_target(Path(to) / dataset)

"""What each stage reports: the typed summaries the flows return and the CLI, the pipeline and the
artifacts read (JSON objects on the wire: `--json` prints them as they are). `total=False` marks keys that
only some runs carry (a note, a sharded run's merge counts)."""

from __future__ import annotations

from typing import Any, TypedDict

PIPELINE_STAGES = ("ingest", "judge", "version", "publish")  # what `curate run` runs, and may --skip


class IngestSummary(TypedDict, total=False):
    read: int  # rows read, readable or not: read = rows_paired + quarantined_rows - rows_partly_quarantined
    valid: int  # pairs made = already_ingested + exact_duplicates + near_duplicates + new_pairs
    rows_paired: int  # rows that made at least one pair (a source may make several pairs of a row)
    rows_partly_quarantined: int  # rows that made pairs and had a part quarantined too
    quarantined: dict[str, int]  # reason -> rows
    quarantined_rows: int
    new_quarantined: int
    already_ingested: int
    exact_duplicates: int
    near_duplicates: int
    contaminated: int
    new_pairs: int
    multi_turn: dict[str, int]
    flags: dict[str, int]  # reasoning_trace_stripped, estimate_over_budget (kept pairs, counted)
    source: str
    location: str
    source_revision: str
    run_id: str
    warehouse: str
    decontaminated_against: dict[str, int]
    seconds: float
    note: str
    format: str  # a declared source's format (docs/sources.md#declared-sources); built-in sources have none
    format_detected: bool  # ... told from the first batch's columns (declared `auto`)
    synthetic: bool  # the file read is rows `curate synth` wrote (its manifest records this revision); else absent


class JudgeRound(TypedDict):
    """One round of a judge run in rounds (`certify`)."""

    round: int  # 0 the first: `ab 0` of every pair without it
    requests: int  # HTTP requests the round sent
    judged: int  # judgments it got a verdict for
    pairs_asked: int  # pairs it sent judgments for
    certified: int  # pairs a certification at the run's target accepts once its verdicts are in (the whole pool)
    how: str  # how its pairs were chosen (the rule for "sure", and the judgments asked of how many pairs)


class LadderRound(JudgeRound):
    """One round of a judge ladder (`ladder`): a round of `certify`'s, and which judge it asked."""

    judge: str  # the kind that judged it: `reward_model` (round 0), then `genrm`


class _LadderJudge(TypedDict, total=False):
    judge: str  # a ladder's: `reward_model` (round 0, scored by the coordinator), then `genrm`


class ShardedJudgeRound(JudgeRound, _LadderJudge):
    """One round of a run in rounds judged in shards (`certify` or `ladder` with `--shards N`)."""

    plan_id: str  # the round's plan in the exchange, named by what it asks
    shards: list[dict[str, str]]  # shard, plan_id, flow_run_id, state, message


class JudgeSummary(TypedDict, total=False):
    pairs: int
    judged: int  # judgments (pair x order x sample) with a verdict
    failed: dict[str, int]  # final failures of this run, by reason
    failed_answers: dict[str, int]  # answers that came back without a verdict
    transport_failures: dict[str, int]  # time-outs, 5xx, 429, connection errors (retried or not)
    over_budget: int
    skipped_cached: int
    skipped_exhausted: int  # failed judgments at the attempt limit, not asked (`--retry-exhausted` asks them)
    reopened_exhausted: int  # judgments at the attempt limit this run reopened (`--retry-exhausted`) and asked
    requests: int
    retries: int
    retry_after_waits: int  # retries of a 429 / 503 that waited as the server's Retry-After said
    prompt_tokens: dict[str, Any]  # requests, p50, p90, p99, max, counted_by (server | estimate)
    first_errors: dict[str, str]  # failure reason -> the first error text of this run
    preflight_seconds: float  # the endpoint check, context and chat-template probe before the first request
    server_metrics: dict[str, Any]  # what the servers' /metrics measured of the run (tasks/judge/server_metrics.py)
    prefix_reuse: dict[str, Any]  # what a prefix cache could have served of each pair's later requests
    tokens_in: int
    tokens_out: int
    seconds: float
    judgments_per_second: float
    cost: dict[str, Any]
    endpoint_limits: dict[str, int]
    judge_config_id: str
    strategy: str
    shard: str | None
    endpoints: list[str]
    run_id: str
    served_models: list[str]
    simulated: bool
    weights: str  # what the servers loaded where not the judge's published weights ("": the published)
    result_files: int  # a GPU worker's: the judgment batches it wrote to the exchange
    first_response_at: float | None  # epoch seconds
    last_request_sent_at: float | None
    concurrency: dict[str, Any]  # endpoint -> how its concurrency was found
    busy_seconds: dict[str, float]  # endpoint -> seconds at least one of the run's requests was in flight on it
    rounds: list[JudgeRound | LadderRound]  # a run in rounds (`certify`, `ladder`): each round, in order
    rounds_ended: str | None  # why no further round was sent (no pair needs more, the round cap, ...)
    reward_model: dict[str, Any]  # a judge ladder's: the reward model's rung (its configuration, endpoints, counts)


class EvalSetSummary(TypedDict):
    """`load-eval-set`: an evaluation set's prompts loaded, and the pairs they flag."""

    benchmark: str
    location: str
    source_revision: str
    read: int
    prompts: int
    new_prompts: int
    quarantined: dict[str, int]  # reason -> rows
    contaminated_pairs: int


class MergeSummary(TypedDict):
    """What one merge of the judge exchange into the warehouse took in, and what it turned away."""

    files: int  # result files merged by this call
    rows: int  # judgment rows merged
    run_records: int
    rejected_rows: dict[str, int]  # reason -> rows not merged
    quarantined: list[dict[str, str]]  # files moved aside: file, reason
    authenticated: bool  # result files and run records had to carry the plan's signature


class ShardedJudgeSummary(TypedDict, total=False):
    """`judge-sharded`: the plan, the merges before and after the workers, and the workers' totals."""

    plan_id: str
    judge_config_id: str
    strategy: str
    pairs: int
    pending: int
    skipped_cached: int
    skipped_exhausted: int
    reopened_exhausted: int  # judgments at the attempt limit the plan reopened (`--retry-exhausted`)
    merged_before: MergeSummary
    shards: list[dict[str, str]]  # shard, plan_id, flow_run_id, state, message: every plan's
    judged: int
    failed: dict[str, int]
    requests: int
    tokens_in: int
    tokens_out: int
    seconds: float
    merged: MergeSummary | dict[str, Any]  # {}: nothing was pending, no worker ran (every plan's merges together)
    served_models: list[str]
    cost: dict[str, Any]
    rounds: list[ShardedJudgeRound]  # a run in rounds (`certify`): each round, in order
    reward_model: dict[str, Any]  # a judge ladder's: the reward model's rung, scored by the coordinator
    budget: dict[str, Any]  # with --budget-gpu-hours: gpu_hours, spent_gpu_hours, left_gpu_hours, stopped
    rounds_ended: str | None  # why no further round was sent (as a run in one process says, or every shard failed)


class EvaluationSummary(TypedDict, total=False):
    """`evaluate-judge`: the judge's accuracy on a benchmark, beside the model card's figures."""

    benchmark: str
    pairs: int
    scored: int
    failed: int
    outcomes: dict[str, int]  # correct, wrong, tie, inconsistent
    by_category: dict[str, float | None]
    orders: list[str]
    accuracy: float | None
    domains_missing: list[str]  # a benchmark whose overall is the mean of its categories: those with no score
    by_difficulty: dict[str, float | None]
    matrix: dict[str, dict[str, float | None]]
    model_card: dict[str, float]
    vs_model_card: dict[str, float]
    rows: int
    rejected: list[dict[str, str]]  # position, reason, detail
    benchmark_revision: str
    location: str
    judge_config_id: str
    strategy: str
    endpoints: list[str]
    served_models: list[str]
    judge: JudgeSummary  # the judging's counts: judged, failed, skipped_cached, requests, tokens, seconds


class VersionSummary(TypedDict, total=False):
    name: str
    version: int
    rows: int
    content_hash: str
    created: str
    new_version: bool
    note: str
    parent_version: int | None
    judge_config_id: str
    simulated: bool
    judge_weights: str | None  # the judge's weights where not its published ones (None: the published)
    stats: dict[str, Any]
    error: str  # the pipeline's record of a version it could not build


class PublishSummary(TypedDict, total=False):
    name: str
    version: int
    target: str
    tag: str
    commit: str | None
    simulated: bool
    judge_weights: str | None
    files: list[str]
    published: bool
    already_published: bool
    rows: int
    content_hash: str


class ReviewChoice(TypedDict):
    """What a push chose of a version for review."""

    candidates: int
    selected: int
    new_members: int
    new_tasks: int
    already_in_project: int
    already_reviewed: int
    answer_1_is_a: int
    answer_1_is_b: int


class ReviewPushSummary(ReviewChoice, total=False):
    """`review-push`: the project, what was chosen, and the tasks created."""

    url: str
    project: str
    project_id: int
    project_created: bool
    name: str
    version: int
    selection: str
    limit: int
    seed: int  # an audit sample's
    tasks_pushed: int
    tasks_adopted: int
    foreign_tasks: int
    project_tasks: int
    not_yet_pushed: int


class ReviewPullSummary(TypedDict):
    """`review-pull`: the annotations landed, per project and in all."""

    url: str
    server_id: str
    projects: list[dict[str, Any]]  # each project's counts
    new: int
    updated: int
    unchanged: int
    reinstated: int
    withdrawn: dict[str, int]  # reason -> reviews
    rejected: dict[str, int]  # reason -> annotations
    tasks_adopted: int
    tasks_deleted: int
    tasks_texts_changed: int
    foreign_tasks: int
    counted_as_poster: int
    pairs_reviewed: int
    outcomes: dict[str, int]  # a, b, tie, both_bad, split
    progress: list[dict[str, Any]]


class ReviewSyncSummary(TypedDict):
    """`review-sync`: the pull (None: no project to pull from yet), then every push."""

    pulled: ReviewPullSummary | None
    pushed: list[ReviewPushSummary]


class StageFailure(TypedDict):
    """A stage of the pipeline that ended without its result, and why (the run goes on without it)."""

    stage: str  # one of PIPELINE_STAGES
    error: str  # the one line a user reads


class PipelineSummary(TypedDict):
    ingest: dict[str, IngestSummary]  # per source
    judge: JudgeSummary | ShardedJudgeSummary | None
    version: VersionSummary | None  # None: skipped, or failed (see `failed`)
    publish: PublishSummary | None
    failed: list[StageFailure]  # stages that failed, in order

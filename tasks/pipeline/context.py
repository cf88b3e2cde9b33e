"""One pipeline run's context (`common.settings.RunContext`): its parameters are the `curate-pipeline` flow's own,
declared here once (`flows.runs.takes_parameters_of`), and checked by the CLI and the flow alike; its judge stage's
run is a `JudgeRun` made as `curate judge` makes one (`PipelineRun.judge_run`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from common.errors import InvalidInputError, validated
from common.settings import RunContext, settings_with
from schemas.summaries import PIPELINE_STAGES
from schemas.version import check_name, hub_repo
from tasks.ingest.sources import parse_source
from tasks.judge.context import JudgeRun


class PipelineRun(RunContext):
    """One pipeline run: what each stage is given, checked before any stage starts (a deployment's typo fails in
    seconds, not after the ingest). `of`'s parameters are the flow's own (`curate_pipeline` takes exactly them)."""

    sources: list[str] = Field(default_factory=list, description="NAME (a built-in or declared source) or NAME=FILE, "
                               "one per source")
    endpoints: list[str] | None = None
    rm_endpoints: list[str] | None = Field(None, description="with strategy ladder[:K]: a reward model's vLLM pooling "
                                           "servers, rung 0 of the judge ladder")
    launch: str | None = None
    strategy: str | None = None
    dataset: str = Field("preferences", description="the dataset the version belongs to")
    policy_path: str | None = None
    publish_to: str | None = Field("published", description="a local folder or hf://ORG/NAME (None: no publishing)")
    skip: frozenset[str] = frozenset()
    limit: int | None = Field(None, ge=1, description="read at most N rows per source")
    judge_shards: int = Field(0, ge=0, description="judge in N shards on the gpu pool (0: in this process)")
    judge_deployment: str | None = None
    exchange: str | None = None
    stale_seconds: float | None = None  # bounded by Settings.judge_shard_stale_seconds
    allow_other_weights: bool = Field(False, description="publish to the Hub a version judged by other weights than "
                                      "the judge's published ones")
    retry_exhausted: bool = Field(False, description="ask the judgments at the attempt limit again, with a fresh "
                                  "count of attempts")
    budget_gpu_hours: float | None = Field(None, gt=0, description="judging sends no pair whose judgments would "
                                           "take what it spent past this many GPU-hours (no version then)")
    reward_model_only: bool = Field(False, description="with a judge ladder: judging stops after the reward "
                                    "model's rung (no version then), so that an estimate decides the GenRM's first "
                                    "rung as the next run will")

    @classmethod
    def of(cls, *, sources: list[str] | None = None, endpoints: list[str] | None = None, launch: str | None = None,
           strategy: str | None = None, dataset: str = "preferences", policy_path: str | None = None,
           publish_to: str | None = "published", skip: list[str] | None = None, warehouse: str | None = None,
           limit: int | None = None, judge_shards: int = 0, judge_deployment: str | None = None,
           exchange: str | None = None, stale_seconds: float | None = None,
           allow_other_weights: bool = False, sources_file: str | None = None,
           retry_exhausted: bool = False, budget_gpu_hours: float | None = None,
           rm_endpoints: list[str] | None = None, reward_model_only: bool = False) -> PipelineRun:
        """The run's arguments checked (the stages, the sources' names, built-in or declared in the sources file, a
        judge to ask, the strategy, the dataset's name, an hf:// target's repository); its files are
        `check_files`'s."""
        from tasks.ingest.sources import get_source
        from tasks.judge.endpoints import require_endpoint

        unknown = set(skip or []) - set(PIPELINE_STAGES)
        if unknown:
            raise InvalidInputError(f"unknown stage(s) to skip: {sorted(unknown)}; stages: "
                                    f"{', '.join(PIPELINE_STAGES)}")
        settings = settings_with(warehouse=warehouse, judge_deployment=judge_deployment, judge_exchange=exchange,
                                 judge_shard_stale_seconds=stale_seconds, sources_file=sources_file)
        if "judge" not in (skip or []) and not judge_shards:
            require_endpoint(endpoints, launch, settings)
        if reward_model_only and (not rm_endpoints or "judge" in (skip or [])):
            raise InvalidInputError("--reward-model-only applies to a judge ladder's judge stage: give --strategy "
                                    "ladder and --rm-endpoint URL, and do not skip judge")
        check_name(dataset)
        if publish_to and "publish" not in (skip or []):
            hub_repo(publish_to)  # an hf:// target that names no repository
        if "ingest" not in (skip or []):
            for spec in sources or []:
                get_source(parse_source(spec)[0], kind="pairs", settings=settings)  # built-in or declared
        return validated(cls, {"sources": list(sources or []), "endpoints": endpoints, "rm_endpoints": rm_endpoints,
                               "launch": launch,
                               "strategy": strategy, "dataset": dataset, "policy_path": policy_path,
                               "publish_to": publish_to, "skip": frozenset(skip or []), "limit": limit,
                               "judge_shards": judge_shards, "judge_deployment": judge_deployment,
                               "exchange": exchange, "stale_seconds": stale_seconds,
                               "allow_other_weights": allow_other_weights, "retry_exhausted": retry_exhausted,
                               "budget_gpu_hours": budget_gpu_hours, "reward_model_only": reward_model_only,
                               "settings": settings},
                         "invalid pipeline run")

    def check_files(self) -> JudgeRun | None:
        """Each source's file (there, readable, of its source), then the policy file (with a strategy that judges
        in rounds, its target is what the rounds escalate toward). Returns the judge stage's run (None: skipped)."""
        from tasks.curate.policy import load_policy
        from tasks.ingest.prepare import check_input_file
        from tasks.ingest.sources import get_source

        if "ingest" not in self.skip:
            for spec in self.sources:
                name, path = parse_source(spec)
                source = get_source(name, kind="pairs", settings=self.settings)
                check_input_file(source, Path(path) if path else source.local_path, self.settings.batch_size,
                                 self.limit, self.settings.row_byte_limit)
        load_policy(Path(self.policy_path) if self.policy_path else None)
        return None if "judge" in self.skip else self.judge_run()

    def judge_run(self) -> JudgeRun:
        """The judge stage's run (`JudgeRun.of`, its policy read when it judges in rounds): on the gpu pool in
        `judge_shards` shards, or here on the endpoints; a strategy in rounds escalates toward this run's policy's
        target; a judge ladder (`rm_endpoints`) scores every pair with the reward model first. The judge flow is given
        its fields (`JudgeRun.flow_parameters`)."""
        from tasks.curate.policy import in_rounds

        sharded = {"shards": self.judge_shards, "deployment": self.judge_deployment, "exchange": self.exchange,
                   "stale_seconds": self.stale_seconds} if self.judge_shards else \
            {"endpoints": self.endpoints, "launch": self.launch}
        return in_rounds(JudgeRun.of(**sharded, strategy=self.strategy, warehouse=self.warehouse,
                                     policy_path=self.policy_path if self.judges_in_rounds else None,
                                     retry_exhausted=self.retry_exhausted, budget_gpu_hours=self.budget_gpu_hours,
                                     rm_endpoints=self.rm_endpoints, reward_model_only=self.reward_model_only))

    @property
    def judges_in_rounds(self) -> bool:
        from tasks.judge.strategies import parse_strategy

        return parse_strategy(self.strategy or self.settings.judge_strategy, self.settings).judges_in_rounds

    @property
    def warehouse(self) -> str:
        return str(self.settings.warehouse)

    @property
    def sources_file(self) -> str | None:
        """The sources file a setting names (None: sources.toml beside the warehouse, if any)."""
        return None if self.settings.sources_file is None else str(self.settings.sources_file)

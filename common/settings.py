"""The one typed settings object. Every layer may read it; values come from `CURATE_*` env vars and flags."""

from __future__ import annotations

from enum import Enum
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from common.errors import InvalidInputError, explain, validated

# The judge's defaults (docs/genrm-protocol.md#the-request), in one place: the settings, the judge
# configuration, the vLLM command line and the stand-in all read them from here.
JUDGE_MODEL = "nvidia/Qwen3-Nemotron-235B-A22B-GenRM"
RM_MODEL = "Skywork/Skywork-Reward-V2-Llama-3.1-8B"  # the judge ladder's default reward model
JUDGE_TEMPERATURE = 0.6
JUDGE_TOP_P = 0.95
JUDGE_MAX_TOKENS = 16_384
JUDGE_MAX_MODEL_LEN = 40_000
JUDGE_MAX_REPLY_BYTES = 8 * 2**20  # a 16,384-token answer with its trace is well under 1 MiB
# The most UTF-8 bytes one token of the judge's tokenizer holds on average, over any kind of text measured
# against Qwen's BPE (Thai, the densest, about 6.8; English about 4; code, LaTeX, base64 and symbol runs fewer).
# A pair longer than this many bytes per token of the input budget cannot fit; any shorter one might, and is
# left to the judge, which counts it exactly as the server does before sending it.
MAX_BYTES_PER_TOKEN = 8
# A raw row may hold several pairs' texts (a rated row up to max_completions_per_row, 16, responses) written with
# JSON's escapes (up to twice a text's bytes): the default row limit is this many times the judge's whole context.
ROW_BYTES_MARGIN = 32


class MultiTurnPolicy(str, Enum):
    """What to do with an arena vote whose two sides do not share every turn before the last answer."""

    strict = "strict"  # quarantine it: the judge would see a history neither model saw
    last_turn = "last_turn"  # keep only the last user turn as history, flag `context_dropped`


class Settings(BaseSettings):
    # inf or nan is no setting: a budget, a timeout or a threshold of either would print as invalid JSON or never hold
    model_config = SettingsConfigDict(env_prefix="CURATE_", env_file=None, extra="ignore", allow_inf_nan=False)

    # -- the warehouse and the pipeline around it --------------------------------------------------
    warehouse: Path = Field(Path("data/warehouse.duckdb"), description="DuckDB warehouse file")
    # DuckDB caches pages up to 80% of the host's memory by default; a bound keeps a long ingest's memory flat
    # (DuckDB spills to a temporary folder beside the file past it)
    warehouse_memory_limit: str = Field("1GB", description="DuckDB's memory_limit for a warehouse connection")
    pipeline_lock_wait: float = Field(0.0, ge=0.0, description="seconds a pipeline run waits for another to finish")
    dashboard_snapshot: Path | None = Field(None, description="what the dashboard reads (default: dashboard.duckdb "
                                                             "beside the warehouse)")

    # -- ingest --------------------------------------------------------------------------------------
    batch_size: int = Field(5000, ge=1, description="rows per ingest batch (one task and one transaction each)")
    near_dup_threshold: float = Field(0.8, gt=0.0, le=1.0, description="estimated Jaccard for a near duplicate")
    minhash_perms: int = Field(256, ge=16, le=1024, description="MinHash bins (a power of two)")
    decontam_ngram: int = Field(8, ge=3, le=50, description="word n-gram size for decontamination")
    decontam_threshold: float = Field(
        0.5, gt=0.0, le=1.0, description="share of an eval prompt's n-grams found in a pair's prompt"
    )
    arena_multiturn: MultiTurnPolicy = MultiTurnPolicy.strict
    # UltraFeedback has 4 completions a row (5 in a few); one row of thousands would make thousands of pairs
    max_completions_per_row: int = Field(16, ge=2, description="completions of one row rated and paired "
                                         "(UltraFeedback); those past it are quarantined as completions_over_cap")
    max_row_bytes: int | None = Field(None, ge=1024, description="a raw row over this many bytes is quarantined as "
                                      "row_too_large while it is read (unset: 32 times the judge's whole context in "
                                      "bytes, judge_max_model_len x 8: 10,240,000)")
    hub_retries: int = Field(5, ge=0, description="attempts to resume a failed Hub read, or to redo a failed "
                             "publishing step (network errors: 10 s in all)")
    hub_retry_wait: float = Field(2.0, ge=0.0, description="first back-off in seconds, doubled each attempt")
    # declared sources (docs/sources.md#declared-sources): a file named here must exist; the default may be absent
    sources_file: Path | None = Field(None, description="the TOML file that declares sources without code (unset: "
                                      "sources.toml beside the warehouse, when there is one)")
    # docs/personal-data.md#a-detector-model: names and street addresses need a model; none runs by default
    pii_detector: str | None = Field(None, description="the detector model for names and street addresses: presidio, "
                                     "gliner[:MODEL] or MODULE:FUNCTION (unset: they are not scanned)")

    # -- the judge (docs/genrm-protocol.md): what changes a verdict, then where and how requests go --
    judge_model: str = JUDGE_MODEL
    judge_served_revision: str = Field("main", description="the model revision the server runs")
    judge_temperature: float = Field(JUDGE_TEMPERATURE, ge=0.0)
    judge_top_p: float = Field(JUDGE_TOP_P, gt=0.0, le=1.0)
    # The served context: the prompt may use what the output does not reserve.
    judge_max_model_len: int = Field(JUDGE_MAX_MODEL_LEN, ge=1024)
    judge_max_tokens: int = Field(JUDGE_MAX_TOKENS, ge=1)
    judge_endpoints: list[str] = Field(default_factory=list, description="OpenAI-compatible base URLs (…/v1)")
    judge_launch: str | None = Field(None, description="a GPU worker's own server: vllm | standin (unset: use endpoints)")
    judge_allow_other_model: bool = Field(False, description="judge with an endpoint that serves another model")
    judge_check_timeout: float = Field(5.0, gt=0, description="seconds an endpoint has to answer GET /models")
    judge_simulated: bool = Field(False, description="sharded runs: the GPU workers serve the SIMULATED stand-in")
    judge_template: str | None = Field(None, description="sharded runs: the chat template fingerprint (tpl-...) the "
                                       "GPU workers' servers must render; unset: each worker's own, unpinned")
    judge_weights: str | None = Field(None, description="sharded runs: what the GPU workers' servers load (their "
                                      "/v1/models root) where not the judge's published weights; unset: the published")
    # the judge ladder's reward model (tasks/judge/kinds/reward_model.py): the name its server serves, its context
    judge_rm_model: str = Field(RM_MODEL, description="the ladder's reward model (curate judge --rm-endpoint)")
    judge_rm_max_model_len: int = Field(16_384, ge=256, description="the reward model's served context: a pair "
                                        "whose longer answer's conversation is over it is never sent to it")
    judge_rm_gpus: int = Field(1, ge=1, description="the GPUs a reward model's server holds (its measured GPU-seconds)")
    judge_gpus: int | None = Field(None, ge=1, description="the GPUs a GenRM server holds, for its measured "
                                   "GPU-seconds (unset: CURATE_VLLM_TENSOR_PARALLEL_SIZE x DATA_PARALLEL_SIZE)")
    judge_budget_gpu_hours: float | None = Field(None, gt=0, description="a judge run sends no pair whose "
                                                 "judgments would take what it spent, its requests out included, "
                                                 "past this many GPU-hours (unset: no budget)")
    judge_strategy: str = "swap"
    judge_adaptive_margin: float = Field(1.0, ge=0.0, description="adaptive: |margin| at or below is borderline")
    judge_max_in_flight: int | None = Field(None, ge=1, description="hard upper bound on requests in flight per "
                                            "endpoint (unset: found from the server's /metrics or throughput)")
    judge_request_timeout: float = Field(900.0, gt=0, description="seconds a request may live in all, its body "
                                         "included")
    judge_max_reply_bytes: int = Field(JUDGE_MAX_REPLY_BYTES, ge=4096, description="a reply body larger than this is `too_large`, "
                                       "read no further")
    judge_retry_after_max: float = Field(120.0, ge=0.0, description="the longest Retry-After (429 / 503) honoured, "
                                         "in seconds")
    judge_max_retries: int = Field(4, ge=0, description="transient failures retried within a run")
    judge_max_attempts: int = Field(3, ge=1, description="answers without a verdict per judgment over all runs")
    judge_write_batch: int = Field(64, ge=1, description="judgments per warehouse write")
    judge_min_round: int = Field(32, ge=1, description="a run in rounds sends no climbing round of fewer "
                                 "judgments than this (or than 5% of its pairs, if fewer): each round waits for its "
                                 "slowest request with the server's batch emptying (1: every round goes)")
    # Sharded judging across GPU workers (the pipeline's `judge_shards`)
    judge_exchange: str = Field("data/judge-exchange", description="where the orchestrator and GPU workers exchange "
                                "work and results: a local folder, or an fsspec URL such as s3://bucket/prefix")
    judge_deployment: str = Field("judge-worker/judge", description="the deployment that judges one shard")
    judge_shard_poll_seconds: float = Field(5.0, gt=0)
    judge_shard_stale_seconds: float = Field(300.0, gt=0, description="a running shard silent this long is lost")

    # -- vLLM, when a GPU worker starts it itself ---------------------------------------------------
    vllm_tensor_parallel_size: int = Field(8, ge=1)
    vllm_data_parallel_size: int = Field(1, ge=1)
    vllm_gpu_memory_utilization: float = Field(0.95, gt=0.0, le=1.0)
    vllm_port: int = Field(5000, ge=1, le=65535)
    vllm_python: str | None = Field(None, description="the interpreter vLLM is installed in (unset: this one)")
    vllm_model_path: str | None = Field(None, description="the weights vLLM serves (unset: the judge model id); "
                                        "served under the judge model's name")
    vllm_device: str = Field("auto", pattern="^(auto|gpu|cpu)$", description="gpu | cpu (vLLM's CPU build) | auto "
                             "(cpu where no NVIDIA GPU shows)")
    vllm_chat_template: str | None = Field(None, description="a chat template file for vLLM (--chat-template)")
    vllm_reasoning_parser: str | None = Field(None, description="vLLM's --reasoning-parser (e.g. deepseek_r1)")
    vllm_startup_timeout: float = Field(1800.0, gt=0, description="seconds a launched vLLM has to become healthy")

    # -- cost reports ------------------------------------------------------------------------------
    cost_server_tokens_per_second: float = Field(
        2500.0, gt=0, description="a judge server's throughput (prompt + generated tokens/s) for GPU-hour estimates")

    @property
    def gpus_per_server(self) -> int:
        """The GPUs one judge server occupies: CURATE_JUDGE_GPUS where set, else tensor parallel times data
        parallel."""
        return self.judge_gpus or self.vllm_tensor_parallel_size * self.vllm_data_parallel_size

    @property
    def row_byte_limit(self) -> int:
        """The bytes a raw row may hold: `max_row_bytes`, else more than the judge's context could ever read, with a
        margin (`ROW_BYTES_MARGIN`)."""
        return self.max_row_bytes or self.judge_max_model_len * MAX_BYTES_PER_TOKEN * ROW_BYTES_MARGIN

    @property
    def judge_input_budget(self) -> int:
        """Tokens a request's input may hold: the context minus what the output may use."""
        return self.judge_max_model_len - self.judge_max_tokens


def _env_name(field: str) -> str:
    return f"CURATE_{field.upper()}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings from the environment; a value out of its field's bounds is an InvalidInputError naming its
    variable (one line), not a traceback."""
    from pydantic import ValidationError

    try:
        return Settings()
    except ValidationError as err:
        raise InvalidInputError(f"invalid settings: {explain(err, Settings, _env_name)}") from None


def settings_with(**overrides: object) -> Settings:
    """The settings, with the values a caller actually passed (None means: not passed), validated against the
    fields' own bounds: a flow parameter from a deployment is held to the same range as the CLI flag."""
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(given) - set(Settings.model_fields)
    if unknown:  # a caller's typo, not a user's: it would otherwise be dropped without a word
        raise TypeError(f"settings_with: no such setting(s) {sorted(unknown)}")
    if not given:
        return get_settings()
    return validated(Settings, {**get_settings().model_dump(), **given}, "invalid settings")


class RunContext(BaseModel):
    """What one run of a stage was asked to do, checked: a frozen model per stage (`IngestRun`, `VersionRun`,
    `PublishRun`, the review runs, `PipelineRun`; `JudgeRun` is the same idea as a frozen dataclass, since it holds
    a strategy and a judge configuration). The CLI, the flows (their parameters, as a deployment
    or another flow passes them) and the no-op answers build it with the same `of(...)`, so a value is refused in the
    same words whichever way it came in. Bounds live on the fields (the CLI's flags read theirs from there and from
    `Settings`); a value out of them is an `InvalidInputError`, one line naming it, its value and the range."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    settings: Settings

    @property
    def warehouse(self) -> Path:
        return self.settings.warehouse

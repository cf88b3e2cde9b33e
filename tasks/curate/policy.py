"""The filter policy, as data: a TOML file (or flags) that decides which judged pairs a version keeps.

Unknown keys and out-of-range values are refused with the key's name. The policy is stored with every
version, so a version says exactly how it was made.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from common.errors import UserError, validated
from tasks.curate.exports import DEFAULT_EXPORTS, EXPORTS, check_export_names


class PolicyError(UserError, ValueError):
    pass


class FilterPolicy(BaseModel):
    """Every key is also a flag of `curate build-version` (`--<key-with-dashes>`): its help is the key's
    description with its range or choices."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_abs_margin: float = Field(1.0, ge=0.0, le=2.5, description="keep pairs whose |mean margin| is at least this")
    min_confidence: float = Field(0.0, ge=0.0, le=1.0, description="keep pairs whose heuristic confidence is at "
                                  "least this")
    # the calibrated probability that the judge's direction matches a clear human preference (p_correct)
    min_p_correct: float | None = Field(None, ge=0.0, le=1.0, description="keep pairs whose calibrated probability "
                                        "of matching a clear human preference is at least this")
    require_order_agreement: bool = Field(True, description="both orders must prefer the same answer")
    # adaptive judging asks the second order only where the first verdict is borderline: a decisive first
    # verdict judged alone on purpose is kept (a second order that failed or never came is not)
    one_order_decisive: Literal["keep", "drop"] = Field("keep", description="pairs an adaptive run judged in one "
                                                        "order on purpose, its first verdict decisive")
    decisive_margin: float = Field(1.0, ge=0.0, le=2.5, description="|margin| above which one adaptive verdict is "
                                   "decisive")
    require_score_agreement: bool = Field(False, description="every verdict's scores must agree with its ranking")
    max_spread: float | None = Field(None, ge=0.0, le=2.5, description="largest standard deviation of a pair's "
                                     "margins")
    human_label: Literal["ignore", "require_agreement", "flag_disagreement"] = Field(
        "flag_disagreement", description="what to do with a pair's human label")
    human_ties: Literal["keep", "drop"] = Field("keep", description="pairs whose human label is a tie")
    both_bad: Literal["keep", "drop"] = Field("drop", description="pairs a human marked both-bad")
    max_per_source: int | None = Field(None, ge=1, description="keep at most N pairs per source, the most confident")
    max_per_domain: int | None = Field(None, ge=1, description="keep at most N pairs per domain, the most confident")
    max_per_prompt: int | None = Field(None, ge=1, description="keep at most N pairs per prompt, the most confident")
    # bias controls: drop the least confident pairs of the over-represented side until the share holds
    max_chosen_longer_share: float | None = Field(None, gt=0.0, le=1.0, description="at most this share of kept "
                                                  "pairs with the longer answer chosen")
    max_chosen_more_markdown_share: float | None = Field(None, gt=0.0, le=1.0, description="at most this share of "
                                                         "kept pairs whose chosen answer has more markdown")
    exclude_contaminated: bool = Field(True, description="leave out pairs whose prompt overlaps an evaluation set")
    # human review (Label Studio): a pair its reviewers decided takes their side; their tie or both-bad drops it
    review_overrides: bool = Field(True, description="reviewers' choices win over the judge's for their pairs")
    validation_share: float = Field(0.05, ge=0.0, lt=1.0, description="share of prompts in the validation split")
    # TRL's RewardTrainer subtracts a `margin` column inside its loss (-logsigmoid(r_c - r_r - margin)): the
    # rm export carries the judge's margin as `judge_margin` unless this asks for TRL's column on purpose.
    rm_margin_column: bool = Field(False, description="write the judge's margin as TRL's `margin` column in the rm "
                                   "export")
    # which formats a version publishes (tasks/curate/exports.py); None: those on by default
    exports: list[str] | None = Field(None, description="the export formats to publish, by name (default: those on "
                                      f"by default: {', '.join(DEFAULT_EXPORTS)}; there are {', '.join(EXPORTS)})")

    @field_validator("exports")
    @classmethod
    def _known_exports(cls, names: list[str] | None) -> list[str] | None:
        if names is not None:
            check_export_names(names)
        return names


def make_policy(values: dict) -> FilterPolicy:
    return validated(FilterPolicy, values, "invalid filter policy", PolicyError)


def load_policy(path: Path | None, overrides: dict | None = None) -> FilterPolicy:
    """The policy from a TOML file (its `[policy]` table, or the whole file), with flags on top."""
    values: dict = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as err:
            raise PolicyError(f"{path}: cannot read the policy: {err}") from None
        values = data.get("policy", data) if isinstance(data.get("policy", data), dict) else {}
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return make_policy(values)

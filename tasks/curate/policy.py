"""The filter policy, as data: a TOML file (or flags) that decides which judged pairs a version keeps.

Unknown keys, out-of-range values and values of another type (`"1.0"` or `true` for a number: nothing is
coerced; an integer where a number is asked is fine) are refused with the key's name. A file is exactly one
`[policy]` table, or its keys at the top level alone, in UTF-8: anything else is refused in one line, and
only a regular file of at most `MAX_POLICY_BYTES` is read (a FIFO or /dev/zero never blocks or fills memory).
The policy is stored with every version, so a version says exactly how it was made.

With `target_agreement` the selection is certified (`tasks.curate.certification`): a threshold on a calibrated
score is chosen so that the kept pairs agree with human preference at least that often, with probability
1 - `risk`. The judge's heuristic cut-offs (`HEURISTIC_KEYS`) then have no say: set beside a target (to anything
but their neutral values) they are refused, else they are neutral. Without a target the certification's keys are not stored (a policy without one
is stored, compared and shown as before they existed), and setting one of them alone is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from common.errors import InvalidInputError, UserError, validated
from common.files import UnreadableTextError, read_small_toml
from tasks.curate.exports import DEFAULT_EXPORTS, EXPORTS, check_export_names
from tasks.ingest.pii import ALL_KINDS as PII_KINDS

if TYPE_CHECKING:
    from tasks.judge.context import JudgeRun

MAX_POLICY_BYTES = 1 << 20  # a policy is a few hundred bytes
# the judge's own cut-offs, which a certified selection replaces, and the values that make them keep everything
HEURISTIC_KEYS = {"min_abs_margin": 0.0, "min_confidence": 0.0, "min_p_correct": None}
# the keys of a certified selection, which mean nothing without `target_agreement`
CERTIFICATION_KEYS = ("target_agreement", "risk", "calibration_share", "min_audit_reviews", "min_audit_reviewers",
                      "audit_votes", "judge_like_labels", "uncovered")
# keys a policy file sets and no flag does (a table of shares)
FILE_ONLY_KEYS = ("mixture", "pii_kinds")
# keys stored with a version only when set away from their default (a version made before they existed compares and
# reads back as itself)
QUIET_DEFAULTS = {"sources": None, "mixture": None, "pii": "redact", "pii_kinds": None, "min_audit_reviewers": 3, "audit_votes": 1,
                  "judge_like_labels": "exclude", "uncovered": "drop"}


class PolicyError(UserError, ValueError):
    pass


class FilterPolicy(BaseModel):
    """Every key is also a flag of `curate build-version` (`--<key-with-dashes>`): its help is the key's
    description with its range or choices."""

    # strict: a TOML string or boolean is never read as a number, nor a number as a boolean (flags arrive typed)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

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

    # certified curation (docs/certification.md): the kept pairs' agreement with human preference, guaranteed
    target_agreement: float | None = Field(None, gt=0.5, lt=1.0, description="certify that the kept pairs' chosen "
                                           "answers agree with human preference at least this often (replaces "
                                           "min_abs_margin, min_confidence, min_p_correct)")
    risk: float = Field(0.05, gt=0.0, le=0.5, description="with target_agreement: the chance the guarantee may fail "
                        "(delta)")
    calibration_share: float = Field(0.5, gt=0.0, le=1.0, description="with target_agreement and no review audit: "
                                     "the share of pairs with a clear source label held out to certify")
    min_audit_reviews: int = Field(200, ge=1, description="with target_agreement: decided review-audit pairs from "
                                   "which the audit certifies instead of the sources' labels")
    min_audit_reviewers: int = Field(3, ge=1, description="with target_agreement: distinct reviewers the audit's "
                                     "decided pairs must come from before it certifies")
    audit_votes: int = Field(1, ge=1, description="with target_agreement: votes an audit pair needs to calibrate "
                             "(2 or more: one reviewer alone never decides a calibration label)")
    judge_like_labels: Literal["exclude", "trust"] = Field(
        "exclude", description="with target_agreement: a source whose clear labels agree with the judge far above "
        "the others (or almost always) is left out of calibration, or trusted")
    uncovered: Literal["drop", "keep"] = Field(
        "drop", description="with target_agreement: pairs no calibration label speaks for (not covered) are "
        "dropped, or kept uncertified and named on the card")
    # personal data and secrets the ingest found in a pair's texts (tasks/ingest/pii.py; docs/personal-data.md)
    pii: Literal["redact", "drop", "keep"] = Field(
        "redact", description="personal data and secrets found in a pair's texts: each replaced by a typed "
        "placeholder (<EMAIL>, <PHONE>, <SECRET>, ...), the pair dropped, or left as found")
    pii_kinds: dict[str, Literal["redact", "drop", "keep"]] | None = Field(
        None, description="per kind (" + ", ".join(PII_KINDS) + "): redact, drop or keep, over `pii` for that kind")
    # what a version is made of (alignment-handbook's dataset mixer): its sources, and a share of each
    sources: list[str] | None = Field(None, description="the sources a version is made of, by name (default: "
                                      "every source judged)")
    mixture: dict[str, float] | None = Field(None, description="the share of each named source's pairs a version "
                                             "draws (0 < share <= 1, by a hash of the pair id); its names are the "
                                             "version's sources unless `sources` names them")

    @model_validator(mode="before")
    @classmethod
    def _certified_or_heuristic(cls, values: object) -> object:
        """A target replaces the heuristic cut-offs (refused when set beside it, else neutral); the certification's
        other keys need a target."""
        if not isinstance(values, dict):
            return values
        if values.get("target_agreement") is None:
            alone = [k for k in CERTIFICATION_KEYS[1:] if k in values]
            if alone:
                many = len(alone) > 1
                raise ValueError(f"{', '.join(alone)} only {'apply' if many else 'applies'} with target_agreement: "
                                 f"set a target, or drop {'them' if many else 'it'}")
            return values
        # a neutral value beside a target changes nothing (a stored certified policy reads back as itself)
        beside = [f"{k} = {values[k]!r}" for k, neutral in HEURISTIC_KEYS.items() if k in values and values[k] != neutral]
        if beside:
            raise ValueError(f"target_agreement certifies the selection itself: {', '.join(beside)} cannot be set "
                             f"beside it (drop {'them' if len(beside) > 1 else 'it'}, or the target)")
        return {**values, **HEURISTIC_KEYS}

    @model_serializer(mode="wrap")
    def _stored(self, handler):
        """Without a target, the policy as it was before certification existed (a version's policy and its
        comparisons unchanged)."""
        out = handler(self)
        if self.target_agreement is None:
            for key in CERTIFICATION_KEYS:
                out.pop(key, None)
        for key, default in QUIET_DEFAULTS.items():
            if key in out and out[key] == default:
                out.pop(key)
        return out

    @field_validator("mixture")
    @classmethod
    def _shares(cls, mixture: dict[str, float] | None) -> dict[str, float] | None:
        if mixture is not None:
            wrong = [f"{k} = {v!r}" for k, v in mixture.items() if not 0.0 < v <= 1.0]
            if wrong or not mixture:
                raise ValueError("a mixture gives each source a share 0 < share <= 1" +
                                 (f", not {', '.join(wrong)}" if wrong else ": it names none"))
        return mixture

    @field_validator("pii_kinds")
    @classmethod
    def _known_kinds(cls, kinds: dict[str, str] | None) -> dict[str, str] | None:
        unknown = sorted(set(kinds or {}) - set(PII_KINDS))
        if unknown:
            raise ValueError(f"unknown kind(s) {', '.join(unknown)}: the kinds are {', '.join(PII_KINDS)}")
        return kinds

    def pii_actions(self) -> dict[str, str]:
        """What a version does with each kind of finding: redact, drop or keep."""
        return {kind: (self.pii_kinds or {}).get(kind, self.pii) for kind in PII_KINDS}

    @model_validator(mode="after")
    def _mixture_within_sources(self) -> FilterPolicy:
        if self.mixture is not None and self.sources is not None:
            outside = sorted(set(self.mixture) - set(self.sources))
            if outside:
                raise ValueError(f"mixture names {', '.join(outside)}, which `sources` leaves out")
        if self.sources is not None and not self.sources:
            raise ValueError("sources names no source: leave it out for every source")
        return self

    def version_sources(self) -> dict[str, float] | None:
        """The sources a version is made of with the share of each it draws (None: every source, whole)."""
        if self.sources is None and self.mixture is None:
            return None
        names = self.sources if self.sources is not None else list(self.mixture or {})
        return {name: (self.mixture or {}).get(name, 1.0) for name in names}

    def check_sources(self, held: Iterable[str], config_id: str) -> None:
        """Each source the version is made of (`version_sources`) is among those of the judged pool (`held`, the
        sources of its pairs); else one line naming the others. The one refusal of a `sources` or `mixture` key
        naming a source the warehouse does not hold: the CLI makes it before Prefect starts, a version's selection
        (a deployment's build) when it reads the pool."""
        wanted, there = self.version_sources(), set(held)
        unknown = sorted(set(wanted or ()) - there)
        if unknown:
            raise InvalidInputError(f"sources {', '.join(map(repr, unknown))}: no pair judged under {config_id} comes "
                                    f"from {'them' if len(unknown) > 1 else 'it'} (judged: "
                                    f"{', '.join(sorted(there)) or 'none'})")

    @field_validator("exports")
    @classmethod
    def _known_exports(cls, names: list[str] | None) -> list[str] | None:
        if names is not None:
            check_export_names(names)
        return names


def promised(policy: FilterPolicy) -> dict:
    """What a certified version promises (its target and risk), part of its content hash: the card states it, so
    the same rows promised otherwise are another version. Empty without a target: hashes as before."""
    if policy.target_agreement is None:
        return {}
    return {"target_agreement": policy.target_agreement, "risk": policy.risk}


def make_policy(values: dict) -> FilterPolicy:
    return validated(FilterPolicy, values, "invalid filter policy", PolicyError)


def policy_values(path: Path) -> dict:
    """The keys a policy file sets: its one `[policy]` table, or its top-level keys when it has none."""
    try:
        data = read_small_toml(path, MAX_POLICY_BYTES, "a policy file")
    except UnreadableTextError as err:
        raise PolicyError(f"{path}: cannot read the policy: {err}") from None
    if "policy" not in data:
        return data
    table, beside = data.pop("policy"), sorted(data)
    if not isinstance(table, dict):
        given = "an array of tables [[policy]]" if isinstance(table, list) else f"`policy = {table!r}`"
        raise PolicyError(f"{path}: a policy file is one [policy] table (or its keys alone), not {given}")
    if beside:
        raise PolicyError(f"{path}: key(s) {', '.join(map(repr, beside))} beside the [policy] table would be "
                          "ignored: put them inside it, or drop the [policy] header")
    return table


def load_policy(path: Path | None, overrides: dict | None = None) -> FilterPolicy:
    """The policy from a TOML file (its `[policy]` table, or the whole file), with flags on top."""
    values = policy_values(Path(path)) if path is not None else {}
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return make_policy(values)


def rounds_policy(target_agreement: float | None, risk: float | None, policy_path: str | None = None) -> FilterPolicy:
    """The policy a run in rounds decides by: the policy file's (the one the version will be built by: its
    calibration share and audit threshold decide which labels may steer the rounds), the target and risk flags on
    top. A wrong file or value, or no target at all (neither given nor in the file): `PolicyError`, one line, the
    one refusal of a run in rounds without a target, whichever command asked for it."""
    policy = load_policy(Path(policy_path) if policy_path else None, {"target_agreement": target_agreement,
                                                                      "risk": risk})
    if policy.target_agreement is None:
        where = f"{policy_path} sets no target_agreement" if policy_path else "no target"
        raise PolicyError(f"{where}: judging in rounds escalates toward a certified version's target (set "
                          "target_agreement in the policy, or give curate judge --target-agreement A, the agreement with human "
                          "preference a certified version is to reach, 0.5 < A < 1)")
    return policy


def in_rounds(run: JudgeRun) -> JudgeRun:
    """The judge run with the policy its rounds decide by (`rounds_policy`), read once where the run is made (the
    CLI before Prefect starts, a flow from its parameters) and handed on with the run; a run not in rounds as it
    is."""
    if not run.strategy.judges_in_rounds:
        return run
    return replace(run, policy=rounds_policy(run.target_agreement, run.risk, run.policy_path))

"""From judged pairs to the rows of a dataset version: confidence, the policy's filters and caps, the
chosen/rejected direction, a train/validation split by prompt, and a content hash (pure functions)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, fields

from common.errors import UserError
from tasks.curate.bias import Preference, chosen_longer, chosen_more_markdown, hold_share
from tasks.curate.confidence import Confidence, pair_confidence
from tasks.curate.policy import FilterPolicy
from tasks.judge.genrm import SideVerdict


@dataclass(slots=True)
class JudgedPair:
    pair_id: str
    source: str
    source_id: str
    source_revision: str
    history: list[dict[str, str]]
    response_a: str
    response_b: str
    human_label: float | None
    both_bad: bool
    domain: str | None
    language: str | None
    contaminated: bool
    verdicts: list[tuple[str, SideVerdict]] = field(default_factory=list)
    adaptive: bool = False  # judged by an adaptive run: one order on purpose when the first was decisive
    has_failed: bool = False  # a judgment of this pair failed (its second order may be missing for that)
    model_a: str | None = None  # arena-style rows: the models that wrote each answer
    model_b: str | None = None


@dataclass(slots=True)
class VersionRow:
    pair_id: str
    prompt: list[dict[str, str]]
    chosen: str
    rejected: str
    chosen_side: str  # "a" | "b": which of the pair's responses the judge prefers
    margin: float  # mean margin from the chosen response's side (> 0)
    confidence: float  # the heuristic (|margin| / 2.5 x agreements), kept beside p_correct for comparison
    p_correct: float | None  # calibrated probability that the judge's direction matches a clear human label
    orders_agree: bool | None
    scores_agree: bool
    spread: float
    verdicts: int
    human_label: float | None  # from the chosen response's side
    human_agrees: bool | None
    source: str
    source_id: str
    source_revision: str
    domain: str | None
    language: str | None
    split: str


ROW_FIELDS = tuple(f.name for f in fields(VersionRow))


def row_dict(row: VersionRow) -> dict:
    """A row's fields by name, in declaration order. Shallow: `dataclasses.asdict` deep-copies every prompt,
    which was half of a million-row version's build (measured)."""
    return {name: getattr(row, name) for name in ROW_FIELDS}


def prompt_key(history: list[dict[str, str]]) -> str:
    text = json.dumps([[m["role"], m["content"]] for m in history], ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def split_of(history: list[dict[str, str]], validation_share: float) -> str:
    """Deterministic by prompt: every pair of one prompt lands in the same split."""
    bucket = int(prompt_key(history)[:8], 16) / 0xFFFFFFFF
    return "validation" if bucket < validation_share else "train"


def one_order_reason(pair: JudgedPair, c: Confidence, policy: FilterPolicy) -> str | None:
    """Why a pair judged in one order only is dropped, or None when it was one order on purpose: an
    adaptive run asked no second order because the first verdict was decisive (|margin| above the policy's
    `decisive_margin` and scores agreeing with the ranking), and nothing of the pair failed."""
    if not pair.adaptive:
        return "one_order_only"  # judged with `single`: nothing checked its position bias
    if pair.has_failed:
        return "second_order_failed"
    decisive = abs(c.margin) > policy.decisive_margin and c.scores_agree
    if not decisive or policy.one_order_decisive == "drop":
        return "second_order_missing" if not decisive else "one_order_decisive"
    return None


class NoCalibrationError(UserError):
    """`min_p_correct` asks for probabilities that could not be fitted."""

    hint = "judge more human-labelled pairs, or filter on min_confidence instead"


def _drop_reason(pair: JudgedPair, c: Confidence, policy: FilterPolicy, p: float | None) -> str | None:
    if pair.contaminated and policy.exclude_contaminated:
        return "contaminated"
    if pair.both_bad and policy.both_bad == "drop":
        return "both_bad"
    if pair.human_label == 0 and policy.human_ties == "drop":
        return "human_tie"
    if c.direction == "tie":
        return "judge_tie"
    if abs(c.margin) < policy.min_abs_margin:
        return "margin_below_min"
    if c.confidence < policy.min_confidence:
        return "confidence_below_min"
    if policy.min_p_correct is not None and (p is None or p < policy.min_p_correct):
        return "p_correct_below_min"
    if policy.require_order_agreement and c.orders_agree is None:
        one = one_order_reason(pair, c, policy)
        if one is not None:
            return one
    if policy.require_order_agreement and c.orders_agree is False:
        return "orders_disagree"
    if policy.require_score_agreement and not c.scores_agree:
        return "scores_disagree"
    if policy.max_spread is not None and c.spread > policy.max_spread:
        return "spread_above_max"
    if policy.human_label == "require_agreement" and c.human_agrees is False:
        return "human_disagrees"
    return None


def preference(pair: JudgedPair, direction: str) -> Preference:
    """The pair as chosen/rejected for the bias audit."""
    a_wins = direction == "a"
    return Preference(chosen=pair.response_a if a_wins else pair.response_b,
                      rejected=pair.response_b if a_wins else pair.response_a, chosen_side=direction,
                      chosen_model=pair.model_a if a_wins else pair.model_b,
                      rejected_model=pair.model_b if a_wins else pair.model_a)


def confidences_of(pairs: list[JudgedPair]) -> dict[str, Confidence]:
    """Each judged pair's confidence, computed once for calibration, selection and the audit."""
    return {p.pair_id: pair_confidence(p.verdicts, p.human_label) for p in pairs if p.verdicts}


def pool_preferences(pairs: list[JudgedPair], confidences: dict[str, Confidence] | None = None) -> list[Preference]:
    """Every judged pair with a direction, as the judge ranks it: the pool a version is drawn from."""
    out = []
    for pair in pairs:
        if pair.verdicts:
            c = confidences[pair.pair_id] if confidences else pair_confidence(pair.verdicts)
            if c.direction != "tie":
                out.append(preference(pair, c.direction))
    return out


def select_rows(pairs: list[JudgedPair], policy: FilterPolicy, p_correct: dict[str, float] | None = None,
                confidences: dict[str, Confidence] | None = None) -> tuple[list[VersionRow], Counter]:
    """The rows a policy keeps, in a stable order, and the dropped pairs counted by reason. `p_correct`:
    the calibrated probabilities (none when too few pairs carry a clear human label)."""
    p_correct = p_correct or {}
    if policy.min_p_correct is not None and not p_correct:
        raise NoCalibrationError("the policy filters on min_p_correct, but no calibrated p_correct exists for "
                                 "this judge configuration (too few pairs with a clear human label)")
    dropped: Counter = Counter()
    kept: list[tuple[JudgedPair, Confidence]] = []
    for pair in pairs:
        if not pair.verdicts:
            dropped["not_judged"] += 1
            continue
        c = confidences[pair.pair_id] if confidences else pair_confidence(pair.verdicts, pair.human_label)
        reason = _drop_reason(pair, c, policy, p_correct.get(pair.pair_id))
        if reason:
            dropped[reason] += 1
        else:
            kept.append((pair, c))
    # Caps keep the most confident pairs first; ties broken by pair id, so the choice is reproducible.
    kept.sort(key=lambda pc: (-pc[1].confidence, pc[0].pair_id))
    caps = [("prompt", policy.max_per_prompt, lambda p: prompt_key(p.history)),
            ("domain", policy.max_per_domain, lambda p: p.domain or ""),
            ("source", policy.max_per_source, lambda p: p.source)]
    for name, cap, key in caps:
        if cap is None:
            continue
        seen: Counter = Counter()
        survivors = []
        for pair, c in kept:
            k = key(pair)
            if seen[k] >= cap:
                dropped[f"cap_per_{name}"] += 1
                continue
            seen[k] += 1
            survivors.append((pair, c))
        kept = survivors
    # Bias controls: the over-represented side loses its least confident pairs (calibrated when known).
    def weight(pc: tuple[JudgedPair, Confidence]) -> float:
        return p_correct.get(pc[0].pair_id, pc[1].confidence)

    for name, cap, flag in (("chosen_longer_share", policy.max_chosen_longer_share, chosen_longer),
                            ("chosen_more_markdown_share", policy.max_chosen_more_markdown_share,
                             chosen_more_markdown)):
        if cap is not None:
            kept, gone = hold_share(kept, lambda pc: flag(preference(pc[0], pc[1].direction)), cap, weight)
            if gone:
                dropped[name] += gone
    rows = []
    for pair, c in sorted(kept, key=lambda pc: pc[0].pair_id):
        a_wins = c.direction == "a"
        rows.append(VersionRow(
            pair_id=pair.pair_id, prompt=pair.history,
            chosen=pair.response_a if a_wins else pair.response_b,
            rejected=pair.response_b if a_wins else pair.response_a,
            chosen_side=c.direction, margin=abs(c.margin), confidence=c.confidence,
            p_correct=None if pair.pair_id not in p_correct else round(p_correct[pair.pair_id], 6),
            orders_agree=c.orders_agree,
            scores_agree=c.scores_agree, spread=c.spread, verdicts=c.verdicts,
            human_label=None if pair.human_label is None else (pair.human_label if a_wins else -pair.human_label),
            human_agrees=c.human_agrees if policy.human_label != "ignore" else None,
            source=pair.source, source_id=pair.source_id, source_revision=pair.source_revision,
            domain=pair.domain, language=pair.language, split=split_of(pair.history, policy.validation_share),
        ))
    return rows, dropped


def content_hash(rows: list[VersionRow], export_options: dict | None = None) -> str:
    """A hash of what a version holds: the same policy over the same judgments gives the same hash.
    `export_options` that change the published files (a TRL `margin` column) are part of it when set."""
    h = hashlib.blake2b(digest_size=16)
    if export_options:
        h.update(json.dumps(export_options, sort_keys=True).encode() + b"\n")
    for row in sorted(rows, key=lambda r: r.pair_id):
        h.update(json.dumps(row_dict(row), ensure_ascii=False, sort_keys=True, default=str).encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()

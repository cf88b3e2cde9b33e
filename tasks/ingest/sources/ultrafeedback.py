"""openbmb/UltraFeedback: one instruction, several completions (four, mostly) by different models, each
rated by GPT-4 on four aspects (helpfulness, honesty, instruction following, truthfulness).

The pairing rule: the best completion (highest `fine-grained_score`, the mean of its aspect ratings on the
1-5 scale; ties broken by the higher `overall_score`, then by the earlier position) is paired against every
other completion rated at least `PAIR_THRESHOLD` (1.0) fine-grained points below it. A row makes 0 to n-1
pairs. A row whose usable completions all lie within the threshold of the best makes none: it is
quarantined as `no_clear_preference` (counted under that reason in the summary's `quarantined`).

A completion that is not an object, whose answer is empty, that holds a NaN or an infinity (a score, a
rating: `completion_not_finite:<field>`, where the raw stage would quarantine the whole row), or whose
`fine-grained_score` or `overall_score` is missing, not a number or (fine-grained) outside 1-5 is rejected
with a `completion_*` reason naming it; the other completions are still paired, so such a row lands its
pairs and a quarantine record. Fewer than two usable completions is `fewer_than_two_completions`. Only the
first `CURATE_MAX_COMPLETIONS_PER_ROW` (16) completions of a row are rated: the rest are left out as
`completions_over_cap(<=16)` (a row of 5,000 would otherwise make thousands of pairs of one prompt).

Which completion is response A is decided by a hash of the pair's source id, not by the rating: a source
whose answer A always wins would make the pool's A side look better and confound the audit of the judge's
position bias, and would give the calibration labels of one sign only. The human label is the fine-grained
difference from A's side, capped at 3 (the scale's end; the raw label keeps both scores); a difference of
1.0 or more is clear, so every pair this rule makes counts as clear. The ratings are GPT-4's: they stand
where the other sources have a person's label.

Each completion was written under a system prompt of its own (`custom_system_prompt`, after a `principle`):
no history is shared but the user turn, so the judge sees that alone; the principles stay in the metadata.
The Hub's revisions before 2023-12-29 hold `overall_score`s of 10 that should have been 1 (the dataset's
fix): here it only breaks ties, and the revision read is pinned on first use like every source's.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandera.pandas as pa

from common.reasons import AdapterRejection, SchemaCheck, ValueFault
from schemas.checks import is_str_or_none, text_not_empty, value_faults
from schemas.pair import HUMAN_LABEL_MAX, CandidatePair, Rejection, model_names
from schemas.raw import element_check, text_column
from tasks.ingest.normalize import row_hash
from tasks.ingest.sources.base import AdapterContext, Source

PAIR_THRESHOLD = 1.0  # fine-grained points (1-5) the best completion must lead another by to make a pair
CLEAR_LABEL = 1.0  # |fine-grained difference| from which the preference is clear
FINE_GRAINED_RANGE = (1.0, 5.0)
FINE, OVERALL = "fine-grained_score", "overall_score"


def _is_text_list_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, list) and all(isinstance(m, str) for m in v))


# Completions are checked one by one by the adapter: one bad completion must not lose the others.
RAW_SCHEMA = pa.DataFrameSchema(
    {
        "instruction": text_column(),
        "completions": pa.Column(None, element_check(lambda v: isinstance(v, list), SchemaCheck.IS_LIST)),
        "source": pa.Column(None, element_check(is_str_or_none, SchemaCheck.IS_TEXT), nullable=True, required=False),
        "models": pa.Column(None, element_check(_is_text_list_or_none, SchemaCheck.IS_TEXT_LIST), nullable=True,
                            required=False),
    },
    strict=False,
)


@dataclass(frozen=True, slots=True)
class Rated:
    """A usable completion: its position in the row, its answer, its two scores and who wrote it."""

    position: int
    response: str
    fine: float
    overall: float
    model: str | None
    principle: str | None
    ratings: dict[str, Any]


def source_id(row: dict[str, Any]) -> str:
    # The dataset has no id column: a content hash of the whole row is stable across revisions.
    return "row-" + row_hash(row)[:24]


def pair_source_id(row_id: str, better: int, worse: int) -> str:
    """A pair's own id: the row's, and which completions it pairs (by position, the better first)."""
    return f"{row_id}:{better}>{worse}"


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def rate(position: int, completion: Any, models: Any) -> Rated | Rejection:
    """A completion as a usable `Rated`, or why it is not usable."""
    where = f"completion {position}"
    if not isinstance(completion, dict):
        return Rejection([AdapterRejection.COMPLETION_NOT_AN_OBJECT], where)
    model = completion.get("model")
    if not isinstance(model, str) and isinstance(models, list) and position < len(models):
        model = models[position]
    model = model if isinstance(model, str) else None
    where += f" ({model})" if model else ""
    response = completion.get("response")
    if not text_not_empty(response):  # white space, zero-width characters and NULs alone are empty too
        return Rejection([AdapterRejection.COMPLETION_RESPONSE_EMPTY], where)
    not_finite = [f.removeprefix(ValueFault.NOT_FINITE.prefix) for f in value_faults(completion)
                  if f.startswith(ValueFault.NOT_FINITE.prefix)]
    if not_finite:
        return Rejection([AdapterRejection.COMPLETION_NOT_FINITE.of(f) for f in not_finite],
                         f"{where}: NaN or Infinity under {', '.join(not_finite)}")
    fine, overall = _number(completion.get(FINE)), _number(completion.get(OVERALL))
    if fine is None:
        return Rejection([AdapterRejection.COMPLETION_SCORE_INVALID.of(FINE)], f"{where}: {completion.get(FINE)!r}")
    if not FINE_GRAINED_RANGE[0] <= fine <= FINE_GRAINED_RANGE[1]:
        return Rejection([AdapterRejection.COMPLETION_SCORE_OUT_OF_RANGE.of(FINE)], f"{where}: {fine:g}")
    if overall is None:
        return Rejection([AdapterRejection.COMPLETION_SCORE_INVALID.of(OVERALL)],
                         f"{where}: {completion.get(OVERALL)!r}")
    annotations = completion.get("annotations")
    ratings = {aspect: (a.get("Rating") if isinstance(a, dict) else None)
               for aspect, a in annotations.items()} if isinstance(annotations, dict) else {}
    principle = completion.get("principle")
    return Rated(position, response, fine, overall, model, principle if isinstance(principle, str) else None, ratings)


def rank(rated: list[Rated], threshold: float = PAIR_THRESHOLD) -> tuple[Rated, list[Rated]]:
    """(the best completion, the others at least `threshold` below it, in position order)."""
    best = max(rated, key=lambda r: (r.fine, r.overall, -r.position))
    # rounded: 4.1 - 3.1 is 0.9999999999999996 in floating point, and means 1
    worse = [r for r in rated if r is not best and round(best.fine - r.fine, 6) >= threshold]
    return best, worse


def a_is_better(pair_id: str) -> bool:
    """Whether the better completion is response A: half the pairs each way, the same on every run."""
    return hashlib.blake2b(pair_id.encode("utf-8", "surrogatepass"), digest_size=1).digest()[0] < 128


def make_pair(row: dict[str, Any], row_id: str, better: Rated, worse: Rated, ctx: AdapterContext) -> CandidatePair:
    sid = pair_source_id(row_id, better.position, worse.position)
    a, b = (better, worse) if a_is_better(sid) else (worse, better)
    difference = min(round(better.fine - worse.fine, 6), HUMAN_LABEL_MAX)
    return CandidatePair(
        source="ultrafeedback",
        source_id=sid,
        history=[{"role": "user", "content": row["instruction"]}],
        response_a=a.response,
        response_b=b.response,
        human_label=difference if a is better else -difference,
        raw_label=f"fine-grained {a.fine:g} vs {b.fine:g}, overall {a.overall:g} vs {b.overall:g}",
        domain="general",
        # mostly English, but ShareGPT prompts come in many languages: unknown is more honest than a wrong code
        language=None,
        metadata={
            **model_names(a.model, b.model),
            "prompt_source": row.get("source"),
            "completions": [a.position, b.position],
            "principles": [a.principle, b.principle],
            "ratings": [a.ratings, b.ratings],
            "split": ctx.split,
        },
    )


def to_pairs(row: dict[str, Any], ctx: AdapterContext) -> Iterator[CandidatePair | Rejection]:
    """Every pair a row makes under the pairing rule, and a rejection for each completion it cannot use."""
    completions, cap = row["completions"], ctx.settings.max_completions_per_row
    if len(completions) > cap:
        yield Rejection([AdapterRejection.COMPLETIONS_OVER_CAP.of(cap)], f"{len(completions)} completions: those "
                                                                         f"at positions {cap} and after left out")
        completions = completions[:cap]
    rated = []
    for position, completion in enumerate(completions):
        result = rate(position, completion, row.get("models"))
        if isinstance(result, Rejection):
            yield result
        else:
            rated.append(result)
    if len(rated) < 2:
        yield Rejection([AdapterRejection.FEWER_THAN_TWO_COMPLETIONS],
                        f"{len(rated)} of {len(completions)} completions usable")
        return
    best, worse = rank(rated)
    if not worse:
        runner_up = max(r.fine for r in rated if r is not best)
        yield Rejection([AdapterRejection.NO_CLEAR_PREFERENCE], f"best fine-grained {best.fine:g}, next "
                                                                 f"{runner_up:g}: none {PAIR_THRESHOLD:g} below")
        return
    row_id = source_id(row)
    for other in worse:
        yield make_pair(row, row_id, best, other, ctx)


SOURCE = Source(
    name="ultrafeedback",
    hub_id="openbmb/UltraFeedback",
    config=None,
    splits=("train",),
    license="mit",
    raw_schema=RAW_SCHEMA,
    kind="pairs",
    adapt=to_pairs,
    source_id=source_id,
    description="UltraFeedback: 4 completions per instruction rated by GPT-4; the best against each one 1.0 below",
    clear_label=CLEAR_LABEL,
    names_models=True,
    finite_checked_by_adapter=("completions",),  # a NaN score is that completion's fault, not the row's
)

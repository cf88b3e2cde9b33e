"""openbmb/UltraFeedback: one instruction, several completions (four, mostly) by different models, each
rated by GPT-4 on four aspects (helpfulness, honesty, instruction following, truthfulness).

The pairing rule: the best completion (highest `fine-grained_score`, the mean of its aspect ratings on the
1-5 scale; ties broken by the higher `overall_score`, then by the earlier position) is paired against every
other completion rated at least `PAIR_THRESHOLD` (1.0) fine-grained points below it. A row makes 0 to n-1
pairs. A row whose usable completions all lie within the threshold of the best makes none: it is
quarantined as `no_clear_preference` (counted under that reason in the summary's `quarantined`). The rule is
`tasks.ingest.sources.rating`'s, the declared `rated` format's too: this module says how a completion is rated.

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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandera.pandas as pa

from common.reasons import AdapterRejection, ReadFault, SchemaCheck, ValueFault, column_reason
from schemas.checks import finite_number, is_str_or_none, text_not_empty, value_faults
from schemas.pair import HUMAN_LABEL_MAX, CandidatePair, Rejection, model_names
from schemas.raw import element_check, text_column
from tasks.ingest.latent import latent_quality
from tasks.ingest.normalize import row_hash
from tasks.ingest.sources.base import AdapterContext, Source
from tasks.ingest.sources.rating import PairingRule, Ranking
from tasks.ingest.synth_rows import SynthRows, pair_sizes, too_deep

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


_number = finite_number  # an integer past a float's range is no usable score


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


def _no_clear_detail(ranking: Ranking[Rated]) -> str:
    runner_up = max(r.fine for r in ranking.others)
    return f"best fine-grained {ranking.best.fine:g}, next {runner_up:g}: none {PAIR_THRESHOLD:g} below"


# the best by fine-grained score (ties: the higher overall score, then the earlier position)
RULE: PairingRule[Rated] = PairingRule(min_gap=PAIR_THRESHOLD, value=lambda r: r.fine,
                                       tiebreak=lambda r: (-r.overall, r.position), noun="completions",
                                       no_clear_detail=_no_clear_detail)


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
    models = row.get("models")
    for found in RULE.ranked(row["completions"], ctx.settings.max_completions_per_row,
                             lambda position, completion: rate(position, completion, models)):
        if isinstance(found, Rejection):
            yield found
            continue
        row_id = source_id(row)
        for other in found.worse:
            yield make_pair(row, row_id, found.best, other, ctx)


class UltraFeedbackRows(SynthRows):
    """Synthetic UltraFeedback rows (`curate synth ultrafeedback`): one instruction, four rated completions. A good
    row's best completion leads one or two others by at least the pairing threshold (1.0) and the rest by less,
    never tying it, so the pairs each row makes are known by construction; a tie row's completions all lie within
    the threshold."""

    ASPECTS = ("helpfulness", "honesty", "instruction_following", "truthfulness")
    PROMPT_SOURCES = ("evol_instruct", "false_qa", "flan_v2_cot", "sharegpt", "ultrachat", "truthful_qa")
    TIE_RATE = 0.05  # of the good rows
    # `partly`: the row still makes its pairs; one completion is quarantined (see `bad`)
    BAD_KINDS = {
        "malformed_json": ReadFault.MALFORMED_JSON,
        "not_an_object": ReadFault.NOT_AN_OBJECT,
        "too_deep_for_parsers": ReadFault.JSON_TOO_DEEP,
        "too_deep_for_storage": ValueFault.JSON_TOO_DEEP,
        "lone_surrogate": ValueFault.INVALID_UTF8.of("completions"),
        "surrogate_in_source": ValueFault.INVALID_UTF8.of("source"),
        "partly_nan_score": AdapterRejection.COMPLETION_NOT_FINITE.of(FINE),
        "nan_beside_completions": ValueFault.NOT_FINITE.of("correct_answers"),  # the row's own fault: quarantined
        "too_long": column_reason("utf8_bytes", SchemaCheck.FITS_JUDGE_CONTEXT.prefix),
        "empty_last_user_turn": column_reason("history", SchemaCheck.LAST_USER_TURN_NOT_EMPTY),
        "missing_instruction": column_reason("instruction", SchemaCheck.MISSING),
        "instruction_not_text": column_reason("instruction", SchemaCheck.IS_TEXT),
        "completions_not_list": column_reason("completions", SchemaCheck.IS_LIST),
        "one_completion": AdapterRejection.FEWER_THAN_TWO_COMPLETIONS,
        "identical_responses": SchemaCheck.RESPONSES_DIFFER,
        "partly_empty_completion": AdapterRejection.COMPLETION_RESPONSE_EMPTY,
        "partly_invisible_completion": AdapterRejection.COMPLETION_RESPONSE_EMPTY,
        "partly_score_missing": AdapterRejection.COMPLETION_SCORE_INVALID.of(FINE),
        "partly_score_not_numeric": AdapterRejection.COMPLETION_SCORE_INVALID.of(FINE),
        "partly_score_out_of_range": AdapterRejection.COMPLETION_SCORE_OUT_OF_RANGE.of(FINE),
        "partly_overall_not_numeric": AdapterRejection.COMPLETION_SCORE_INVALID.of(OVERALL),
        "partly_completion_not_object": AdapterRejection.COMPLETION_NOT_AN_OBJECT,
    }

    def good(self, contaminate: int | None = None, tie: bool | None = None) -> dict[str, Any]:
        h, r1, r2 = pair_sizes(self.rng, self.pair_bytes)
        prompt = self.tm.text(max(40, h))
        if contaminate is not None:
            prompt += "\n\n" + self.eval_prompts[contaminate]
        # the better-rated answers are the truly better ones: the stand-in judges by the same latent quality
        texts = sorted((self.tm.text(n) for n in (r1, r2, (r1 + r2) // 2, self.rng.choice([r1, r2]))),
                       key=latent_quality, reverse=True)
        if tie is None:
            tie = contaminate is None and self.rng.random() < self.TIE_RATE
        best = self.rng.choice([3.0, 3.5, 4.0, 4.25, 4.5, 4.75, 5.0])
        pairs = 0 if tie else self.rng.choice([1, 2])
        below = ([self.rng.choice([0.0, 0.25, 0.5, 0.75]) for _ in range(3)] if tie else
                 [self.rng.choice([0.25, 0.5, 0.75]) for _ in range(3 - pairs)]
                 + [self.rng.choice([1.0, 1.25, 1.5, 2.0]) for _ in range(pairs)])
        ranks = ["best"] + ["worse" if d >= 1.0 else "close" for d in sorted(below)]
        scores = [best] + [best - d for d in sorted(below)]
        completions = [
            {"response": text, "fine": fine, "rank": rank, "model": model, "principle": self.rng.choice(self.ASPECTS),
             "overall": min(10.0, max(1.0, 2 * fine + self.rng.choice([-1.0, -0.5, 0.0, 0.5])))}
            for text, fine, rank, model in zip(texts, scores, ranks, self.rng.sample(self.models, 4))
        ]
        self.rng.shuffle(completions)  # the best is anywhere in the row
        return {"history": [{"role": "user", "content": prompt}], "completions": completions, "pairs": pairs}

    def _completion(self, c: dict[str, Any]) -> dict[str, Any]:
        total = round(4 * c["fine"])  # four integer aspect ratings whose mean is the fine-grained score
        ratings = [total // 4 + (k < total % 4) for k in range(4)]
        return {
            "annotations": {a: {"Rating": str(r), "Rationale": f"Rated {r} for {a.replace('_', ' ')}."}
                            for a, r in zip(self.ASPECTS, ratings)},
            "critique": "The answer addresses the question; some points could be clearer.",
            "custom_system_prompt": f"You are an AI assistant. Answer with {c['principle'].replace('_', ' ')}.",
            "fine-grained_score": c["fine"],
            "model": c["model"],
            "overall_score": c["overall"],
            "principle": c["principle"],
            "response": c["response"],
        }

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        completions = g["completions"][::-1] if swap else g["completions"]  # the same comparisons, reordered
        return {
            "source": self.rng.choice(self.PROMPT_SOURCES),
            "instruction": g["history"][0]["content"],
            "models": [c["model"] for c in completions],
            "completions": [self._completion(c) for c in completions],
            "correct_answers": ["None"],
            "incorrect_answers": ["None"],
        }

    def near(self, g: dict[str, Any], rate: float) -> dict[str, Any]:
        return {"history": [dict(m, content=self.tm.edit(m["content"], rate)) for m in g["history"]],
                "completions": [dict(c, response=self.tm.edit(c["response"], rate)) for c in g["completions"]],
                "pairs": g["pairs"]}

    def bad(self, kind: str) -> dict[str, Any] | str:
        """One bad row of `kind`; `last_pairs` is how many valid pairs it still makes."""
        self.last_pairs = 0
        line = self.unparsable(kind)
        if line is not None:
            return line
        g = self.good(tie=False)
        at = {c["rank"]: k for k, c in enumerate(g["completions"])}  # a position of each rank
        if kind == "too_long":  # every pair is too long for the judge
            g["history"][0]["content"] = self.tm.text(230_000)
        elif kind == "empty_last_user_turn":
            g["history"][0]["content"] = " "
        elif kind == "identical_responses":  # one clearly worse completion says what the best says
            g["completions"][at["worse"]]["response"] = g["completions"][at["best"]]["response"]
            self.last_pairs = g["pairs"] - 1
        row = self.render(g)
        close = row["completions"][at["close"]]  # a completion that makes no pair: the row's pairs survive it
        if kind.startswith("partly_"):
            self.last_pairs = g["pairs"]
        if kind == "too_deep_for_storage":
            row["extra"] = too_deep()
        elif kind == "lone_surrogate":
            close["response"] = close["response"][:40] + "\ud800" + close["response"][40:]
        elif kind == "surrogate_in_source":
            row["source"] = "sharegpt\ud800"
        elif kind == "partly_nan_score":
            close["fine-grained_score"] = float("nan")
        elif kind == "nan_beside_completions":
            row["correct_answers"] = [float("nan")]
        elif kind == "missing_instruction":
            del row["instruction"]
        elif kind == "instruction_not_text":
            row["instruction"] = 5
        elif kind == "completions_not_list":
            row["completions"] = "four answers"
        elif kind == "one_completion":
            row["completions"] = row["completions"][:1]
        elif kind == "partly_empty_completion":
            close["response"] = "   \n "
        elif kind == "partly_invisible_completion":
            close["response"] = "\u200b\u200b\ufeff"
        elif kind == "partly_score_missing":
            del close["fine-grained_score"]
        elif kind == "partly_score_not_numeric":
            close["fine-grained_score"] = "N/A"
        elif kind == "partly_score_out_of_range":
            close["fine-grained_score"] = 7.5
        elif kind == "partly_overall_not_numeric":
            close["overall_score"] = "ten"
        elif kind == "partly_completion_not_object":
            row["completions"][at["close"]] = "an answer without its ratings"
        return row


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
    human_labels=False,  # GPT-4's ratings stand where the others have a person's label
    label_meaning={"scale": "-3..3 from response A's side", "direction": "positive: response A preferred",
                   "raw": "fine-grained_score (1..5) of each completion",
                   "mapping": "A's fine-grained_score minus B's, capped at 3", "tie": "none (pairs differ by 1.0 or more)",
                   "both_bad": "none", "clear": f"|label| >= {CLEAR_LABEL:g}", "labelled_by": "GPT-4 (ratings)"},
    synth=UltraFeedbackRows,
    finite_checked_by_adapter=("completions",),  # a NaN score is that completion's fault, not the row's
)

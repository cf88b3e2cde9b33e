"""`rated`: a prompt and any number of rated responses a row (docs/sources.md#rated-rated-responses): UltraFeedback's
pairing rule for any scale.

`label = { scale = [lo, hi], min_gap = g, direction = "higher" }`: scores lie in lo..hi; the best response (the
highest score, or the lowest under `direction = "lower"`; among equal scores the first by text, so that reordered
responses make the same pairs) is paired against each response at least `min_gap` worse (default: a quarter of the scale, UltraFeedback's 1.0 on 1-5). Responses that tie
the best make no pair and are counted in the pairs' metadata (`ties_with_best`), as are those within the gap
(`within_gap`); a row that makes no pair is quarantined as `no_clear_preference`. The human label is the gap on the
canonical scale, `3 * gap / (hi - lo)` from A's side (the whole scale is 3, "much better"), so the smallest pair the
rule makes has |label| `3 * min_gap / (hi - lo)`, and that is the clear label: every pair it makes is clear.
Which response is A is drawn by a hash of the pair's source id, the row's id then `:best>other` positions.

One response is checked at a time (`completion_*` reasons, naming the score key): not an object, an empty text, a
score missing, not a number (a numeric text counts), outside the scale, or any NaN / infinity in the response; the
row's other responses are still paired. Only the first `CURATE_MAX_COMPLETIONS_PER_ROW` are read. The rule is
`tasks.ingest.sources.rating`'s, UltraFeedback's too: this module says how a response is rated and which is best.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandera.pandas as pa

from common.reasons import AdapterRejection, ReadFault, SchemaCheck, ValueFault, column_reason
from schemas.checks import finite_number, text_not_empty, value_faults
from schemas.pair import HUMAN_LABEL_MAX, CandidatePair, Rejection, model_names
from schemas.raw import element_check
from tasks.ingest.declared.formats.hh import prompt_history
from tasks.ingest.declared.formats.shared import (
    ID,
    DeclaredFormat,
    DeclaredRows,
    a_is_first,
    id_bad_kinds,
    id_columns,
    prompt_column,
    row_source_id,
    rows_class,
)
from tasks.ingest.declared.model import Declaration
from tasks.ingest.latent import latent_quality
from tasks.ingest.sources.base import Adapter, AdapterContext
from tasks.ingest.sources.rating import PairingRule
from tasks.ingest.synth_rows import SynthRows, pair_sizes, too_deep

DIRECTIONS = ("higher", "lower")
MIN_GAP_SHARE = 0.25  # the default min_gap, of the scale's width


@dataclass(frozen=True, slots=True)
class Rule:
    """A checked label rule."""

    lo: float
    hi: float
    min_gap: float
    higher: bool

    @property
    def width(self) -> float:
        return self.hi - self.lo

    def on_scale(self, gap: float) -> float:
        """A gap of scores as |human label| (the canonical -3..3 scale)."""
        return min(round(HUMAN_LABEL_MAX * gap / self.width, 6), HUMAN_LABEL_MAX)


_number = finite_number  # an integer past a float's range is no usable score nor scale


def rule_of(decl: Declaration) -> Rule:
    """The declaration's rule (`check` first: this assumes a valid one)."""
    lo, hi = (float(x) for x in decl.label["scale"])
    gap = decl.label.get("min_gap")
    return Rule(lo, hi, float(gap) if gap is not None else round(MIN_GAP_SHARE * (hi - lo), 9),
                decl.label.get("direction", "higher") == "higher")


@dataclass(frozen=True, slots=True)
class Rated:
    position: int
    response: str
    score: float
    model: str | None


def score_of(v: Any) -> float | None:
    """A score: a finite number, or a text that reads as one ("4", "4.5")."""
    if isinstance(v, str):
        try:
            v = float(v.strip())
        except ValueError:
            return None
    return _number(v)


class RatedFormat(DeclaredFormat):
    name = "rated"
    required_columns = ("prompt", "responses")
    optional_columns = (ID,)
    inner_columns = ("response", "score")
    label_keys = frozenset({"scale", "min_gap", "direction"})
    model_keys = ("response",)

    def check_label(self, decl: Declaration) -> list[str]:
        label, mistakes = decl.label, []
        scale = label.get("scale")
        lo_hi = None
        if scale is None:
            mistakes.append("label.scale: missing (rated needs the scores' range, e.g. scale = [1, 5])")
        elif not (isinstance(scale, list | tuple) and len(scale) == 2 and all(_number(x) is not None for x in scale)
                  and _number(scale[0]) < _number(scale[1])):  # type: ignore[operator]
            mistakes.append(f"label.scale: {scale!r} is not two increasing numbers [lo, hi]")
        else:
            lo_hi = (float(scale[0]), float(scale[1]))
        if "min_gap" in label:
            gap = _number(label["min_gap"])
            if gap is None:
                mistakes.append(f"label.min_gap: {label['min_gap']!r} is not a number")
            elif gap <= 0:
                mistakes.append(f"label.min_gap: {gap:g} must be above 0 (responses that tie make no pair anyway)")
            elif lo_hi is not None and gap > lo_hi[1] - lo_hi[0]:
                mistakes.append(f"label.min_gap: {gap:g} is larger than the scale {lo_hi[0]:g}..{lo_hi[1]:g}: "
                                "no pair could be made")
        if "direction" in label and label["direction"] not in DIRECTIONS:
            mistakes.append(f"label.direction: {label['direction']!r} is none of {', '.join(DIRECTIONS)}")
        return mistakes

    def names_models(self, decl: Declaration) -> bool:
        return "response" in decl.models

    def finite_checked(self, decl: Declaration) -> tuple[str, ...]:
        return (decl.column("responses"),)  # a NaN score is that response's fault, not the row's

    def raw_schema(self, decl: Declaration) -> pa.DataFrameSchema:
        return pa.DataFrameSchema({
            decl.column("prompt"): prompt_column(),
            decl.column("responses"): pa.Column(None, element_check(lambda v: isinstance(v, list), SchemaCheck.IS_LIST)),
            **id_columns(decl),
        }, strict=False)

    def clear_label(self, decl: Declaration) -> float:
        rule = rule_of(decl)
        return rule.on_scale(rule.min_gap)

    def label_meaning(self, decl: Declaration) -> dict[str, Any]:
        rule = rule_of(decl)
        return {"format": self.name, "scale": [rule.lo, rule.hi], "direction": "higher" if rule.higher else "lower",
                "min_gap": rule.min_gap, "pairing": "the best against each response at least min_gap worse",
                "human_label": "3 * gap / (hi - lo) from A's side, capped at 3", "clear_label": self.clear_label(decl)}

    def adapter(self, decl: Declaration) -> Adapter:
        rule = rule_of(decl)
        prompt, responses = decl.column("prompt"), decl.column("responses")
        text_key, score_key = decl.column("response"), decl.column("score")
        model_key = decl.models.get("response")
        row_id = row_source_id(decl)
        history_of = prompt_history(decl)

        def rate(position: int, item: Any) -> Rated | Rejection:
            where = f"response {position}"
            if not isinstance(item, dict):
                return Rejection([AdapterRejection.COMPLETION_NOT_AN_OBJECT], where)
            model = item.get(model_key) if model_key else None
            model = model if isinstance(model, str) else None
            text = item.get(text_key)
            if not text_not_empty(text):
                return Rejection([AdapterRejection.COMPLETION_RESPONSE_EMPTY], where)
            not_finite = [f.removeprefix(ValueFault.NOT_FINITE.prefix) for f in value_faults(item)
                          if f.startswith(ValueFault.NOT_FINITE.prefix)]
            if not_finite:
                return Rejection([AdapterRejection.COMPLETION_NOT_FINITE.of(f) for f in not_finite],
                                 f"{where}: NaN or Infinity under {', '.join(not_finite)}")
            score = score_of(item.get(score_key))
            if score is None:
                return Rejection([AdapterRejection.COMPLETION_SCORE_INVALID.of(score_key)],
                                 f"{where}: {item.get(score_key)!r}"[:500])
            if not rule.lo <= score <= rule.hi:
                return Rejection([AdapterRejection.COMPLETION_SCORE_OUT_OF_RANGE.of(score_key)],
                                 f"{where}: {score:g} outside {rule.lo:g}..{rule.hi:g}")
            return Rated(position, text, score, model)

        sign = 1.0 if rule.higher else -1.0
        pairing: PairingRule[Rated] = PairingRule(
            min_gap=rule.min_gap, value=lambda r: sign * r.score,
            # among equal best scores the first by text, not by position: reordered rows make the same pairs
            tiebreak=lambda r: (r.response, r.position), noun="responses",
            no_clear_detail=lambda k: f"best {k.best.score:g}; {k.ties} tie it, none {rule.min_gap:g} or more worse")

        def to_pairs(row: dict[str, Any], ctx: AdapterContext):
            for found in pairing.ranked(row[responses], ctx.settings.max_completions_per_row, rate):
                if isinstance(found, Rejection):
                    yield found
                    continue
                history = history_of(row[prompt])
                if isinstance(history, Rejection):
                    yield history
                    return
                counts = {"ties_with_best": found.ties, "within_gap": found.within_gap}
                base = row_id(row)
                for other in found.worse:
                    yield make_pair(decl, rule, f"{base}:{found.best.position}>{other.position}", history, found.best,
                                    other, found.gaps[other.position], score_key, ctx, counts)

        to_pairs.__name__ = "to_pairs"
        return to_pairs

    def synth(self, decl: Declaration) -> type[SynthRows]:
        p, rs, score = decl.column("prompt"), decl.column("responses"), decl.column("score")
        return rows_class(RatedRows, decl, {
            "malformed_json": ReadFault.MALFORMED_JSON,
            "not_an_object": ReadFault.NOT_AN_OBJECT,
            "too_deep_for_parsers": ReadFault.JSON_TOO_DEEP,
            "too_deep_for_storage": ValueFault.JSON_TOO_DEEP,
            "lone_surrogate": ValueFault.INVALID_UTF8.of(rs),
            "nan_beside_responses": ValueFault.NOT_FINITE.of("extra_scores"),  # the row's own fault
            "too_long": column_reason("utf8_bytes", SchemaCheck.FITS_JUDGE_CONTEXT.prefix),
            "empty_last_user_turn": column_reason("history", SchemaCheck.LAST_USER_TURN_NOT_EMPTY),
            "missing_prompt": column_reason(p, SchemaCheck.MISSING),
            "prompt_not_text": column_reason(p, SchemaCheck.IS_TEXT_OR_MESSAGE_LIST),
            "responses_not_list": column_reason(rs, SchemaCheck.IS_LIST),
            "one_response": AdapterRejection.FEWER_THAN_TWO_COMPLETIONS,
            "identical_responses": SchemaCheck.RESPONSES_DIFFER,
            **id_bad_kinds(decl),
            "partly_nan_score": AdapterRejection.COMPLETION_NOT_FINITE.of(score),
            "partly_empty_response": AdapterRejection.COMPLETION_RESPONSE_EMPTY,
            "partly_score_missing": AdapterRejection.COMPLETION_SCORE_INVALID.of(score),
            "partly_score_not_numeric": AdapterRejection.COMPLETION_SCORE_INVALID.of(score),
            "partly_score_out_of_range": AdapterRejection.COMPLETION_SCORE_OUT_OF_RANGE.of(score),
            "partly_response_not_object": AdapterRejection.COMPLETION_NOT_AN_OBJECT,
        })


def make_pair(decl: Declaration, rule: Rule, sid: str, history: list[dict[str, str]], best: Rated, other: Rated,
              gap: float, score_key: str, ctx: AdapterContext, counts: dict[str, int]) -> CandidatePair:
    first = a_is_first(sid)
    a, b = (best, other) if first else (other, best)
    label = rule.on_scale(gap)
    return CandidatePair(
        source=decl.name, source_id=sid, history=history, response_a=a.response, response_b=b.response,
        human_label=label if first else -label, raw_label=f"{score_key} {a.score:g} vs {b.score:g}",
        domain=decl.domain, language=decl.language,
        metadata={**(model_names(a.model, b.model) if "response" in decl.models else {}), "split": ctx.split,
                  "responses": [a.position, b.position], "scores": [a.score, b.score], **counts},
    )


class RatedRows(DeclaredRows):
    """Synthetic `rated` rows: a prompt and four responses on the declared scale (written lower-is-better under
    `direction = "lower"`). A good row's best leads one or two others by at least min_gap and the rest by less (some
    tie it), so the pairs each row makes are known by construction; a tie row's responses all lie within min_gap."""

    TIE_RATE = 0.05

    def good(self, contaminate: int | None = None, tie: bool | None = None) -> dict[str, Any]:
        rule = rule_of(self.DECL)
        h, r1, r2 = pair_sizes(self.rng, self.pair_bytes)
        prompt = self.tm.text(max(40, h))
        if contaminate is not None:
            prompt += "\n\n" + self.eval_prompts[contaminate]
        texts = sorted((self.tm.text(n) for n in (r1, r2, (r1 + r2) // 2, self.rng.choice([r1, r2]))),
                       key=latent_quality, reverse=True)
        if tie is None:
            tie = contaminate is None and self.rng.random() < self.TIE_RATE
        q = rule.min_gap / 4  # scores on a grid of a quarter of min_gap: a gap of min_gap is exact
        pairs = 0 if tie else self.rng.choice([1, 2])
        fits = [k for k in (4, 5, 6, 8) if k * q <= rule.width + 1e-9]
        close = [self.rng.choice([0, 1, 2, 3]) for _ in range(3 - pairs)]
        far = [self.rng.choice(fits) for _ in range(pairs)]
        steps = sorted(close + far)
        top = max(steps) * q
        best = rule.hi - self.rng.randrange(int((rule.width - top) / q + 1e-9) + 1) * q
        goodness = [best] + [best - s * q for s in steps]
        ranks = ["best"] + ["worse" if s >= 4 else "close" for s in steps]
        responses = [{"response": t, "goodness": round(v, 6), "rank": r, "model": m}
                     for t, v, r, m in zip(texts, goodness, ranks, self.rng.sample(self.models, 4))]
        self.rng.shuffle(responses)
        # a tie with the best placed before it would be "the best" itself: the pairs are the same in number
        return {"history": [{"role": "user", "content": prompt}], "responses": responses, "pairs": pairs,
                "conversational": self.rng.random() < 0.5}

    def _score(self, goodness: float) -> float:
        rule = rule_of(self.DECL)
        return goodness if rule.higher else round(rule.lo + rule.hi - goodness, 6)

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        items = g["responses"][::-1] if swap else g["responses"]
        model = self.DECL.models.get("response")
        prompt = self.prompt(g)
        return self.with_id({
            self.col("prompt"): prompt,
            self.col("responses"): [{self.col("response"): r["response"], self.col("score"): self._score(r["goodness"]),
                                     **({model: r["model"]} if model else {})} for r in items],
        })

    def near(self, g: dict[str, Any], rate: float) -> dict[str, Any]:
        return {**g, "history": [dict(m, content=self.tm.edit(m["content"], rate)) for m in g["history"]],
                "responses": [dict(r, response=self.tm.edit(r["response"], rate)) for r in g["responses"]]}

    def bad(self, kind: str) -> dict[str, Any] | str:
        """One bad row of `kind`; `last_pairs` is how many valid pairs it still makes."""
        self.last_pairs = 0
        line = self.unparsable(kind)
        if line is not None:
            return line
        g = self.good(tie=False)
        for r in g["responses"]:  # no tie with the best: a spoiled tie placed before the best would change the pairs
            if r["rank"] == "close" and r["goodness"] == max(x["goodness"] for x in g["responses"]):
                r["goodness"] = round(r["goodness"] - rule_of(self.DECL).min_gap / 4, 6)
        at = {r["rank"]: k for k, r in enumerate(g["responses"])}
        rs, text, score = self.col("responses"), self.col("response"), self.col("score")
        if kind == "too_long":
            g["history"][0]["content"] = self.tm.text(230_000)
        elif kind == "empty_last_user_turn":
            g["history"][0]["content"] = " "
        elif kind == "identical_responses":  # a clearly worse response says what the best says
            g["responses"][at["worse"]]["response"] = g["responses"][at["best"]]["response"]
            self.last_pairs = g["pairs"] - 1
        row = self.render(g)
        # a response that makes no pair (within the gap): the row's pairs survive its fault
        close = row[rs][at["close"]]
        if kind.startswith("partly_"):
            self.last_pairs = g["pairs"]
        if kind == "too_deep_for_storage":
            row["extra"] = too_deep()
        elif kind == "lone_surrogate":
            close[text] = close[text][:40] + "\ud800" + close[text][40:]
        elif kind == "nan_beside_responses":
            row["extra_scores"] = [float("nan")]
        elif kind == "missing_prompt":
            del row[self.col("prompt")]
        elif kind == "prompt_not_text":
            row[self.col("prompt")] = 5
        elif kind == "responses_not_list":
            row[rs] = "four answers"
        elif kind == "one_response":
            row[rs] = row[rs][:1]
        elif kind == "missing_id" or kind == "id_not_an_id":
            self.damage(row, kind)
        elif kind == "partly_nan_score":
            close[score] = float("nan")
        elif kind == "partly_empty_response":
            close[text] = "  \n "
        elif kind == "partly_score_missing":
            del close[score]
        elif kind == "partly_score_not_numeric":
            close[score] = "N/A"
        elif kind == "partly_score_out_of_range":
            close[score] = rule_of(self.DECL).hi + rule_of(self.DECL).width
        elif kind == "partly_response_not_object":
            row[rs][at["close"]] = "an answer without its score"
        return row


FORMAT = RatedFormat()

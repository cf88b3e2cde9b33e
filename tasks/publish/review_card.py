"""The card's "Human review" section: what reviewers decided, how often they agree with the judge (the audit
sample's figure with its 95% interval: the unbiased one), and the reviewers' labels among the calibration's."""

from __future__ import annotations

from typing import Any

from common.numbers import count, percent

_SELECTIONS = (("audit", "audit (uniform sample: an unbiased estimate)"),
               ("borderline", "borderline (the judge least sure)"),
               ("disagreement", "disagreement (orders, or the judge and the source's label)"))
# shown where a push selected it (a certified version's)
_UNCERTIFIED = ("uncertified", "uncertified (what a certification did not accept)")


def _agreement(entry: dict[str, Any]) -> str:
    if not entry.get("compared"):
        return "-"
    low, high = entry["ci95"]
    return f"{percent(entry['agreement'])} ({percent(low)} – {percent(high)})"


def review_markdown(review: dict[str, Any] | None, calibration: dict[str, Any] | None = None) -> str:
    selected = any((review or {}).get(s, {}).get("selected") for s, _ in _SELECTIONS)
    if not review or not (review.get("reviewed_pairs") or selected):
        return "No pair of this version's judged pool has been reviewed by people."
    outcomes = review.get("outcomes", {})
    lines = [
        "Pairs were reviewed in Label Studio: the conversation and both answers, in an order drawn per task, "
        "the judge's verdict hidden; several reviewers of one pair resolve by majority (no strict majority is a "
        "split).",
        "",
        f"{count(review['reviewed_pairs'])} judged pairs reviewed: A {count(outcomes.get('a'))}, "
        f"B {count(outcomes.get('b'))}, tie {count(outcomes.get('tie'))}, both bad {count(outcomes.get('both_bad'))}, "
        f"split {count(outcomes.get('split'))}. The reviewers confirmed the judge on "
        f"{count(review.get('judge_confirmed'))} and overrode it on {count(review.get('judge_overridden'))}.",
        "",
    ]
    if review.get("review_overrides"):
        lines += [f"Policy `review_overrides` is on: {count(review.get('kept_reviewed'))} rows carry their reviewers' "
                  f"choice ({count(review.get('kept_overridden'))} of them against the judge, whose `judge_margin` is "
                  "then negative); reviewed ties, both-bad pairs and splits are dropped (see Dropped, by reason).", ""]
    else:
        lines += ["Policy `review_overrides` is off: rows follow the judge; the reviews serve the calibration and the "
                  "figures below.", ""]
    lines += ["Agreement of the reviewers with the judge, over pairs where both pick a side (95% Wilson interval):", "",
              "| selection | selected | reviewed | compared | judge agrees | agreement |",
              "|---|---:|---:|---:|---:|---:|"]
    shown = _SELECTIONS + ((_UNCERTIFIED,) if (review.get("uncertified") or {}).get("selected") else ())
    for key, label in shown:
        e = review.get(key) or {}
        lines.append(f"| {label} | {count(e.get('selected', 0))} | {count(e.get('reviewed', 0))} | "
                     f"{count(e.get('compared', 0))} | {count(e.get('judge_agrees', 0))} | {_agreement(e)} |")
    sources = (calibration or {}).get("label_sources")
    if sources:
        lines += ["", "Labels behind the calibration of `p_correct`, by who gave them:", "",
                  "| labels | labelled pairs | judge right | ECE | Brier |", "|---|---:|---:|---:|---:|"]
        for name, label in (("source", "the sources' own (annotators, votes)"), ("review", "reviewers")):
            s = sources.get(name) or {}
            ece = "-" if s.get("ece") is None else f"{s['ece']:.3f}"
            brier = "-" if s.get("brier") is None else f"{s['brier']:.3f}"
            lines.append(f"| {label} | {count(s.get('labelled', 0))} | {count(s.get('judge_right', 0))} | {ece} "
                         f"| {brier} |")
    return "\n".join(lines)

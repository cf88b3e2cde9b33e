"""The dashboard's "Certified agreement" panel: every certified version's guarantee in a table, and for the
selected one the card's first paragraph word for word, the figures behind it, the risk-coverage curve and the
review queue of the pairs its certification did not accept. Everything is read from the version's stored
`stats.certification` (`warehouse.dashboard.certifications`), the one source of the card, `curate status` and
`build-version --json`, and worded by the card's own functions."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from common.numbers import count, percent
from curator.dashboard import data
from tasks.curate.certification import LABELS_SAID
from tasks.publish.quality_card import confidence_level, guarantee_paragraph, threshold_text


def as_text(cell: str) -> str:
    """A table cell shown as the text it is: `st.table` reads its cells as Markdown, where `>= 0.9312` would be a
    quote block of `= 0.9312`."""
    return "\\" + cell if cell.startswith(">") else cell


def versions_table(certs: list[dict[str, Any]]) -> pd.DataFrame:
    """One readable row per certified version."""
    rows = []
    for entry in certs:
        c = entry["certification"]
        queue = c.get("uncertified") or {}
        rows.append({
            "dataset": entry["dataset"], "version": count(entry["version"]),
            "target": percent(c["target_agreement"]), "confidence": confidence_level(c["risk"]),
            "estimated agreement": percent(c.get("estimated_agreement")),
            # two counts named apart: eligible pairs no label speaks for, and those of them the version keeps
            # uncertified (policy `uncovered = "keep"`); `curate status` shows the same two
            "pairs not covered": count(sum((c.get("not_covered") or {}).values())
                                       if isinstance(c.get("not_covered"), dict) else 0),
            "kept, not covered": count(c.get("kept_not_covered") or 0),
            "threshold": as_text(threshold_text(c.get("threshold"))) if c.get("certified") else "–",
            "held-out labelled pairs": count(c["calibration_pairs"]), "labels": c["labels"],
            "coverage": percent(c.get("coverage")),
            "uncertified, not yet reviewed": count(queue.get("not_reviewed")) if queue else "–",
        })
    return pd.DataFrame(rows)


def figures_table(c: dict[str, Any]) -> pd.DataFrame:
    """The figures of the card's first paragraph and its certification table, as the card words them."""
    rows = [
        ("target agreement", percent(c["target_agreement"])),
        ("confidence (1 - risk)", f"{confidence_level(c['risk'])} (risk {c['risk']:g})"),
        ("estimated agreement of the accepted held-out pairs (an estimate, not a bound)",
         percent(c.get("estimated_agreement"))),
        ("bound", c["bound"]),
        ("threshold", as_text(f"{threshold_text(c['threshold'])} ({count(c['thresholds_tested'])} thresholds tried)")),
        ("held-out labelled pairs", f"{count(c['calibration_pairs'])}, from {LABELS_SAID[c['labels']]}"),
        ("of them accepted / disagreeing with the person",
         f"{count(c['calibration_accepted'])} / {count(c['calibration_disagreements'])}"),
        ("pairs certified / judged (coverage)",
         f"{count(c['accepted'])} / {count(c['judged'])} ({percent(c['coverage'])})"),
    ]
    if "kept_certified" in c:
        rows.append(("rows: certified / decided by reviewers",
                     f"{count(c['kept_certified'])} / {count(c['kept_by_reviewers'])}"))
    return pd.DataFrame(rows, columns=["figure", "value"])


def curve_chart(c: dict[str, Any], label: str) -> alt.Chart:
    """Certified agreement against coverage at every threshold tried, the certified one marked, the target
    dashed: the card's risk-coverage plot."""
    curve = pd.DataFrame([{"coverage": p["coverage"], "certified_agreement": p["agreement_bound"],
                           "threshold": threshold_text(p["threshold"]),
                           "certified": p["threshold"] == c["threshold"]} for p in c["curve"]
                          if p["coverage"] is not None])
    x = alt.X("coverage:Q", title="coverage of the judged pool", axis=alt.Axis(format="%"),
              scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("certified_agreement:Q", title="certified agreement", axis=alt.Axis(format="%"),
              scale=alt.Scale(zero=False))
    tips = ["threshold", alt.Tooltip("coverage:Q", format=".1%"), alt.Tooltip("certified_agreement:Q", format=".1%")]
    base = alt.Chart(curve, title=f"risk-coverage curve, {label}")  # one dataset for every layer
    line = base.mark_line(point=True).encode(x=x, y=y, tooltip=tips)
    chosen = base.transform_filter(alt.datum.certified).mark_point(size=120, filled=True, color="#e45756").encode(
        x=x, y=y, tooltip=tips)
    target = base.mark_rule(strokeDash=[4, 3], color="#999").encode(y=alt.datum(c["target_agreement"]))
    return line + chosen + target


def queue_table(queue: dict[str, Any], threshold: float | None) -> pd.DataFrame:
    """The uncertified pairs nearest the threshold, in the order a push sends them."""
    return pd.DataFrame([{"pair id": q["pair_id"], "score": f"{q['score']:.4f}",
                          "below the threshold by": "–" if threshold is None else f"{threshold - q['score']:.4f}"}
                         for q in queue.get("nearest") or []])


def render(snap, dataset: str | None, version: int | None, label: str | None) -> None:
    st.header("Certified agreement")
    certs = data.certifications(snap)
    if not certs:
        st.info("No certified version yet: `curate build-version NAME --target-agreement 0.9` keeps the pairs whose "
                "agreement with human preference it can guarantee.")
        return
    st.caption("Per certified version, the guarantee its card states (from its stored `stats.certification`).")
    st.table(versions_table(certs).style.hide(axis="index"))
    this = next((e for e in certs if (e["dataset"], e["version"]) == (dataset, version)), None)
    if this is None:
        if label:
            st.caption(f"{label} was built without a target agreement: no certification.")
        return
    c = this["certification"]
    st.subheader(f"{label}" + (" (SIMULATED verdicts)" if this["simulated"] else ""))
    st.markdown(guarantee_paragraph(c))  # the card's first paragraph, word for word
    st.table(figures_table(c).style.hide(axis="index"))
    if c.get("curve"):
        st.altair_chart(curve_chart(c, label or ""), width="stretch")
    queue = c.get("uncertified")
    st.subheader("Uncertified pairs: the review queue")
    if not queue:
        st.caption(f"{label} was built before versions recorded their review queue: `curate review push "
                   f"{dataset} --select uncertified` computes it.")
        return
    st.caption(f"{count(queue['pairs'])} pairs the certification could have accepted but did not; "
               f"{count(queue['not_reviewed'])} of them not yet reviewed, which `curate review push {dataset} "
               f"--select uncertified` sends, the nearest the threshold first (as of the build). A pair the "
               "reviewers decide is kept in the next version with their choice.")
    if queue.get("nearest"):
        st.table(queue_table(queue, c.get("threshold")).style.hide(axis="index"))

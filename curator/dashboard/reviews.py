"""The dashboard's "Human review" panel: per Label Studio project, tasks pushed and annotated, reviews withdrawn
(deleted or rejected in Label Studio since they were pulled), and how often the reviewers agree with the judge,
on the audit sample (the unbiased figure) and on the borderline and disagreement pairs, each with its 95%
Wilson interval."""

from __future__ import annotations

import duckdb
import pandas as pd
import streamlit as st

from common.numbers import count, rate
from tasks.review.agreement import agreement_text
from warehouse.reviews import review_progress_frame


def progress_table(progress: pd.DataFrame) -> pd.DataFrame:
    """One readable row per project."""
    rows = []
    for r in progress.itertuples():
        rows.append({
            "project": r.project, "server": r.url, "pushed": count(r.pushed), "annotated": count(r.annotated),
            "annotations": count(r.annotations), "reviewers": count(r.reviewers),
            "withdrawn": count(getattr(r, "withdrawn", 0)),  # reviews that count no more (a snapshot before: none)
            "median lead time (s)": rate(None if pd.isna(r.median_lead_time_s) else r.median_lead_time_s),
            "agreement, audit (unbiased)": agreement_text(r.audit_judge_agrees, r.audit_decided),
            "agreement, borderline": agreement_text(r.borderline_judge_agrees, r.borderline_decided),
            "agreement, disagreement": agreement_text(r.disagreement_judge_agrees, r.disagreement_decided),
        })
    return pd.DataFrame(rows)


def render(snap) -> None:
    st.header("Human review (Label Studio)")
    try:
        progress = review_progress_frame(snap)
    except duckdb.CatalogException:
        st.info("This snapshot was taken before human review existed: `curate snapshot` refreshes it.")
        return
    if not len(progress):
        st.info("No pair pushed to reviewers yet: `curate review push NAME --to URL` sends the borderline pairs of "
                "a version, `curate review pull --from URL` brings the labels back.")
        return
    st.caption("Agreement: pairs where the reviewers' majority and the judge (when the pair was selected) both pick "
               "a side, with 95% Wilson intervals. Only the audit sample is a uniform sample of its version.")
    st.table(progress_table(progress).style.hide(axis="index"))

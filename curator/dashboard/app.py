"""The data team's dashboard (Streamlit), read-only, over the snapshot the pipeline refreshes.

Run it with `curate dashboard`; the snapshot's path comes from the command line (after `--`) or
CURATE_DASHBOARD_SNAPSHOT.
"""

from __future__ import annotations

import os
import sys

import altair as alt
import pandas as pd
import streamlit as st

from curator.dashboard import data
from curator.dashboard.data import Filters, NoSnapshotError, Snapshot


def _snapshot_path() -> str:
    args = sys.argv[1:]
    if "--snapshot" in args:
        return args[args.index("--snapshot") + 1]
    return os.environ.get("CURATE_DASHBOARD_SNAPSHOT", "data/dashboard.duckdb")


def bar_chart(df: pd.DataFrame, x: str, y: str, title: str, color: str | None = None) -> alt.Chart:
    """Bars with their value written on them: the numbers are readable without hovering."""
    enc = {"x": alt.X(f"{x}:N", sort=None, title=x.replace("_", " ")), "y": alt.Y(f"{y}:Q", title=y.replace("_", " "))}
    if color:
        enc["color"] = alt.Color(f"{color}:N")
    bars = alt.Chart(df, title=title).mark_bar().encode(**enc, tooltip=list(df.columns))
    labels = alt.Chart(df).mark_text(dy=-6).encode(x=enc["x"], y=enc["y"], text=alt.Text(f"{y}:Q"))
    return bars + labels if not color else bars


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Counts as integers (DuckDB sums arrive as floats), other numbers rounded for reading."""
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            values = out[col].dropna()
            if len(values) and (values == values.round()).all() and not col.endswith(("_pct", "accuracy")):
                out[col] = out[col].round().astype("Int64")
    return out


def show(df: pd.DataFrame) -> None:
    """A table with integer counts (thousands separated) and one-decimal percentages."""
    df = tidy(df)
    formats = {}
    for col in df.columns:
        if pd.api.types.is_integer_dtype(df[col]):
            formats[col] = "{:,}"
        elif pd.api.types.is_float_dtype(df[col]):
            formats[col] = "{:.1f}" if col.endswith(("_pct", "accuracy")) else "{:,.4g}"
    st.table(df.style.format(formats, na_rep="-"))


def section(title: str, df: pd.DataFrame, x: str, y: str, chart_title: str, table: bool = True) -> None:
    """A subheader, a labelled bar chart when there is data, and the table under it."""
    st.subheader(title)
    if len(df):
        st.altair_chart(bar_chart(tidy(df), x, y, chart_title), width="stretch")
    if table:
        show(df)


def main() -> None:
    st.set_page_config(page_title="preference-curator", layout="wide")
    st.title("preference-curator")
    try:
        snap = Snapshot.open(_snapshot_path())
    except NoSnapshotError as err:
        st.error(str(err))
        return
    st.caption(f"Snapshot taken {snap.info['taken_at']:%Y-%m-%d %H:%M:%S} UTC after the {snap.info['stage']} stage "
               f"of `{snap.info['warehouse']}` (read-only; reload the page after the next stage).")
    simulated = data.simulated_configs(snap)
    if simulated:
        st.warning(f"**SIMULATED verdicts.** Judge configuration(s) {', '.join(simulated)} were answered by the GenRM "
                   "stand-in, a test server: the verdicts, agreement, margins and versions built on them shown here "
                   "are simulated and say nothing about answer quality.", icon="⚠️")

    versions = data.versions(snap)
    with st.sidebar:
        st.header("Filters")
        chosen_sources = st.multiselect("Source", data.sources(snap), key="sources")
        chosen_domains = st.multiselect("Domain", data.domains(snap), key="domains")
        labels = [f"{r.dataset} v{r.version}" for r in versions.itertuples()]
        label = st.selectbox("Dataset version", labels, key="version") if labels else None
    dataset, version = (label.rsplit(" v", 1)[0], int(label.rsplit(" v", 1)[1])) if label else (None, None)
    f = Filters(tuple(chosen_sources), tuple(chosen_domains), dataset, version)

    funnel = data.funnel(snap, f)
    agreement = data.agreement(snap, f)
    costs = data.version_costs(snap)
    this_cost = costs[(costs["dataset"] == dataset) & (costs["version"] == version)] if dataset else costs.iloc[0:0]
    c1, c2, c3, c4 = st.columns(4)
    first = funnel.drop_duplicates("source")  # one row per source (the funnel repeats it per dataset)
    c1.metric("Pairs read", f"{int(first['read'].sum()):,}" if len(funnel) else "0")
    c2.metric("Pairs judged", f"{int(first['judged'].sum()):,}" if len(funnel) else "0")
    comparable = int(agreement["comparable"].sum()) if len(agreement) else 0
    c3.metric("Judge-human agreement" + (" (SIMULATED)" if simulated else ""),
              f"{100.0 * agreement['agree'].sum() / comparable:.1f}%" if comparable else "n/a")
    c4.metric(f"GPU-hours / 1,000 kept ({label or '-'})",
              f"{this_cost['gpu_hours_per_1000_kept'].iloc[0]:.4f}" if len(this_cost) else "n/a")

    st.header("Yield funnel per source")
    if len(funnel):
        long = tidy(first).melt(
            id_vars="source", value_vars=["read", "valid", "unique_pairs", "for_curation", "judged"],
            var_name="stage", value_name="pairs")
        kept = funnel[funnel["dataset"] == dataset][["source", "kept"]].rename(columns={"kept": "pairs"})
        long = pd.concat([long, tidy(kept).assign(stage="kept")])
        st.altair_chart(alt.Chart(long, title="read → valid → unique → for curation → judged → kept").mark_bar()
                        .encode(x=alt.X("stage:N", sort=["read", "valid", "unique_pairs", "for_curation", "judged", "kept"]),
                                y="pairs:Q", color="source:N", xOffset="source:N", tooltip=["source", "stage", "pairs"]),
                        width="stretch")
    show(funnel)
    if len(first) and first["re_reads"].sum():
        st.caption(f"Rows read again by later runs (not counted above): {int(first['re_reads'].sum()):,}")

    left, right = st.columns(2)
    with left:
        q = data.quarantine(snap, f)
        st.subheader("Quarantine reasons")
        if len(q):
            st.altair_chart(bar_chart(tidy(q.groupby("reason", as_index=False)["rows"].sum()), "reason", "rows",
                                      "quarantined rows by reason"), width="stretch")
        show(q)
    with right:
        section("Judge failures by reason", data.failures(snap), "failure_reason", "judgments", "failed judgments")

    left, right = st.columns(2)
    with left:
        section("Margin distribution", data.margin_histogram(snap, f), "abs_margin_bin", "pairs",
                "|mean margin| of judged pairs", table=False)
    with right:
        section(f"Confidence distribution ({label or 'no version'})",
                data.confidence_histogram(snap, f) if dataset else pd.DataFrame(), "confidence_bin", "pairs",
                f"confidence of kept pairs in {label}", table=False)

    st.header("Judge-human agreement by source and domain")
    if len(agreement):
        st.altair_chart(bar_chart(agreement.assign(group=agreement["source"] + " / " + agreement["domain"]),
                                  "group", "agreement_pct", "agreement % (pairs where both prefer a side)"),
                        width="stretch")
    show(agreement)

    st.header("Throughput and tokens")
    tp = data.throughput(snap)
    if len(tp):
        st.altair_chart(bar_chart(tp.assign(run=tp["run_id"].str[:8]), "run", "judgments_per_s", "judgments/s per judge run"),
                        width="stretch")
    show(tp)

    st.header("Versions, their diffs and cost")
    show(versions.assign(simulated=versions["judge_config_id"].isin(simulated)))
    model = data.cost_model(snap)
    st.caption(f"GPU-hours are estimated from tokens at {model.server_tokens_per_second} tokens/s per "
               f"server of {model.gpus_per_server} GPUs (CURATE_COST_SERVER_TOKENS_PER_SECOND).")
    show(costs)

    st.header("Calibration and bias, per version")
    st.caption("p_correct: the calibrated probability that the judge's direction matches a clear human preference "
               "(cross-fitted; ECE and Brier on labelled pairs no model saw). Bias shares: of the judged pool "
               "before the filter, and of the version." + (" SIMULATED verdicts: these say nothing of answer "
                                                           "quality." if simulated else ""))
    show(data.version_quality(snap))
    bins = data.reliability(snap, f) if dataset else None
    if bins is not None and len(bins):
        diagonal = alt.Chart(pd.DataFrame({"predicted": [0.0, 1.0], "observed": [0.0, 1.0]})).mark_line(
            strokeDash=[4, 3], color="#999").encode(x="predicted:Q", y="observed:Q")
        points = alt.Chart(bins, title=f"reliability of p_correct, {label}").mark_circle().encode(
            x=alt.X("predicted:Q", scale=alt.Scale(domain=[0, 1])), y=alt.Y("observed:Q", scale=alt.Scale(domain=[0, 1])),
            size="pairs:Q", tooltip=["predicted", "observed", "pairs"])
        st.altair_chart(diagonal + points, width="stretch")
    elif dataset:
        st.caption(f"{label}: no calibrated p_correct (too few pairs with a clear human label).")
    families = data.model_families(snap, f) if dataset else None
    if families is not None and len(families):
        st.subheader(f"Model family win rates, arena rows ({label}): judged pool and version")
        show(families)

    st.header("Judge quality checks")
    show(data.evaluations(snap))

    st.header("Runs")
    show(data.runs(snap))


main()

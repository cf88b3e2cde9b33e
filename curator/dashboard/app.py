"""The data team's dashboard (Streamlit), read-only, over the snapshot the pipeline refreshes.

Run it with `curate dashboard`; the snapshot's path comes from the command line (after `--`) or
CURATE_DASHBOARD_SNAPSHOT. A version's figures (pairs judged, kept, agreement with human labels) are read from
its stored statistics, so the page says what its card and `curate status` say.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

import altair as alt
import pandas as pd
import streamlit as st

from common.numbers import count, percent, rate
from curator.dashboard import certification, data, reviews
from curator.dashboard.data import Filters, NoSnapshotError, Snapshot
from curator.output import judge_label
from tasks.evaluate.benchmarks import BENCHMARKS


def _snapshot_path() -> str:
    args = sys.argv[1:]
    if "--snapshot" in args:
        return args[args.index("--snapshot") + 1]
    return os.environ.get("CURATE_DASHBOARD_SNAPSHOT", "data/dashboard.duckdb")


def _pct(value: float) -> str:
    """A percentage already in 0..100 (accuracy, agreement_pct)."""
    return "-" if value is None or pd.isna(value) else f"{value:.1f}%"


def _text(value: object) -> str:
    return "-" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def _per_judge(value: object) -> str:
    """A version's GPU-seconds by judge (stored as JSON: kind -> seconds) as "genrm 14.1, reward_model 3.2"."""
    if value is None or (not isinstance(value, str | dict) and pd.isna(value)):
        return "-"
    data = json.loads(value) if isinstance(value, str) else value
    return ", ".join(f"{kind} {seconds:,.1f}" for kind, seconds in sorted(data.items())) or "-"


def _minute(value: object) -> str:
    return "-" if value is None or pd.isna(value) else pd.Timestamp(value).strftime("%Y-%m-%d %H:%M")


def _short(n: int) -> Callable[[object], str]:
    return lambda value: _text(value)[:n]


def _decimals(n: int) -> Callable[[object], str]:
    return lambda value: "-" if value is None or pd.isna(value) else f"{value:.{n}f}"


# Column configuration: a column's label and how its values read, wherever it is shown. Counts are integers
# with thousands separated, shares percentages with one decimal, rates without exponents.
COLUMNS: dict[str, tuple[str, Callable[[object], str]]] = {
    "source": ("source", _text), "domain": ("domain", _text), "reason": ("reason", _text),
    "dataset": ("dataset", _text), "version": ("version", count), "parent_version": ("parent", count),
    "created_at": ("created", _minute), "started_at": ("started", _minute), "judge": ("judge", _text),
    "read": ("read", count), "valid": ("valid", count), "quarantined": ("quarantined", count),
    "unique_pairs": ("unique pairs", count), "for_curation": ("for curation", count), "judged": ("judged", count),
    "kept": ("kept", count), "rows": ("rows", count), "pairs": ("pairs", count), "comparable": ("comparable", count),
    "agree": ("agree", count), "agreement_pct": ("agreement", _pct), "human_ties": ("human ties", count),
    "judge_ties": ("judge ties", count), "both_bad": ("both bad", count), "failure_reason": ("reason", _text),
    "judgments": ("judgments", count), "run_id": ("run", _short(8)), "strategy": ("strategy", _text),
    "shard": ("shard", _text), "status": ("status", _text), "seconds": ("seconds", rate), "ok": ("ok", count),
    "tokens_in": ("tokens in", count), "tokens_out": ("tokens out", count), "judgments_per_s": ("judgments/s", rate),
    "tokens_per_s": ("tokens/s", rate), "pairs_judged": ("pairs judged", count), "row_count": ("pairs kept", count),
    "agreement": ("agreement", percent), "pool_agreement": ("agreement, judged pool", percent),
    "added": ("added", count), "removed": ("removed", count), "flipped": ("flipped", count),
    "content_hash": ("content hash", _short(12)), "published_tag": ("published", _text),
    "judge_runs": ("judge runs", count), "requests": ("requests", count),
    "tokens_per_kept_pair": ("tokens / kept pair", count), "gpu_hours": ("GPU-hours", _decimals(2)),
    "gpu_hours_per_1000_kept": ("GPU-hours / 1,000 kept", _decimals(2)), "calibration": ("calibration", _text),
    "gpu_seconds": ("GPU-seconds (measured)", rate),
    "gpu_seconds_per_kept_pair": ("GPU-seconds / kept pair", _decimals(3)),
    "gpu_seconds_by_judge": ("GPU-seconds by judge", _per_judge),
    "labelled_pairs": ("labelled", count), "ece": ("ECE", _decimals(3)), "brier": ("Brier", _decimals(3)),
    "kept_mean_p_correct": ("mean p_correct", _decimals(3)), "stage": ("stage", _text), "family": ("family", _text),
    "wins": ("wins", count), "win_rate": ("win rate", percent), "benchmark": ("benchmark", _text),
    "accuracy": ("accuracy", _pct), "model_card_accuracy": ("model card", _pct), "scored": ("scored", count),
    "failed": ("failed", count), "served_models": ("served by", _text), "kind": ("kind", _text),
    "subject": ("subject", _text), "error": ("error", _text),
    "chosen_longer": ("chosen longer (pool → version)", _text),
    "more_markdown": ("more markdown (pool → version)", _text),
    "chosen_first": ("shown first (pool → version)", _text),
    "action": ("policy", _text), "findings": ("findings (pool)", count),
    "version_pairs": ("pairs in the version", count), "version_findings": ("findings in the version", count),
}


def readable(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The chosen columns as text, each as its column configuration says, under its label."""
    def value(v: object) -> object:
        return None if pd.api.types.is_scalar(v) and pd.isna(v) else v  # NaN, NaT and pd.NA read as missing

    def cell(c: str, v: object) -> str:
        text = COLUMNS[c][1](value(v))
        return "–" if text == "-" else text  # a lone "-" would render as a list bullet

    return pd.DataFrame({COLUMNS[c][0]: [cell(c, v) for v in df[c]] for c in columns}, index=range(len(df)))


def show(df: pd.DataFrame, columns: list[str], empty: str) -> None:
    """A table of the chosen columns that fits the page, or which command fills it when it is empty."""
    if not len(df):
        st.info(empty)
        return
    st.table(readable(df, columns).style.hide(axis="index"))


def bar_chart(df: pd.DataFrame, x: str, y: str, title: str, label_format: str = ",d") -> alt.Chart:
    """Bars with their value written on them: the numbers are readable without hovering."""
    enc = {"x": alt.X(f"{x}:N", sort=None, title=x.replace("_", " ")), "y": alt.Y(f"{y}:Q", title=y.replace("_", " "))}
    bars = alt.Chart(df, title=title).mark_bar().encode(**enc, tooltip=list(df.columns))
    labels = alt.Chart(df).mark_text(dy=-6).encode(x=enc["x"], y=enc["y"], text=alt.Text(f"{y}:Q", format=label_format))
    return bars + labels


def section(title: str, df: pd.DataFrame, x: str, y: str, chart_title: str) -> None:
    """A subheader and a labelled bar chart when there is data."""
    st.subheader(title)
    if len(df):
        st.altair_chart(bar_chart(df, x, y, chart_title), width="stretch")


def _pool_to_version(pool: pd.Series, kept: pd.Series) -> list[str]:
    return [f"{percent(p)} → {percent(k)}" for p, k in zip(pool, kept)]


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
    other_weights = data.other_weights_configs(snap)
    if other_weights:
        st.warning("**Other weights.** " + "; ".join(f"Judge configuration {c} was answered by a server that loaded "
                                                      f"`{w}`" for c, w in other_weights.items())
                   + ", not the judge's published weights: the verdicts, agreement, margins and versions built on "
                   "them shown here are those weights', not the judge's.", icon="⚠️")

    versions = data.versions(snap)
    with st.sidebar:
        st.header("Filters")
        chosen_sources = st.multiselect("Source", data.sources(snap), key="sources")
        chosen_domains = st.multiselect("Domain", data.domains(snap), key="domains")
        labels = [f"{r.dataset} v{r.version}" for r in versions.itertuples()]
        # the version made last first, not the first dataset by name
        label = st.selectbox("Dataset version", labels, index=data.latest_version(versions), key="version") \
            if labels else None
    dataset, version = (label.rsplit(" v", 1)[0], int(label.rsplit(" v", 1)[1])) if label else (None, None)
    f = Filters(tuple(chosen_sources), tuple(chosen_domains), dataset, version)

    funnel = data.funnel(snap, f)
    costs = data.version_costs(snap)
    this = versions[(versions["dataset"] == dataset) & (versions["version"] == version)] if dataset else versions.iloc[0:0]
    this_cost = costs[(costs["dataset"] == dataset) & (costs["version"] == version)] if dataset else costs.iloc[0:0]
    first = funnel.drop_duplicates("source")  # one row per source (the funnel repeats it per dataset)
    v = this.iloc[0] if len(this) else None
    this_simulated = v is not None and bool(v["simulated"])
    this_weights = v["judge_weights"] if v is not None and isinstance(v["judge_weights"], str) else None
    # The selected version's figures, as its card states them (tasks/curate/figures.py).
    c1, c2, c3 = st.columns(3)
    c1.metric("Pairs read", count(first["read"].sum() if len(first) else 0))
    c2.metric("Pairs judged", count(v["pairs_judged"]) if v is not None and pd.notna(v["pairs_judged"])
              else count(first["judged"].sum() if len(first) else 0))
    c3.metric("Pairs kept", count(v["row_count"]) if v is not None else "n/a")
    c4, c5, c6 = st.columns(3)
    c4.metric("Judge-human agreement" + (" (SIMULATED)" if this_simulated or (v is None and simulated) else "")
              + (" (other weights)" if this_weights or (v is None and other_weights) else ""),
              percent(v["agreement"]) if v is not None and pd.notna(v["agreement"]) else "n/a",
              help="Of the kept pairs where the human label and the judge both prefer a side, the share where they "
                   "agree; human ties, both-bad votes and judge ties are counted apart (as on the card).")
    c5.metric("Agreement, judged pool", percent(v["pool_agreement"]) if v is not None and pd.notna(v["pool_agreement"])
              else "n/a", help="The same figure over every judged pair the version was drawn from.")
    c6.metric("GPU-hours / 1,000 kept", f"{this_cost['gpu_hours_per_1000_kept'].iloc[0]:,.2f}" if len(this_cost) else "n/a",
              help="Estimated from tokens under the configured throughput (see the versions section).")
    measured = this_cost["gpu_seconds"].iloc[0] if len(this_cost) and "gpu_seconds" in this_cost else None
    st.metric("GPU-seconds (measured)", rate(measured) if measured is not None and pd.notna(measured) else "n/a",
              help="The seconds the judges' requests were in flight on their servers, times the GPUs each holds, "
                   "whole and per judge in the versions section (as on the card and in `curate status`).")
    if label:
        st.caption(f"Figures of **{label}**" + (" (SIMULATED verdicts)" if this_simulated else "")
                   + (f" (judged by other weights: `{this_weights}`)" if this_weights else "")
                   + " — the same as its dataset card and `curate status`.")

    st.header("Yield funnel per source")
    if len(funnel):
        long = first.melt(id_vars="source", value_vars=["read", "valid", "unique_pairs", "for_curation", "judged"],
                          var_name="stage", value_name="pairs")
        kept = funnel[funnel["dataset"] == dataset][["source", "kept"]].rename(columns={"kept": "pairs"})
        long = pd.concat([long, kept.assign(stage="kept")])
        st.altair_chart(alt.Chart(long, title="read → valid → unique → for curation → judged → kept").mark_bar()
                        .encode(x=alt.X("stage:N", sort=["read", "valid", "unique_pairs", "for_curation", "judged", "kept"]),
                                y="pairs:Q", color="source:N", xOffset="source:N", tooltip=["source", "stage", "pairs"]),
                        width="stretch")
        notes = ["Distinct rows per source"]
        repeats = int(first["repeats"].sum()) if "repeats" in first else 0
        if repeats:
            notes.append(f"rows repeated within one file (the same row twice, counted once): {count(repeats)}")
        if first["re_reads"].sum():
            notes.append(f"rows read again by later runs (not counted above): {count(first['re_reads'].sum())}")
        newest = funnel[funnel["dataset"] == dataset]["version"].dropna()
        if len(newest):
            notes.append(f"kept: in {dataset} v{int(newest.iloc[0])}, the newest version")
        st.caption("; ".join(notes) + ".")
    kept_here = funnel[funnel["dataset"] == dataset].set_index("source")["kept"]
    show(first.assign(kept=[kept_here.get(s, 0) for s in first["source"]]),
         ["source", "read", "valid", "quarantined", "unique_pairs", "for_curation", "judged", "kept"],
         "Nothing ingested yet: `curate ingest --source helpsteer3` (or `curate run`) fills this.")

    left, right = st.columns(2)
    with left:
        q = data.quarantine(snap, f)
        st.subheader("Quarantine reasons")
        if len(q):
            st.altair_chart(bar_chart(q.groupby("reason", as_index=False)["rows"].sum(), "reason", "rows",
                                      "quarantined rows by reason"), width="stretch")
        show(q, ["source", "reason", "rows"], "No row was quarantined.")
    with right:
        fails = data.failures(snap)
        section("Judge failures by reason", fails, "failure_reason", "judgments", "failed judgments")
        show(fails, ["failure_reason", "judgments"], "No judgment failed (`curate judge` records failures here).")

    left, right = st.columns(2)
    with left:
        section("Margin distribution", data.margin_histogram(snap, f), "abs_margin_bin", "pairs",
                "|mean margin| of judged pairs")
    with right:
        section(f"Confidence distribution ({label or 'no version'})",
                data.confidence_histogram(snap, f) if dataset else pd.DataFrame(), "confidence_bin", "pairs",
                f"confidence of kept pairs in {label}")

    st.header("Judge-human agreement by source and domain")
    agreement = data.agreement(snap, f)
    st.caption("Every judged pair, by source and domain: of the pairs where both prefer a side, the share where they "
               "agree. Human ties, both-bad votes and judge ties are counted apart.")
    if len(agreement):
        st.altair_chart(bar_chart(agreement.assign(group=agreement["source"] + " / " + agreement["domain"]),
                                  "group", "agreement_pct", "agreement % (pairs where both prefer a side)",
                                  label_format=".1f"), width="stretch")
    show(agreement, ["source", "domain", "pairs", "comparable", "agree", "agreement_pct", "human_ties", "judge_ties"],
         "No judged pair carries a human label yet: `curate judge --endpoint URL` fills this.")

    st.header("Throughput and tokens")
    tp = data.throughput(snap)
    if len(tp):
        st.altair_chart(bar_chart(tp.assign(run=tp["run_id"].str[:8]), "run", "judgments_per_s",
                                  "judgments/s per judge run", label_format=",.1f"), width="stretch")
    show(tp, ["run_id", "strategy", "status", "started_at", "seconds", "judgments", "ok", "tokens_in", "tokens_out",
              "judgments_per_s", "tokens_per_s"], "No judge run yet: `curate judge --endpoint URL` fills this.")

    st.header("Versions, their diffs and cost")
    versions = versions.assign(judge=[judge_label(pd.notna(s) and bool(s), w if isinstance(w, str) else None)
                                      for s, w in zip(versions["simulated"], versions["judge_weights"])])
    show(versions, ["dataset", "version", "parent_version", "created_at", "judge", "pairs_judged", "row_count",
                    "agreement", "added", "removed", "flipped", "content_hash", "published_tag"],
         "No version yet: `curate build-version NAME` fills this.")
    model = data.cost_model(snap)
    st.caption(f"GPU-hours are estimated from tokens at {count(model.server_tokens_per_second)} tokens/s per "
               f"server of {model.gpus_per_server} GPUs (CURATE_COST_SERVER_TOKENS_PER_SECOND).")
    show(costs, ["dataset", "version", "kept", "judgments", "requests", "tokens_in", "tokens_out",
                 "tokens_per_kept_pair", "gpu_hours", "gpu_hours_per_1000_kept", "gpu_seconds",
                 "gpu_seconds_by_judge", "gpu_seconds_per_kept_pair"],
         "No version yet: `curate build-version NAME` fills this.")

    st.header("Calibration and bias, per version")
    st.caption("p_correct: the calibrated probability that the judge's direction matches a clear human preference "
               "(cross-fitted; ECE and Brier on labelled pairs no model saw). Bias shares: of the judged pool "
               "before the filter → of the version." + (" SIMULATED verdicts: these say nothing of answer "
                                                         "quality." if simulated else ""))
    quality = data.version_quality(snap)
    quality = quality.assign(
        chosen_longer=_pool_to_version(quality["pool_chosen_longer"], quality["kept_chosen_longer"]),
        more_markdown=_pool_to_version(quality["pool_more_markdown"], quality["kept_more_markdown"]),
        chosen_first=_pool_to_version(quality["pool_chosen_first"], quality["kept_chosen_first"]))
    show(quality, ["dataset", "version", "calibration", "labelled_pairs", "ece", "brier", "kept_mean_p_correct",
                   "chosen_longer", "more_markdown", "chosen_first"],
         "No version yet: `curate build-version NAME` fills this.")
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
        show(families, ["stage", "family", "pairs", "wins", "win_rate"], "")

    personal = data.personal_data(snap, f) if dataset else None
    if personal is not None and len(personal):
        st.subheader(f"Personal data and secrets ({label}): found in the judged pool, and in the version")
        st.caption("redact: replaced by a typed placeholder in the version's texts; drop: the pair left out; keep: "
                   "left as found. Names and street addresses are scanned only where a detector model is "
                   "configured: the kinds name and address are rows here when one was.")
        show(personal, ["kind", "action", "pairs", "findings", "version_pairs", "version_findings"], "")

    certification.render(snap, dataset, version, label)

    reviews.render(snap)

    st.header("Judge quality checks")
    show(data.evaluations(snap), ["benchmark", "created_at", "accuracy", "model_card_accuracy", "scored", "failed",
                                  "strategy", "served_models"],
         f"No judge quality check yet: `curate evaluate-judge --benchmark {' | '.join(BENCHMARKS)} --endpoint URL` "
         "fills this.")

    st.header("Runs")
    show(data.runs(snap), ["kind", "subject", "status", "started_at", "seconds", "error"],
         "No run yet: `curate demo` or `curate run` fills this.")


main()

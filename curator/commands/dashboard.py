"""`curate status`, `curate snapshot`, `curate dashboard`: what the warehouse holds, for people."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from curator.options import json_option, warehouse_option
from curator.output import err, judge_label, out, print_json, print_summary, print_table
from curator.runner import apply_flags, guarded

commands = typer.Typer()


@commands.command()
def status(
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
) -> None:
    """What the warehouse holds: counts, judging per judge configuration, versions with their figures, runs."""
    apply_flags(warehouse)
    from common.settings import get_settings
    from warehouse.store import Warehouse

    with guarded(Warehouse, get_settings().warehouse, read_only=True) as wh:
        counts = wh.counts()
        runs = wh.runs.ingest_runs(10)
        interrupted = wh.runs.interrupted_runs(10)
        judging = wh.judging.judging_status(get_settings().judge_max_attempts)
        found = wh.versions.versions()
        reviews = wh.reviews.review_progress()
        personal = wh.pii.totals()
    if as_json:
        print_json({"counts": counts, "runs": runs, "interrupted": interrupted, "judging": judging, "versions": found,
                    "reviews": reviews, "personal_data": personal})
        return
    from common.numbers import count, percent, rate

    print_summary("warehouse", {k: count(v) for k, v in counts.items()}, False)
    if judging:
        # a pair over the judge's budget is never sent, one at the attempt limit is not asked again unless a run is
        # told to (--retry-exhausted), a judge ladder's rounds left one at its reward model: none is pending, each is
        # counted apart
        print_table(out, ["judge configuration", "model", "judgments ok", "failed", "pairs judged", "pairs pending",
                          "at the attempt limit", "over budget, never sent", "left at the reward model"],
                    [(j["judge_config_id"], "SIMULATED stand-in" if j["simulated"] else
                      judge_label(False, j["weights"], j["model"]), count(j["ok"]),
                      count(j["failed"]), count(j["pairs_judged"]), count(j["pairs_pending"]),
                      count(j["pairs_exhausted"]), count(j["pairs_over_budget"]), count(j["pairs_at_reward_model"]))
                     for j in judging], title="judging")
    if found:
        def figure(v: dict[str, Any], key: str) -> Any:
            return (v["figures"] or {}).get(key)

        def agreement(v: dict[str, Any]) -> str:
            kept = (figure(v, "human_agreement") or {}).get("kept") or {}
            return f"{percent(kept['rate'])} of {count(kept['comparable'])}" if kept.get("rate") is not None else "-"

        print_table(out, ["name", "version", "pairs judged", "pairs kept", "agreement with humans", "judge",
                          "content hash", "published"],
                    [(v["name"], v["version"], count(figure(v, "pairs_judged")), count(v["row_count"]), agreement(v),
                      judge_label(v["simulated"], v["judge_weights"]), v["content_hash"], v["published_tag"])
                     for v in found],
                    title="versions")
        certified = [(v, c) for v in found if (c := figure(v, "certification"))]
        if certified:
            from tasks.publish.quality_card import confidence_level

            print_table(out, ["name", "version", "target", "confidence", "estimated agreement", "coverage", "labels",
                              "pairs not covered", "kept, not covered"],
                        [(v["name"], v["version"], percent(c["target_agreement"]), confidence_level(c["risk"]),
                          percent(c.get("estimated_agreement")), percent(c["coverage"]), c["labels"],
                          count(sum((c.get("not_covered") or {}).values())), count(c.get("kept_not_covered") or 0))
                         for v, c in certified],
                        title="certified versions")
        measured = [(v, g) for v in found if (g := figure(v, "gpu_seconds"))]
        if measured:  # what the judge runs of each version's configuration measured
            print_table(out, ["name", "version", "GPU-seconds", "by judge", "per kept pair"],
                        [(v["name"], v["version"], rate(g["whole"]),
                          ", ".join(f"{k} {rate(x)}" for k, x in sorted((g.get("by_judge") or {}).items())) or "-",
                          rate(g.get("per_kept_pair"))) for v, g in measured],
                        title="GPU-seconds measured")
        # versions whose judged pool held personal data or secrets: what each did with them
        handled = [(v, p) for v in found if (p := figure(v, "pii")) and (p["redacted"] or p["kept"] or p["dropped_pairs"])]
        if handled:
            print_table(out, ["name", "version", "findings redacted", "findings kept as found", "pairs dropped"],
                        [(v["name"], v["version"], count(p["redacted"]), count(p["kept"]), count(p["dropped_pairs"]))
                         for v, p in handled], title="personal data and secrets in versions")
    if personal["kinds"] or personal["pairs_not_scanned"]:
        print_table(out, ["kind", "findings", "pairs holding it"],
                    [(kind, count(k["findings"]), count(k["pairs"])) for kind, k in personal["kinds"].items()],
                    title=f"personal data and secrets found ({count(personal['pairs_scanned'])} pairs scanned, "
                          f"{count(personal['pairs_not_scanned'])} not yet; names and street addresses: "
                          + (", ".join(f"scanned by {m} in {count(n)} pairs" for m, n in personal["models"].items())
                             or "not scanned") + ")")
    if reviews:
        from tasks.review.agreement import agreement_text

        print_table(out, ["review project", "pushed", "not yet pushed", "annotated", "reviewers", "withdrawn",
                          "judge agrees, audit (unbiased)"],
                    [(r["project"], count(r["pushed"]), count(r["not_yet_pushed"]), count(r["annotated"]),
                      count(r["reviewers"]), count(r["withdrawn"]),
                      agreement_text(r["audit_judge_agrees"], r["audit_decided"])) for r in reviews],
                    title="reviews")
    if interrupted:
        print_table(out, ["started", "kind", "subject", "run id", "process", "noticed"],
                    [(str(r["started_at"])[:19], r["kind"], r["subject"], r["run_id"], f"{r['pid']} on {r['host']}",
                      str(r["interrupted_at"] or "now (recorded by the next writer)")[:19]) for r in interrupted],
                    title="interrupted runs")
    rows = []
    for r in runs:
        s = json.loads(r["summary"]) if r["summary"] else {}
        rows.append((str(r["started_at"])[:19], r["source"], r["status"], count(s.get("read")),
                     count(s.get("new_pairs")), r["source_revision"]))
    print_table(out, ["started", "source", "status", "read", "new pairs", "revision"], rows, title="ingest runs")


@commands.command()
def snapshot(warehouse: Optional[Path] = warehouse_option()) -> None:
    """Refresh the dashboard's snapshot from the warehouse (the pipeline does this after each stage)."""
    apply_flags(warehouse)
    from common.settings import get_settings
    from tasks.judge.cost import cost_model
    from warehouse.snapshot import refresh_snapshot, snapshot_path
    from warehouse.store import Warehouse

    settings = get_settings()
    guarded(lambda: Warehouse(settings.warehouse).close())  # migrates, or names the process holding the lock
    target = snapshot_path(settings.warehouse, settings.dashboard_snapshot)
    counts = refresh_snapshot(settings.warehouse, target, "manual",
                              {"server_tokens_per_second": settings.cost_server_tokens_per_second,
                               "gpus_per_server": cost_model(settings).gpus_per_server})
    out.print(f"snapshot {target}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


@commands.command()
def dashboard(
    port: int = typer.Option(8501, "--port", min=1, max=65535, help="port to serve on"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to serve on (0.0.0.0: every interface)"),
    warehouse: Optional[Path] = warehouse_option(),
    refresh: bool = typer.Option(True, "--refresh/--no-refresh", help="refresh the snapshot first when the warehouse "
                                                                      "is free"),
) -> None:
    """The data team's web dashboard (read-only, over the snapshot the pipeline refreshes)."""
    apply_flags(warehouse)

    from common.settings import get_settings
    from warehouse.snapshot import snapshot_path

    settings = get_settings()
    target = snapshot_path(settings.warehouse, settings.dashboard_snapshot)
    if refresh and settings.warehouse.exists():
        try:
            snapshot(warehouse)
        except typer.Exit:
            err.print(f"the warehouse is busy: showing the last snapshot {target}")
    app_file = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
    out.print(f"dashboard on http://{host}:{port} (read-only, snapshot {target}); Ctrl-C stops it")
    raise typer.Exit(serve_until_stopped([
        sys.executable, "-m", "streamlit", "run", str(app_file), "--server.headless", "true", "--server.port",
        str(port), "--server.address", host, "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal",
        "--", "--snapshot", str(target)]))


def serve_until_stopped(argv: list[str]) -> int:
    """Run a server as a child and pass SIGTERM/SIGINT on to it, waiting for it to stop: a `kill` of this
    command never leaves the server running on its own."""
    import signal
    import subprocess

    from common.processes import stop_process

    child = subprocess.Popen(argv)

    def forward(signum, frame):
        if child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        try:
            return child.wait()
        finally:
            stop_process(child, 15)  # we are leaving for another reason: take the server along
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

"""Human review end to end, against a real Label Studio started for the session (tests/flows/conftest.py):
pairs of a judged version pushed with `curate review push` (borderline, audit, disagreement), reviewers who join
through the organization's invite link and annotate through Label Studio's API as a person would (reading the two
answers, never the warehouse), `curate review pull`, an annotation changed in Label Studio and pulled again, then
`curate build-version`: the reviewers' sides, what they dropped, the calibration's labels by who gave them, the
audit's agreement with its interval; the card and the dashboard. Errors: an unreachable server, a refused token, a
project whose interface was edited by hand, each one line, nothing written.

Reviewers here prefer the answer of higher latent quality (the truth the synthetic rows and the stand-in share),
except for planned pairs: one all say tie, one mostly both-bad, one split three ways, one overridden against the
judge, one skipped, one changed."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from curator.cli import app
from flows.publish import publish
from schemas.summaries import ReviewPullSummary, ReviewPushSummary, ReviewSyncSummary, VersionSummary
from tasks.curate.calibration import clear_human_direction
from tasks.ingest.latent import latent_quality
from tasks.ingest.sources import known_facts
from tests.flows.conftest import judged_version
from tests.summary_checks import assert_summary
from warehouse.snapshot import refresh_snapshot, snapshot_path
from warehouse.store import Warehouse

pytestmark = [pytest.mark.prefect, pytest.mark.label_studio]

runner = CliRunner()
PROJECT = "rev review"


def _cli(*args: str, ok: bool = True) -> dict | object:
    result = runner.invoke(app, list(args))
    if not ok:
        return result
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def _judged(warehouse: Path) -> tuple[dict[str, str], dict[str, float]]:
    """Every judged pair's side by the judge (its mean margin on A's side) and its p_correct as a push before any
    review fits it: selections draw from the whole judged pool, not only the version's rows."""
    from tasks.review.calibration import calibrate_with_reviews
    from tasks.review.overrides import PoolReviews
    from tasks.review.pool import ReviewedPool

    with Warehouse(warehouse, read_only=True) as wh:
        sides = {p: "a" if m > 0 else "b" if m < 0 else "tie" for p, m in wh.query(
            "SELECT pair_id, avg(margin_a) FROM judgments WHERE status = 'ok' GROUP BY pair_id")}
        read = ReviewedPool.read(wh, wh.versions.latest_judge_config_id())
    p_correct, _ = calibrate_with_reviews(read.pool, read.judge, PoolReviews.none(len(read.pool)), read.facts)
    return sides, {p: float(x) for p, x in zip(read.pool.pair_id, p_correct) if p in sides}


def _tasks(server, project_id: int) -> list[dict]:
    with server.admin() as admin:
        answer = admin.get("/api/tasks", params={"project": project_id, "page_size": 1000}).json()
    return sorted(answer["tasks"], key=lambda t: t["id"])


def _annotate(reviewer, task_id: int, choice: str, lead_time: float = 12.5) -> dict:
    result = [{"from_name": "preference", "to_name": "answer_1", "type": "choices", "value": {"choices": [choice]}}]
    response = reviewer.post(f"/api/tasks/{task_id}/annotations", json={"result": result, "lead_time": lead_time})
    assert response.status_code == 201, response.text
    return response.json()


def _shown(data: dict, side_text: str) -> str:
    """The choice that names the answer showing this text."""
    return "Answer 1" if data["answer_1"] == side_text else "Answer 2"


def _wilson_by_quadratic(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson's interval as the roots of (p_hat - p)^2 = z^2 p (1 - p) / n, solved directly."""
    p_hat = k / n
    a, b, c = 1 + z * z / n, -(2 * p_hat + z * z / n), p_hat * p_hat
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


@pytest.fixture(scope="module")
def reviewed(label_studio, tmp_path_factory):
    warehouse, v1 = judged_version(tmp_path_factory.mktemp("review"), "rev", 600, 24, pair_bytes=400, position_bias=0.3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABEL_STUDIO_API_KEY", label_studio.token)
        wh_flag = ["--warehouse", str(warehouse)]
        push = lambda *a: _cli("review", "push", "rev", "--to", label_studio.url, "--json", *a, *wh_flag)  # noqa: E731
        pushes = {"borderline": push("--limit", "12"), "borderline_again": push("--limit", "12"),
                  "audit": push("--select", "audit", "--limit", "30", "--seed", "7"),
                  "disagreement": push("--select", "disagreement", "--limit", "6")}
        project_id = pushes["borderline"]["project_id"]
        tasks = _tasks(label_studio, project_id)
        with Warehouse(warehouse, read_only=True) as wh:
            rows = {r["pair_id"]: r for r in wh.versions.version_rows("rev", v1["version"])}
            pairs = {p["pair_id"]: p for p in wh.reviews.review_pair_texts([t["data"]["pair_id"] for t in tasks])}
        reviewers = [label_studio.reviewer(f"reviewer{i}@example.com") for i in (1, 2, 3)]
        votes: dict[str, list[tuple[str, str]]] = {}  # pair -> (reviewer, side), as the test meant them

        def vote(r: int, task: dict, side: str, lead_time: float = 12.5) -> dict:
            pair = pairs[task["data"]["pair_id"]]
            choice = {"tie": "Tie", "both_bad": "Both bad"}.get(side) or _shown(task["data"], pair[f"response_{side}"])
            votes.setdefault(pair["pair_id"], []).append((f"r{r}", side))
            return _annotate(reviewers[r - 1], task["id"], choice, lead_time)

        def better(task: dict) -> str:
            pair = pairs[task["data"]["pair_id"]]
            return "a" if latent_quality(pair["response_a"]) >= latent_quality(pair["response_b"]) else "b"

        tie, bad, split, override, skipped, changed, *rest = tasks
        plan = {"tie": tie, "both_bad": bad, "split": split, "override": override, "changed": changed}
        for r in (1, 2, 3):
            vote(r, tie, "tie")
        for r, side in ((1, "both_bad"), (2, "both_bad"), (3, "a")):
            vote(r, bad, side)
        for r, side in ((1, "a"), (2, "b"), (3, "tie")):
            vote(r, split, side)
        judged, pool_p_correct = _judged(warehouse)
        judge_side = judged[override["data"]["pair_id"]]
        for r in (1, 2):
            vote(r, override, "b" if judge_side == "a" else "a")
        skip = reviewers[1].post(f"/api/tasks/{skipped['id']}/annotations", params={"was_cancelled": "1"},
                                 json={"result": [], "lead_time": 3.0})
        assert skip.status_code == 201, skip.text
        vote(1, skipped, better(skipped))
        first_change = vote(1, changed, better(changed))
        for i, task in enumerate(rest):
            vote(1, task, better(task), lead_time=5.0 + i)
        pulls = {"first": _cli("review", "pull", "--from", label_studio.url, "--json", *wh_flag)}
        with Warehouse(warehouse, read_only=True) as wh:
            after_first = wh.query("SELECT * FROM human_reviews ORDER BY annotation_id")
        pulls["again"] = _cli("review", "pull", "--from", label_studio.url, "--json", *wh_flag)
        with Warehouse(warehouse, read_only=True) as wh:
            after_again = wh.query("SELECT * FROM human_reviews ORDER BY annotation_id")
        # reviewer 1 changes their mind in Label Studio
        old_side = votes[changed["data"]["pair_id"]][0][1]
        new_side = "b" if old_side == "a" else "a"
        pair = pairs[changed["data"]["pair_id"]]
        patched = reviewers[0].patch(f"/api/annotations/{first_change['id']}", json={"result": [
            {"from_name": "preference", "to_name": "answer_1", "type": "choices",
             "value": {"choices": [_shown(changed["data"], pair[f"response_{new_side}"])]}}], "lead_time": 40.0})
        assert patched.status_code == 200, patched.text
        votes[changed["data"]["pair_id"]] = [("r1", new_side)]
        pulls["changed"] = _cli("review", "pull", "--from", label_studio.url, "--project", PROJECT, "--json", *wh_flag)
        v2 = _cli("build-version", "rev", "--json", *wh_flag)
    for r in reviewers:
        r.close()
    return SimpleNamespace(warehouse=warehouse, v1=v1, v2=v2, pushes=pushes, pulls=pulls, tasks=tasks, rows=rows,
                           pairs=pairs, votes=votes, plan=plan, judged=judged, pool_p_correct=pool_p_correct, project_id=project_id, first_change=first_change,
                           old_side=old_side, new_side=new_side, after_first=after_first, after_again=after_again,
                           server=label_studio)


def _majority(sides: list[str]) -> str:
    counts = {s: sides.count(s) for s in set(sides)}
    top = max(counts.values())
    leaders = [s for s, n in counts.items() if n == top]
    return leaders[0] if len(leaders) == 1 else "split"


def _outcomes(run) -> dict[str, str]:
    return {pair: _majority([side for _, side in votes]) for pair, votes in run.votes.items()}


def test_push_makes_one_task_per_pair_sides_drawn_the_judge_hidden(reviewed):
    p = reviewed.pushes
    assert p["borderline"]["project_created"] and p["borderline"]["tasks_pushed"] == 12
    assert p["borderline_again"]["tasks_pushed"] == 0 and p["borderline_again"]["new_members"] == 0
    assert p["audit"]["selected"] == 30 and p["disagreement"]["selected"] <= 6
    with Warehouse(reviewed.warehouse, read_only=True) as wh:
        selected = {s: {p for (p,) in wh.query("SELECT pair_id FROM review_selections WHERE selection = ?", [s])}
                    for s in ("borderline", "audit", "disagreement")}
        mapping = dict(wh.query("SELECT ls_task_id, answer_1 FROM review_tasks"))
    everything = selected["borderline"] | selected["audit"] | selected["disagreement"]
    tasks = reviewed.tasks
    assert len(tasks) == len(everything) == len({t["data"]["pair_id"] for t in tasks})  # never a task twice
    assert p["audit"]["new_tasks"] == 30 - p["audit"]["already_in_project"]
    # borderline: the judged pool's pairs (the version's rows and those it dropped) whose p_correct is closest to 0.5
    distance = {pid: abs(x - 0.5) for pid, x in reviewed.pool_p_correct.items() if not math.isnan(x)}
    assert max(distance[x] for x in selected["borderline"]) <= min(
        d for x, d in distance.items() if x not in selected["borderline"])
    assert p["borderline"]["candidates"] == len(reviewed.pool_p_correct) > len(reviewed.rows)
    # disagreement: every one has its orders, or the pair's own human label, against the judge
    with Warehouse(reviewed.warehouse, read_only=True) as wh:
        evidence = {pid: (ab, ba, label, bad) for pid, ab, ba, label, bad in wh.query(
            "SELECT pair_id, avg(margin_a) FILTER (WHERE \"order\" = 'ab'), avg(margin_a) FILTER (WHERE \"order\" = "
            "'ba'), any_value(human_label), any_value(both_bad) FROM judgments JOIN candidate_pairs USING (pair_id) "
            "WHERE status = 'ok' GROUP BY pair_id")}
    for pid in selected["disagreement"]:
        ab, ba, label, bad = evidence[pid]
        side = reviewed.judged[pid]
        against = label is not None and label != 0 and not bad and (label > 0) != (side == "a")
        assert (ab > 0) != (ba > 0) or against, (pid, evidence[pid], side)
    first = set()
    for t in tasks:
        assert set(t["data"]) == {"conversation", "answer_1", "answer_2", "pair_id"}
        pair = reviewed.pairs[t["data"]["pair_id"]]
        shown_first = "a" if t["data"]["answer_1"] == pair["response_a"] else "b"
        assert {t["data"]["answer_1"], t["data"]["answer_2"]} == {pair["response_a"], pair["response_b"]}
        assert mapping[t["id"]] == shown_first  # the warehouse knows how each task shows its pair
        first.add(shown_first)
    assert first == {"a", "b"}  # drawn per task, not one fixed order


def test_pull_lands_every_submitted_annotation_once_mapped_onto_the_pair(reviewed):
    submitted = sum(len(v) for v in reviewed.votes.values())
    first = reviewed.pulls["first"]
    (project,) = first["projects"]
    assert first["new"] == submitted and project["rejected"] == {"skipped": 1} and project["foreign_tasks"] == 0
    assert first["withdrawn"] == {} and first["tasks_adopted"] == 0 and first["counted_as_poster"] == 0
    assert first["updated"] == 0 and first["pairs_reviewed"] == len(reviewed.votes)
    with Warehouse(reviewed.warehouse, read_only=True) as wh:
        rows = wh.query("SELECT pair_id, side, annotator, lead_time_s FROM human_reviews")
    by_pair: dict[str, list[str]] = {}
    for pair, side, annotator, lead in rows:
        assert annotator.startswith("reviewer") and lead is not None
        by_pair.setdefault(pair, []).append(side)
    # what the reviewers meant (the changed one: as changed), read back through each task's mapping
    meant = {pair: sorted(side for _, side in votes) for pair, votes in reviewed.votes.items()}
    assert {k: sorted(v) for k, v in by_pair.items()} == meant
    again = reviewed.pulls["again"]
    assert again["new"] == again["updated"] == 0 and again["unchanged"] == submitted
    assert reviewed.after_again == reviewed.after_first  # re-pulling changes nothing


def test_an_annotation_changed_in_label_studio_updates_its_row_and_keeps_its_history(reviewed):
    changed = reviewed.pulls["changed"]
    assert changed["updated"] == 1 and changed["new"] == 0
    with Warehouse(reviewed.warehouse, read_only=True) as wh:
        (now,) = wh.query("SELECT side, revision, lead_time_s FROM human_reviews WHERE annotation_id = ?",
                          [reviewed.first_change["id"]])
        (before,) = wh.query("SELECT side, revision FROM human_review_history WHERE annotation_id = ?",
                             [reviewed.first_change["id"]])
        outcome = wh.query("SELECT outcome FROM review_outcomes WHERE pair_id = ?",
                           [reviewed.plan["changed"]["data"]["pair_id"]])
    assert now == (reviewed.new_side, 2, 40.0) and before == (reviewed.old_side, 1)
    assert outcome == [(reviewed.new_side,)]


def test_the_version_takes_the_reviewers_side_and_counts_what_they_dropped(reviewed):
    v1, v2 = reviewed.v1, reviewed.v2
    assert v2["new_version"] and v2["version"] == v1["version"] + 1
    outcomes = _outcomes(reviewed)
    dropped = v2["stats"]["dropped"]
    for reason, outcome in (("reviewed_tie", "tie"), ("reviewed_both_bad", "both_bad"), ("reviewed_split", "split")):
        assert dropped.get(reason, 0) == sum(o == outcome for o in outcomes.values()) == 1
    with Warehouse(reviewed.warehouse, read_only=True) as wh:
        rows = {r["pair_id"]: r for r in wh.versions.version_rows("rev", v2["version"])}
    # the reviewers' tie, both-bad and split leave; every pair they decided is in, those v1 dropped included
    decided = {p for p, o in outcomes.items() if o in ("a", "b")}
    assert set(rows) == (set(reviewed.rows) - set(outcomes)) | decided
    for pair, outcome in outcomes.items():
        if outcome in ("a", "b"):
            assert rows[pair]["chosen_side"] == outcome
            judge_side = reviewed.judged[pair]  # a judge tie (margin 0) reviewers decided is in with their side
            assert (rows[pair]["margin"] < 0) == (outcome != judge_side != "tie")
            assert (rows[pair]["margin"] == 0) == (judge_side == "tie")
        else:
            assert pair not in rows
    override = reviewed.plan["override"]["data"]["pair_id"]
    assert rows[override]["chosen_side"] != reviewed.judged[override] and rows[override]["margin"] < 0
    review = v2["stats"]["review"]
    decided = [p for p, o in outcomes.items() if o in ("a", "b")]
    assert review["kept_reviewed"] == len(decided)
    assert review["judge_overridden"] == sum(outcomes[p] != reviewed.judged[p] for p in decided)
    unreviewed = set(reviewed.rows) - set(outcomes)
    assert all(rows[p]["chosen_side"] == reviewed.rows[p]["chosen_side"] for p in unreviewed)


def test_reviewers_labels_count_for_the_calibration_apart_from_the_sources(reviewed):
    # a judge tie has no direction to be right about: its review labels nothing for the calibration
    outcomes = {p: o for p, o in _outcomes(reviewed).items() if reviewed.judged[p] != "tie"}
    decided = [p for p, o in outcomes.items() if o in ("a", "b")]
    right = sum(outcomes[p] == reviewed.judged[p] for p in decided)
    with Warehouse(reviewed.warehouse, read_only=True) as wh:
        labels = {p: (s, h, b) for p, s, h, b in wh.query(
            "SELECT pair_id, source, human_label, both_bad FROM candidate_pairs")}
    had_clear_label = sum(clear_human_direction(*labels[p], known_facts()) is not None for p in outcomes)
    before, after = reviewed.v1["stats"]["calibration"], reviewed.v2["stats"]["calibration"]
    assert before["label_sources"]["review"]["labelled"] == 0
    sources = after["label_sources"]
    assert sources["review"]["labelled"] == len(decided) and sources["review"]["judge_right"] == right
    assert sources["source"]["labelled"] == before["labelled"] - had_clear_label
    assert after["labelled"] == sources["source"]["labelled"] + sources["review"]["labelled"]
    assert after["status"] == "fitted" and sources["review"]["ece"] is not None


def test_the_audit_sample_s_agreement_is_reported_with_its_interval(reviewed):
    outcomes = _outcomes(reviewed)
    with Warehouse(reviewed.warehouse, read_only=True) as wh:
        audit = {p for (p,) in wh.query("SELECT pair_id FROM review_selections WHERE selection = 'audit'")}
    # of the pairs where both pick a side: a judge tie of the pool's sample is not compared
    compared = [p for p in audit if outcomes.get(p) in ("a", "b") and reviewed.judged[p] != "tie"]
    agree = sum(outcomes[p] == reviewed.judged[p] for p in compared)
    figure = reviewed.v2["stats"]["review"]["audit"]
    assert figure["selected"] == 30 and figure["compared"] == len(compared) > 10
    assert figure["judge_agrees"] == agree and figure["agreement"] == round(agree / len(compared), 4)
    low, high = _wilson_by_quadratic(agree, len(compared))
    assert figure["ci95"] == [round(low, 4), round(high, 4)] and low < figure["agreement"] <= high + 1e-9


def test_the_card_and_the_dashboard_show_the_review(reviewed, monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    publish("rev", version=reviewed.v2["version"], to=str(tmp_path / "published"), warehouse=str(reviewed.warehouse))
    (card,) = [p.read_text() for p in (tmp_path / "published").rglob("README.md")]
    audit = reviewed.v2["stats"]["review"]["audit"]
    assert "## Human review" in card and "reviewed_tie" in card
    assert f"| {audit['compared']} | {audit['judge_agrees']} | {100 * audit['agreement']:.1f}%" in card
    snapshot = snapshot_path(reviewed.warehouse)
    refresh_snapshot(reviewed.warehouse, snapshot, "test", {"server_tokens_per_second": 2500, "gpus_per_server": 8})
    monkeypatch.setenv("CURATE_DASHBOARD_SNAPSHOT", str(snapshot))
    app_path = str(Path(__file__).resolve().parents[2] / "curator" / "dashboard" / "app.py")
    at = AppTest.from_file(app_path, default_timeout=60).run()
    assert not at.exception, at.exception
    assert "Human review (Label Studio)" in [h.value for h in at.header]
    (table,) = [t for t in at.table if "agreement, audit (unbiased)" in t.value.columns]
    row = table.value.iloc[0]
    assert row["project"] == PROJECT and row["pushed"] == f"{len(reviewed.tasks):,}"
    assert row["annotated"] == f"{len(reviewed.votes):,}" and row["withdrawn"] == "0"
    with Warehouse(reviewed.warehouse, read_only=True) as wh:
        (progress,) = wh.reviews.review_progress()
    assert row["agreement, audit (unbiased)"].endswith(f"of {progress['audit_decided']}")


def test_unreachable_server_refused_token_and_edited_interface_are_one_line_and_write_nothing(reviewed, monkeypatch):
    import socket

    server = reviewed.server
    warehouse = str(reviewed.warehouse)

    def tables() -> list:
        with Warehouse(warehouse, read_only=True) as wh:
            return [wh.query(f"SELECT count(*) FROM {t}")[0][0] for t in
                    ("review_projects", "review_tasks", "review_selections", "human_reviews", "human_review_history")]

    def one_line_error(result, words: str) -> None:
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2, result.output
        assert lines[0].startswith("error:") and words in lines[0], result.output
        assert len(lines) <= 2 and all(line.startswith(("error:", "hint:")) for line in lines), result.output

    before = tables()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", server.token)
    one_line_error(_cli("review", "push", "rev", "--to", closed, "--warehouse", warehouse, ok=False),
                   "cannot reach Label Studio")
    one_line_error(_cli("review", "pull", "--from", closed, "--warehouse", warehouse, ok=False),
                   "cannot reach Label Studio")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "not-the-token")
    one_line_error(_cli("review", "push", "rev", "--to", server.url, "--warehouse", warehouse, ok=False),
                   "refused the token")
    one_line_error(_cli("review", "pull", "--from", server.url, "--warehouse", warehouse, ok=False),
                   "refused the token")
    assert "not-the-token" not in _cli("review", "pull", "--from", server.url, "--warehouse", warehouse,
                                       ok=False).output
    assert tables() == before
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", server.token)
    with server.admin() as admin:
        config = admin.get(f"/api/projects/{reviewed.project_id}").json()["label_config"]
        edited = config.replace('<Choice value="Tie"/>', '<Choice value="Tie"/>\n    <Choice value="Skip"/>')
        assert admin.patch(f"/api/projects/{reviewed.project_id}", json={"label_config": edited}).status_code == 200
        try:
            one_line_error(_cli("review", "push", "rev", "--to", server.url, "--limit", "40", "--warehouse",
                                warehouse, ok=False), "labeling interface")
            one_line_error(_cli("review", "pull", "--from", server.url, "--warehouse", warehouse, ok=False),
                           "labeling interface")
            assert tables() == before
            assert len(_tasks(server, reviewed.project_id)) == len(reviewed.tasks)
        finally:
            admin.patch(f"/api/projects/{reviewed.project_id}", json={"label_config": config})


def test_without_a_token_the_command_says_where_to_put_one(reviewed, monkeypatch):
    from prefect.blocks.system import Secret

    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    monkeypatch.setattr(Secret, "load", classmethod(lambda cls, name, **kw: (_ for _ in ()).throw(ValueError(name))))
    result = _cli("review", "pull", "--from", reviewed.server.url, "--warehouse", str(reviewed.warehouse), ok=False)
    assert result.exit_code == 2 and "no Label Studio token" in result.output
    assert "LABEL_STUDIO_API_KEY" in result.output
    assert os.environ.get("LABEL_STUDIO_API_KEY") is None


def test_what_push_pull_and_build_version_print_with_json_is_their_declared_summary(reviewed):
    for push in reviewed.pushes.values():
        assert_summary(push, ReviewPushSummary)
    assert "seed" in reviewed.pushes["audit"] and "seed" not in reviewed.pushes["borderline"]
    for pull in reviewed.pulls.values():
        assert_summary(pull, ReviewPullSummary)
    assert_summary(reviewed.v2, VersionSummary)


def test_the_scheduled_sync_pulls_then_pushes_each_new_version_once(reviewed, monkeypatch):
    from flows.review import review_sync

    monkeypatch.setenv("LABEL_STUDIO_API_KEY", reviewed.server.token)
    monkeypatch.setenv("CURATE_LABEL_STUDIO_URL", reviewed.server.url)
    first = review_sync(datasets=["rev"], limit=5, warehouse=str(reviewed.warehouse))
    assert_summary(first, ReviewSyncSummary)
    assert first["pulled"]["new"] == first["pulled"]["updated"] == 0
    (pushed,) = first["pushed"]
    assert (pushed["version"], pushed["selection"]) == (reviewed.v2["version"], "borderline")
    assert pushed["project"] == PROJECT
    assert pushed["selected"] == 5 and pushed["tasks_pushed"] == pushed["new_tasks"]
    assert review_sync(datasets=["rev"], limit=5, warehouse=str(reviewed.warehouse))["pushed"] == []
    assert len(_tasks(reviewed.server, reviewed.project_id)) == len(reviewed.tasks) + pushed["new_tasks"]

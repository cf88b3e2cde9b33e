"""Human review believes nothing it cannot check, against the real Label Studio of the session
(tests/flows/conftest.py): a push cut short after Label Studio made the tasks is finished by the next pull and
push, nothing twice; tasks someone else imported into the project are left alone and reported; a task whose
texts were edited, a task or an annotation deleted, a `completed_by` naming another reviewer, annotations of a
shape Label Studio stores though it answered 500, a deleted user, one server reached by two URLs; and a pull
that reads a slow server keeps the warehouse closed meanwhile. Each through `curate review push|pull`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from curator.cli import app
from tasks.review.label_studio import LabelStudio
from tasks.review.tasks import task_data
from tests.flows.conftest import judged_version
from warehouse.reviews import ReviewStore
from warehouse.store import Warehouse

pytestmark = [pytest.mark.prefect, pytest.mark.label_studio]

runner = CliRunner()


def _cli(*args: str, ok: bool = True):
    result = runner.invoke(app, list(args))
    if not ok:
        return result
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def _result(choice: str) -> list[dict]:
    return [{"from_name": "preference", "to_name": "answer_1", "type": "choices", "value": {"choices": [choice]}}]


def _post(client, task_id: int, result, **extra) -> dict | None:
    """An annotation posted as `client`; Label Studio answers some stored shapes with a 500 (None then)."""
    response = client.post(f"/api/tasks/{task_id}/annotations", json={"result": result, "lead_time": 2.0, **extra})
    assert response.status_code in (201, 500), response.text
    return response.json() if response.status_code == 201 else None


def _tasks(server, project_id: int) -> list[dict]:
    with server.admin() as admin:
        answer = admin.get("/api/tasks", params={"project": project_id, "page_size": 1000, "fields": "all"}).json()
    return sorted(answer["tasks"], key=lambda t: t["id"])


def _localhost(url: str) -> str:
    return url.replace("127.0.0.1", "localhost")


@pytest.fixture(scope="module")
def judged(label_studio, tmp_path_factory):
    """A warehouse with a version of judged pairs, built once; each scenario reviews a copy of its own."""
    warehouse, _ = judged_version(tmp_path_factory.mktemp("trust"), "trust", 160, 57, pair_bytes=300)
    return SimpleNamespace(warehouse=warehouse, server=label_studio)


@contextmanager
def _scenario(judged, folder) -> Iterator[str]:
    """A copy of the judged warehouse of the scenario's own, with the Label Studio token in the environment."""
    warehouse = folder / "warehouse.duckdb"
    shutil.copy(judged.warehouse, warehouse)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABEL_STUDIO_API_KEY", judged.server.token)
        yield str(warehouse)


def _push(warehouse: str, url: str, title: str, *args: str, ok: bool = True):
    return _cli("review", "push", "trust", "--to", url, "--project", title, "--json", "--warehouse", warehouse, *args,
                ok=ok)


def _pull(warehouse: str, url: str, *args: str) -> dict:
    return _cli("review", "pull", "--from", url, "--json", "--warehouse", warehouse, *args)


# -- a push cut short, and tasks someone else imported ----------------------------------------------------
@pytest.fixture(scope="module")
def cut_short(judged, tmp_path_factory):
    server, title = judged.server, "trust cut short"
    with _scenario(judged, tmp_path_factory.mktemp("cut")) as warehouse:
        def lost(self, key, pushed):  # Label Studio made the tasks; the warehouse never heard their ids
            raise ConnectionResetError("the push was cut short here")

        with pytest.MonkeyPatch.context() as cut:
            cut.setattr(ReviewStore, "record_pushed_tasks", lost)
            failed = _push(warehouse, server.url, title, "--limit", "8", ok=False)
        with Warehouse(warehouse, read_only=True) as wh:
            (project_id,) = wh.query("SELECT ls_project_id FROM review_projects")[0]
            planned = wh.query("SELECT count(*) FROM review_tasks WHERE ls_task_id IS NULL")[0][0]
            selected = {p for (p,) in wh.query("SELECT pair_id FROM review_selections")}
            others = [p for (p,) in wh.query("SELECT pair_id FROM dataset_rows ORDER BY pair_id") if p not in selected]
            texts = wh.reviews.review_pair_texts([others[0]])
        ours = _tasks(server, project_id)
        # another member of the organization imports tasks into the project: a copy of one of ours, a task for a
        # pair nobody selected (its own texts, as a push would show them), and a task that names no pair
        intruder = server.reviewer("trust-importer@example.com")
        imported = intruder.post(f"/api/projects/{project_id}/import", params={"return_task_ids": "true"}, json=[
            {"data": ours[0]["data"]}, {"data": task_data(texts[0], "a")}, {"data": {"conversation": [{"role": "user", "content": "hi"}], "answer_1": "hello",
                                                  "answer_2": "bye"}}])
        assert imported.status_code == 201, imported.text
        foreign_ids = imported.json()["task_ids"]
        for tid in foreign_ids:
            _post(intruder, tid, _result("Answer 1"))
        _post(intruder, ours[1]["id"], _result("Answer 2"))  # and one annotation on a task this warehouse pushed
        pull = _pull(warehouse, server.url)
        push = _push(warehouse, server.url, title, "--limit", "8")
        again = _pull(warehouse, server.url)
        v2 = _cli("build-version", "trust", "--json", "--warehouse", warehouse)
        intruder.close()
    return SimpleNamespace(failed=failed, planned=planned, ours=ours, foreign_ids=foreign_ids, pull=pull, push=push,
                           again=again, v2=v2, warehouse=warehouse, project_id=project_id, unselected=others[0],
                           server=server)


def test_a_push_cut_short_is_finished_by_the_next_pull_nothing_twice(cut_short):
    assert cut_short.failed.exit_code != 0 and cut_short.planned == 8 and len(cut_short.ours) == 8
    pull = cut_short.pull
    assert pull["tasks_adopted"] == 8 and pull["new"] == 1  # the one annotation on a task the warehouse pushed
    assert cut_short.push["tasks_adopted"] == 0 and cut_short.push["tasks_pushed"] == 0
    assert cut_short.push["not_yet_pushed"] == 0 and cut_short.push["project_tasks"] == 8
    assert len(_tasks(cut_short.server, cut_short.project_id)) == 8 + 3  # nothing created twice
    with Warehouse(cut_short.warehouse, read_only=True) as wh:
        recorded = dict(wh.query("SELECT ls_task_id, pair_id FROM review_tasks"))
        digests = wh.query("SELECT count(*) FROM review_tasks WHERE texts_digest IS NULL")[0][0]
    assert recorded == {t["id"]: t["data"]["pair_id"] for t in cut_short.ours} and digests == 0


def test_tasks_someone_else_imported_are_left_alone_and_reported(cut_short):
    pull = cut_short.pull
    (project,) = pull["projects"]
    assert pull["foreign_tasks"] == 3 and sorted(project["foreign_task_ids"]) == sorted(cut_short.foreign_ids)
    assert pull["rejected"] == {"task_not_pushed": 3} and cut_short.push["foreign_tasks"] == 3
    again = cut_short.again
    assert (again["new"], again["updated"], again["unchanged"], again["tasks_adopted"]) == (0, 0, 1, 0)
    with Warehouse(cut_short.warehouse, read_only=True) as wh:
        assert wh.query("SELECT count(*) FROM review_tasks WHERE pair_id = ?", [cut_short.unselected]) == [(0,)]
        assert wh.query("SELECT pair_id FROM review_outcomes") == [(cut_short.ours[1]["data"]["pair_id"],)]
        rows = {r["pair_id"]: r for r in wh.versions.version_rows("trust", cut_short.v2["version"])}
        before = {r["pair_id"]: r for r in wh.versions.version_rows("trust", cut_short.push["version"])}  # pushed from
    unselected = cut_short.unselected  # the intruder's vote on a pair nobody selected changes nothing
    assert unselected in before
    assert rows.get(unselected, {}).get("chosen_side") == before.get(unselected, {}).get("chosen_side")


def test_a_project_recorded_before_servers_had_identities_is_recognised_at_its_url(cut_short, tmp_path,
                                                                                   monkeypatch):
    """A warehouse as the release before left it (key <url>#<id>, no server identity, no digests, reviewers named
    by URL): the next pull at that URL gives it all, changes no review and withdraws none."""
    warehouse = str(tmp_path / "warehouse.duckdb")
    shutil.copy(cut_short.warehouse, warehouse)
    with Warehouse(warehouse) as wh:
        ((key, url, project_id),) = wh.query("SELECT project_key, url, ls_project_id FROM review_projects")
        digests = dict(wh.query("SELECT ls_task_id, texts_digest FROM review_tasks"))
        legacy = f"{url}#{project_id}"
        for table in ("review_projects", "review_tasks", "review_selections", "review_pushes", "human_reviews"):
            wh.con.execute(f"UPDATE {table} SET project_key = ? WHERE project_key = ?", [legacy, key])
        wh.con.execute("UPDATE review_projects SET server_id = NULL")
        wh.con.execute("UPDATE review_tasks SET texts_digest = NULL")
        wh.con.execute("UPDATE human_reviews SET server = ?", [url])
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", cut_short.server.token)
    pulled = _pull(warehouse, url)
    assert (pulled["new"], pulled["updated"], pulled["unchanged"], pulled["withdrawn"]) == (0, 0, 1, {})
    assert pulled["tasks_texts_changed"] == 0 and pulled["foreign_tasks"] == 3
    with Warehouse(warehouse, read_only=True) as wh:
        assert dict(wh.query("SELECT ls_task_id, texts_digest FROM review_tasks")) == digests
        assert wh.query("SELECT project_key, server_id FROM review_projects") == [(legacy, pulled["server_id"])]
        assert wh.query("SELECT DISTINCT server FROM human_reviews") == [(pulled["server_id"],)]
    again = _pull(warehouse, _localhost(url))  # from now on, by the server's identity
    assert (again["new"], again["unchanged"], again["withdrawn"]) == (0, 1, {})


# -- what Label Studio says, checked --------------------------------------------------------------------
@pytest.fixture(scope="module")
def tampered(judged, tmp_path_factory):
    server, title = judged.server, "trust tampered"
    with _scenario(judged, tmp_path_factory.mktemp("tampered")) as warehouse:
        pushed = _push(warehouse, server.url, title, "--limit", "10")
        tasks = _tasks(server, pushed["project_id"])
        r1, r2, r3 = (server.reviewer(f"trust-r{i}@example.com") for i in (1, 2, 3))
        ids = {name: c.get("/api/current-user/whoami").json()["id"] for name, c in (("r1", r1), ("r2", r2), ("r3", r3))}
        edited, deleted, lost, forged, malformed, departed, skipped, late, *rest = tasks
        first = {t["id"]: _post(r1, t["id"], _result("Answer 1")) for t in tasks}
        by_r3 = _post(r3, departed["id"], _result("Answer 2"))
        baseline = _pull(warehouse, server.url)
        with Warehouse(warehouse, read_only=True) as wh:
            inputs_before = wh.reviews.review_inputs()
        v_before = _cli("build-version", "trust", "--json", "--warehouse", warehouse)
        with server.admin() as admin:
            swapped = {**edited["data"], "answer_1": edited["data"]["answer_2"], "answer_2": edited["data"]["answer_1"]}
            assert admin.patch(f"/api/tasks/{edited['id']}", json={"data": swapped}).status_code == 200
            assert admin.delete(f"/api/tasks/{deleted['id']}").status_code == 204
            assert admin.delete(f"/api/annotations/{first[lost['id']]['id']}").status_code == 204
        after_swap = _post(r2, edited["id"], _result("Answer 1"))  # made on the swapped texts
        own = _post(r2, forged["id"], _result("Answer 2"))
        claimed = _post(r2, forged["id"], _result("Answer 2"), completed_by=ids["r1"])  # says it is r1's
        shapes = [_post(r2, malformed["id"], [{**_result("Answer 1")[0], "value": value}])
                  for value in (["Answer 1"], "Answer 1", {"choices": [{"x": 1}]})]
        skip = f"/api/annotations/{first[skipped['id']]['id']}"
        assert r1.patch(skip, json={"was_cancelled": True}).status_code == 200
        with server.admin() as admin:
            assert admin.delete(f"/api/users/{ids['r3']}/").status_code == 204
        pull = _pull(warehouse, server.url)
        with Warehouse(warehouse, read_only=True) as wh:
            inputs_after = wh.reviews.review_inputs()
        v_after = _cli("build-version", "trust", "--json", "--warehouse", warehouse)
        # the same server through another URL: the same project, the same reviews, nothing twice
        other_url = _pull(warehouse, _localhost(server.url))
        other_push = _push(warehouse, _localhost(server.url), title, "--limit", "10", "1")  # version 1, as first
        late_one = _post(r2, late["id"], _result("Answer 2"))
        through_localhost = _pull(warehouse, _localhost(server.url))
        through_ip = _pull(warehouse, server.url)
        # the skip undone, and the swapped texts put back: the first counts again, the second task never does
        assert r1.patch(skip, json={"was_cancelled": False}).status_code == 200
        with server.admin() as admin:
            assert admin.patch(f"/api/tasks/{edited['id']}", json={"data": edited["data"]}).status_code == 200
        restored = _pull(warehouse, server.url)
        for c in (r1, r2, r3):
            c.close()
    return SimpleNamespace(**locals())


def _review(warehouse: str, annotation_id: int) -> dict | None:
    """The warehouse's row of an annotation (of the scenario's one project), or None."""
    with Warehouse(warehouse, read_only=True) as wh:
        (key,) = wh.query("SELECT project_key FROM review_projects")[0]
        return wh.reviews.human_reviews_of(key).get(annotation_id)


def _outcome(warehouse: str, pair_id: str) -> tuple | None:
    with Warehouse(warehouse, read_only=True) as wh:
        rows = wh.query("SELECT outcome, reviewers FROM review_outcomes WHERE pair_id = ?", [pair_id])
    return rows[0] if rows else None


def test_the_baseline_pull_counts_every_reviewer_s_annotation(tampered):
    b = tampered.baseline
    assert b["new"] == len(tampered.tasks) + 1 and b["rejected"] == {} and b["withdrawn"] == {}
    assert b["counted_as_poster"] == 0 and b["tasks_texts_changed"] == 0


def test_edited_task_texts_reject_its_annotations_and_withdraw_its_reviews_for_good(tampered):
    t, w = tampered, tampered.warehouse
    (project,) = t.pull["projects"]
    assert t.pull["tasks_texts_changed"] == 1 and project["rejected"]["task_texts_changed"] == 2  # before, after
    assert _review(w, t.after_swap["id"]) is None  # the reviewer picked what Label Studio showed: never landed
    earlier = _review(w, t.first[t.edited["id"]]["id"])
    assert earlier["withdrawn_reason"] == "task_texts_changed" and earlier["withdrawn_at"] is not None
    assert _outcome(w, t.edited["data"]["pair_id"]) is None
    # the texts put back: which annotation was made on which texts cannot be told, so none counts again
    assert t.restored["tasks_texts_changed"] == 1 and _review(w, t.after_swap["id"]) is None
    assert _outcome(w, t.edited["data"]["pair_id"]) is None


def test_a_task_or_an_annotation_deleted_in_label_studio_withdraws_its_review(tampered):
    t, w = tampered, tampered.warehouse
    assert t.pull["tasks_deleted"] == 1
    assert t.pull["withdrawn"]["task_deleted"] == 1 and t.pull["withdrawn"]["annotation_deleted"] == 1
    for task, reason in ((t.deleted, "task_deleted"), (t.lost, "annotation_deleted")):
        review = _review(w, t.first[task["id"]]["id"])
        assert review["withdrawn_reason"] == reason and review["revision"] == 2
        assert _outcome(w, task["data"]["pair_id"]) is None
    with Warehouse(w, read_only=True) as wh:
        history = wh.query("SELECT annotation_id, withdrawn_at FROM human_review_history WHERE annotation_id = ?",
                           [t.first[t.deleted["id"]]["id"]])
    assert history == [(t.first[t.deleted["id"]]["id"], None)]  # its counted state kept as history
    # the outcome and the next version change
    assert t.inputs_after != t.inputs_before and t.v_after["new_version"]
    assert t.v_after["stats"]["review"]["kept_reviewed"] < t.v_before["stats"]["review"]["kept_reviewed"]


def test_the_reviewer_is_who_posted_not_the_completed_by_they_wrote(tampered):
    t, w = tampered, tampered.warehouse
    forged = _review(w, t.claimed["id"])
    assert forged["annotator_id"] == t.ids["r2"] and forged["claimed_annotator_id"] == t.ids["r1"]
    assert t.pull["counted_as_poster"] == 1
    # r1 said Answer 1, r2 (twice, once as "r1") Answer 2: two reviewers, one vote each, no majority
    assert _outcome(w, t.forged["data"]["pair_id"]) == ("split", 2)


def test_malformed_annotations_and_a_deleted_user_are_rejected_one_by_one_and_the_pull_goes_on(tampered):
    t, w = tampered, tampered.warehouse
    (project,) = t.pull["projects"]
    assert project["rejected"]["annotation_malformed"] == 3  # two stored despite Label Studio's 500, one with 201
    assert t.shapes[0] is None and t.shapes[1] is None and t.shapes[2] is not None
    shown = {(r["reason"], r["ls_task_id"]) for r in project["rejected_annotations"]}
    assert ("annotation_malformed", t.malformed["id"]) in shown
    # the departed reviewer's annotation: Label Studio no longer knows who posted it
    assert project["rejected"]["annotator_unknown"] == 1
    assert _review(w, t.by_r3["id"])["withdrawn_reason"] == "annotator_unknown"
    assert _outcome(w, t.departed["data"]["pair_id"]) == (_review(w, t.first[t.departed["id"]]["id"])["side"], 1)
    assert project["rejected"]["skipped"] == 1 and t.pull["withdrawn"]["skipped"] == 1
    assert t.pull["updated"] == 0 and t.pull["new"] == 2  # the forged task's poster's two


def test_a_withdrawn_review_valid_again_is_reinstated(tampered):
    t, w = tampered, tampered.warehouse
    assert t.restored["reinstated"] == 1 and t.restored["new"] == 0
    review = _review(w, t.first[t.skipped["id"]]["id"])
    assert review["withdrawn_at"] is None and review["revision"] == 3
    assert _outcome(w, t.skipped["data"]["pair_id"]) is not None


def test_one_server_reached_by_two_urls_is_one_server(tampered):
    t = tampered
    other = t.other_url
    assert other["server_id"] == t.pull["server_id"] and other["server_id"].startswith("org ")
    assert (other["new"], other["updated"], other["withdrawn"], other["reinstated"]) == (0, 0, {}, 0)
    assert other["unchanged"] == t.pull["unchanged"] + t.pull["new"] + t.pull["updated"]
    assert t.other_push["project_id"] == t.pushed["project_id"] and not t.other_push["project_created"]
    assert t.other_push["tasks_pushed"] == 0 and t.other_push["already_in_project"] == 10
    assert t.through_localhost["new"] == 1 and t.through_ip["new"] == 0  # one annotation, once
    with Warehouse(t.warehouse, read_only=True) as wh:
        assert wh.query("SELECT count(*) FROM review_projects") == [(1,)]
        assert wh.query("SELECT count(*) FROM human_reviews WHERE annotation_id = ?", [t.late_one["id"]]) == [(1,)]
        servers = {s for (s,) in wh.query("SELECT DISTINCT server FROM human_reviews")}
    assert servers == {t.pull["server_id"]}


def test_a_pull_reads_a_slow_label_studio_with_the_warehouse_closed(judged, tmp_path, monkeypatch):
    """While the pull waits on Label Studio, another process opens the warehouse for writing (DuckDB allows one
    writer and no reader beside it: a pull holding it open would lock it out)."""
    server = judged.server
    with _scenario(judged, tmp_path) as warehouse:
        _slow_pull(server, warehouse, monkeypatch)


def _slow_pull(server, warehouse: str, monkeypatch) -> None:
    pushed = _push(warehouse, server.url, "trust slow", "--limit", "3")
    assert pushed["tasks_pushed"] == 3
    opened: list[int] = []
    listing = LabelStudio.tasks

    def slow_tasks(self, project_id):
        probe = subprocess.run([sys.executable, "-c", "import sys, duckdb; duckdb.connect(sys.argv[1]).close()",
                                warehouse], capture_output=True, text=True, timeout=60)
        opened.append(probe.returncode)
        assert probe.returncode == 0, probe.stderr[-400:]
        yield from listing(self, project_id)

    monkeypatch.setattr(LabelStudio, "tasks", slow_tasks)
    pulled = _pull(warehouse, server.url)
    assert opened == [0] and pulled["projects"][0]["tasks"] == 3

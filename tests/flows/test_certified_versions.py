"""Certified versions (`target_agreement`) on Prefect's ephemeral API, over clean synthetic pairs judged by the
stand-in in both orders: the guarantee in the stats, the card, `build-version --json`, `versions` and `status`
(one figure, read everywhere), the one-line refusal of a target the labels cannot certify, reviewers' decided
pairs kept with their choice, and versions without a target stored as before."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from common.numbers import count, percent
from curator.cli import app
from flows.versions import build_version
from tasks.curate.bias import MARKDOWN_RE2
from tasks.curate.certification import NotCertifiedError, certify_pool
from tasks.curate.confidence import pool_confidences
from tasks.curate.label_roles import spent_risk
from tasks.curate.policy import load_policy
from tasks.curate.pool import JudgedPool
from tasks.curate.select import certifiable
from tasks.ingest.sources import known_facts
from tasks.publish.quality_card import RISK_COVERAGE_PLOT
from tasks.review.certification import certification_labels
from tasks.review.majority import resolve
from tasks.review.overrides import PoolReviews
from tests.flows.conftest import ingest_clean_pairs
from tests.tasks.curate.test_policy import STORED_BEFORE_CERTIFICATION
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

ROWS = 1000


@pytest.fixture(scope="module")
def judged_once(tmp_path_factory):
    from flows.judge import judge
    from testing.genrm_standin import StandinConfig, StandinProcess

    folder = tmp_path_factory.mktemp("certified")
    warehouse = folder / "warehouse.duckdb"
    ingest_clean_pairs(folder, warehouse, ROWS, seed=41)
    with StandinProcess(StandinConfig(latency_mean=0.002, capacity=128)) as server:
        judge(endpoints=[server.url], strategy="swap", warehouse=str(warehouse))
    return warehouse


@pytest.fixture
def judged(judged_once, tmp_path):
    """A copy of the judged warehouse for one test: its certification attempts are its own (every attempt on the
    same labels spends part of the risk)."""
    copy = tmp_path / "judged.duckdb"
    shutil.copyfile(judged_once, copy)
    return copy


def _cli(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.exit_code, json.loads(result.stdout.strip().splitlines()[-1])


def _accepted_anew(warehouse: Path, policy_values: dict, attempt: int = 1) -> set[str]:
    """The pairs a certification accepts, computed again from the warehouse with the core's functions alone."""
    policy = load_policy(None, policy_values)
    with Warehouse(warehouse, read_only=True) as wh:
        config_id = wh.versions.latest_judge_config_id()
        pool = JudgedPool.from_arrow(*wh.versions.judged_pool(config_id, MARKDOWN_RE2))
        reviews = PoolReviews.align(pool.pair_id, wh.reviews.review_outcomes(), wh.reviews.review_selections())
    c = pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)
    labels = certification_labels(pool, c, reviews, policy, known_facts())
    found = certify_pool(pool, c, labels, policy.target_agreement, spent_risk(policy.risk, attempt),
                         certifiable(pool, c, policy))
    return set(pool.pair_id[found.accepted].tolist())


def test_a_certified_version_states_its_guarantee_with_one_figure_everywhere(judged, tmp_path):
    _, summary = _cli("build-version", "sure", "--target-agreement", "0.9", "--risk", "0.05",
                      "--warehouse", str(judged), "--json")
    stats, cert = summary["stats"], summary["stats"]["certification"]
    assert cert["certified"] and cert["target_agreement"] == 0.9 and cert["risk"] == 0.05
    assert cert["populations"]["helpsteer3"]["agreement_bound"] >= 0.9 and cert["estimated_agreement"] >= 0.9
    assert cert["labels"] == "source" and cert["scored_by"] == "p_correct" and cert["not_covered"] == {}
    assert cert["bound"].startswith("Clopper-Pearson") and 0 < cert["coverage"] <= 1
    assert cert["calibration_pairs"] > 100 and cert["judged"] == stats["pairs_judged"]
    # the version holds exactly the pairs the certification accepts (no review, no label filter here), the rest
    # dropped as not certified; the heuristic cut-offs kept out of it
    with Warehouse(judged, read_only=True) as wh:
        rows = wh.versions.version_rows("sure", summary["version"])
        meta = wh.versions.version_meta("sure", summary["version"])
    assert {r["pair_id"] for r in rows} == _accepted_anew(judged, {"target_agreement": 0.9, "risk": 0.05})
    # each row carries the score that certified it, at least its population's threshold, apart from p_correct
    threshold = cert["populations"]["helpsteer3"]["threshold"]
    assert all(r["certification_score"] is not None and (threshold is None or r["certification_score"] >= threshold)
               for r in rows)
    assert cert["score"]["leans_on"] is None and "log length ratio" in "; ".join(cert["score"]["features"])
    assert summary["rows"] == cert["accepted"] == cert["kept_certified"] and cert["kept_by_reviewers"] == 0
    assert stats["dropped"] == ({"not_certified": cert["judged"] - cert["accepted"]}
                                if cert["accepted"] < cert["judged"] else {})
    assert meta["policy"]["min_abs_margin"] == 0.0 and meta["policy"]["target_agreement"] == 0.9
    assert meta["stats"]["certification"] == cert
    # JSON holds no -inf or NaN a strict reader refuses
    json.loads(json.dumps(meta["stats"]["certification"]), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))

    # the card states the guarantee first (after the SYNTHETIC rows' and the SIMULATED notices), from the same figures
    from flows.publish import publish

    folder = Path(publish("sure", to=str(tmp_path), warehouse=str(judged))["target"])
    card = (folder / "README.md").read_text()
    body = card.split("\n---\n", 1)[1]
    paragraphs = [p for p in body.split("\n\n") if p.strip()]
    assert paragraphs[1].startswith("> **SYNTHETIC ROWS.**") and paragraphs[2].startswith("> **SIMULATED VERDICTS.**")
    assert paragraphs[3] == (
        f"**At least {percent(0.9)} of the {count(summary['rows'])} certified pairs ({count(summary['rows'])} from "
        "helpsteer3) have chosen answers that agree with human preference, with 95% confidence** (certified on "
        f"{count(cert['calibration_pairs'])} held-out labelled pairs from each source's own clear labels, each "
        f"source's pairs certified on its own; attempt 1 on these labels, tested at risk {cert['risk_spent']:.4g} so "
        "that every attempt together stays within 0.05). The held-out pairs the certified thresholds accept agree "
        f"{percent(cert['estimated_agreement'])} of the time: an estimate, not a bound.")
    section = card.split("## Certified agreement", 1)[1].split("\n## ", 1)[0]
    assert "| the score (each row's `certification_score`, not the judge's `p_correct`) reads |" in section
    dpo = pq.read_table(next((folder / "data" / "dpo").glob("*.parquet")))
    assert "certification_score" in dpo.column_names and None not in dpo.column("certification_score").to_pylist()
    assert ("| estimated agreement of the accepted held-out pairs (an estimate, not a bound) | "
            f"{percent(cert['estimated_agreement'])} |") in section
    assert "Clopper-Pearson (exact binomial), one-sided" in section
    assert f"{count(cert['accepted'])} / {count(cert['judged'])} ({percent(cert['coverage'])})" in section
    assert "(certified) |" in section and "| source helpsteer3 | 100.0% | 100.0% |" in section
    assert "apply after the certification" in section
    mix = cert["population"]
    assert mix["labelled"] < mix["judged"] and f"{percent(mix['labelled_share'])} of the judged pool" in section
    # the risk-coverage plot lies beside the card, linked from it, its dots the table's rows
    assert f"]({RISK_COVERAGE_PLOT})" in section
    svg = ET.fromstring((folder / RISK_COVERAGE_PLOT).read_text())
    dots = [c.find("{http://www.w3.org/2000/svg}title").text for c in svg.iter("{http://www.w3.org/2000/svg}circle")]
    table = section.split("| threshold | coverage of the judged pool |", 1)[1].strip().splitlines()[2:]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table]
    assert dots == [f"{c[0]}: coverage {c[1]}, certified agreement {c[4]}" for c in cells] and len(dots) >= 2

    # versions --json and status read the same figure
    listed = CliRunner().invoke(app, ["versions", "sure", "--warehouse", str(judged), "--json"])
    figures = json.loads(listed.stdout)[-1]["figures"]["certification"]
    assert figures == {k: cert[k] for k in ("target_agreement", "risk", "labels", "estimated_agreement",
                                            "not_covered", "kept_not_covered", "coverage")}
    status = CliRunner().invoke(app, ["status", "--warehouse", str(judged)])
    assert status.exit_code == 0, status.output
    table = status.stdout.split("certified versions", 1)[1]
    line = next(line for line in table.splitlines() if line.startswith("sure "))
    assert line.split() == ["sure", str(summary["version"]), "90.0%", "95%", percent(cert["estimated_agreement"]),
                            percent(cert["coverage"]), "source", "0", "0"]


def test_a_stricter_target_keeps_fewer_pairs_and_a_reached_one_is_unchanged(judged, judged_once, tmp_path):
    loose = build_version("ladder", policy_overrides={"target_agreement": 0.9}, warehouse=str(judged))
    other = tmp_path / "other.duckdb"  # the stricter target as a first attempt on the same labels
    shutil.copyfile(judged_once, other)
    strict = build_version("ladder", policy_overrides={"target_agreement": 0.95}, warehouse=str(other))
    a, b = loose["stats"]["certification"], strict["stats"]["certification"]
    assert a["attempt"] == b["attempt"] == 1 and a["risk_spent"] == b["risk_spent"] == spent_risk(0.05, 1)
    assert b["coverage"] < a["coverage"] and b["estimated_agreement"] >= 0.95 and strict["rows"] < loose["rows"]
    again = build_version("ladder", policy_overrides={"target_agreement": 0.95}, warehouse=str(other))
    assert not again["new_version"] and again["version"] == strict["version"]


def test_every_attempt_on_the_same_labels_spends_its_share_of_the_risk(judged):
    """A second target tried on the same labels is attempt 2, tested at its share of the risk (6 / (π² 4) of it),
    and the card counts the attempts; the first attempt made again is still attempt 1 and changes nothing."""
    first = build_version("tries", policy_overrides={"target_agreement": 0.85}, warehouse=str(judged))
    second = build_version("tries", policy_overrides={"target_agreement": 0.8}, warehouse=str(judged))
    a, b = first["stats"]["certification"], second["stats"]["certification"]
    assert (a["attempt"], b["attempt"]) == (1, 2) and b["risk_spent"] == pytest.approx(0.05 * 6 / (math.pi ** 2 * 4))
    assert b["attempts"] == 2 and b["risk"] == 0.05
    with pytest.raises(NotCertifiedError):  # a third, harder target: refused, and still counted
        build_version("tries", policy_overrides={"target_agreement": 0.97}, warehouse=str(judged))
    with Warehouse(judged, read_only=True) as wh:
        attempts = wh.certification.attempts(wh.versions.latest_judge_config_id())
    assert [(x["attempt"], x["target"], x["certified"]) for x in attempts] == [(1, 0.85, True), (2, 0.8, True),
                                                                                (3, 0.97, False)]
    assert sum(x["risk_spent"] for x in attempts) < 0.05


def test_a_build_stopped_after_its_attempt_is_counted_once_and_the_rerun_writes_it(judged, monkeypatch):
    """A build interrupted between recording its attempt and writing the version (Ctrl-C there): the attempt stays
    recorded, nothing is written, and the rerun is the same attempt (1), not a second one, and writes the version."""
    from warehouse.versions import VersionStore

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as mp:
        mp.setattr(VersionStore, "write_version", interrupted)
        with pytest.raises(KeyboardInterrupt):
            build_version("stopped", policy_overrides={"target_agreement": 0.85}, warehouse=str(judged))
    with Warehouse(judged, read_only=True) as wh:
        config_id = wh.versions.latest_judge_config_id()
        assert [(x["attempt"], x["certified"]) for x in wh.certification.attempts(config_id)] == [(1, True)]
        assert wh.versions.latest_version("stopped") is None
    again = build_version("stopped", policy_overrides={"target_agreement": 0.85}, warehouse=str(judged))
    cert = again["stats"]["certification"]
    assert (again["version"], cert["attempt"], cert["attempts"]) == (1, 1, 1)
    assert cert["risk_spent"] == pytest.approx(0.05 * 6 / math.pi ** 2)


def test_an_unreachable_target_is_refused_in_one_line_and_writes_nothing(judged, judged_once, tmp_path):
    curate = Path(sys.executable).with_name("curate")
    done = subprocess.run([str(curate), "build-version", "too-sure", "--target-agreement", "0.99",
                           "--warehouse", str(judged)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 2 and "Traceback" not in done.stderr, done.stderr
    assert re.fullmatch(r"error: no selection certifies 99\.0% agreement with human preference at risk 0\.05 on "
                        r"[\d,]+ held-out labelled pairs \(from the sources' clear labels\): at most \d+\.\d% could be "
                        r"certified at that risk \(the bound at the strictest thresholds these pairs can test\); "
                        r"(about [\d,]+ more labelled pairs would be needed|even there the judge disagrees .* more "
                        r"labelled pairs would test stricter thresholds)", lines[0]), lines[0]
    assert lines[1].startswith("hint: lower --target-agreement or raise --risk")
    # the flow says the same, and nothing was written
    with pytest.raises(NotCertifiedError) as caught:
        build_version("too-sure", policy_overrides={"target_agreement": 0.99}, warehouse=str(judged))
    assert f"error: {caught.value}" == lines[0]
    with Warehouse(judged, read_only=True) as wh:
        assert wh.versions.versions("too-sure") == []
    # a target reachable with more labels says how many (a first attempt on these labels)
    judged = tmp_path / "first.duckdb"
    shutil.copyfile(judged_once, judged)
    with pytest.raises(NotCertifiedError, match=r"at most 9\d\.\d% could be certified at that risk .*(about [\d,]+ more labelled pairs "
                       r"would be needed|more labelled pairs would test stricter thresholds)"):
        build_version("too-sure", policy_overrides={"target_agreement": 0.96}, warehouse=str(judged))


@pytest.mark.parametrize("args,said", [
    (["--target-agreement", "0.9", "--min-abs-margin", "1.5"], "min_abs_margin = 1.5 cannot be set beside it"),
    (["--target-agreement", "0.9", "--min-p-correct", "0.8"], "min_p_correct = 0.8 cannot be set beside it"),
    (["--risk", "0.1"], "risk only applies with target_agreement"),
    (["--target-agreement", "1"], "target_agreement = 1.0: input should be less than 1 (allowed: 0.5 < x < 1)"),
])
def test_refused_combinations_of_keys(judged, tmp_path, args, said):
    result = CliRunner().invoke(app, ["build-version", "combo", *args, "--warehouse", str(judged)])
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output, result.output
    policy = tmp_path / "p.toml"
    policy.write_text("min_confidence = 0.3\n")  # a file's cut-off beside a flag's target: refused alike
    result = CliRunner().invoke(app, ["build-version", "combo", "--policy", str(policy), "--target-agreement", "0.9",
                                      "--warehouse", str(judged)])
    assert result.exit_code == 2 and "min_confidence = 0.3 cannot be set beside it" in result.output
    with Warehouse(judged, read_only=True) as wh:
        assert wh.versions.versions("combo") == []


SERVER = "org 1 created 2026-01-01T00:00:00.000001Z"


def _land_reviews(warehouse: Path, decisions: dict[str, str], selection: str, project: int = 1) -> None:
    """Reviews as a pull lands them: a project, its tasks and selection, one reviewer's choice per pair."""
    key = f"{SERVER}#{project}"
    pairs = list(decisions)
    n = len(pairs)
    with Warehouse(warehouse) as wh:
        config_id = wh.versions.latest_judge_config_id()
        wh.reviews.save_review_project(key, "http://ls", project, f"review {project}", "iface", SERVER)
        selections = pa.table({"pair_id": pairs, "selection": [selection] * n, "name": ["d"] * n, "version": [1] * n,
                               "judge_config_id": [config_id] * n, "judge_side": ["a"] * n, "judge_margin": [1.0] * n,
                               "p_correct": [0.6] * n, "rank": list(range(n)), "seed": [None] * n})
        wh.reviews.plan_review(key, pa.table({"pair_id": pairs, "answer_1": ["a"] * n}), selections,
                               {"name": "d", "version": 1, "selection": selection, "limit": n, "seed": 0,
                                "selected": n, "new_tasks": n})
        wh.reviews.record_pushed_tasks(key, [(p, 1000 * project + i, f"d{i}") for i, p in enumerate(pairs)])
        at = datetime(2026, 1, 2)
        wh.reviews.land_reviews([
            {"project_key": key, "annotation_id": 1000 * project + i, "server": SERVER, "ls_task_id": 1000 * project + i,
             "pair_id": p, "choice": {"a": "answer_1", "b": "answer_2"}.get(side, side), "side": side,
             "annotator_id": 7, "annotator": "r7@x", "created_at": at, "updated_at": at, "lead_time_s": 10.0,
             "revision": 1} for i, (p, side) in enumerate(decisions.items())], [], resolve)


def test_pairs_reviewers_decided_are_kept_with_their_choice(judged, tmp_path):
    warehouse = tmp_path / "reviewed.duckdb"
    shutil.copy(judged, warehouse)
    first = build_version("reviewed", policy_overrides={"target_agreement": 0.95}, warehouse=str(warehouse))
    with Warehouse(warehouse, read_only=True) as wh:
        kept = {r["pair_id"]: r["chosen_side"] for r in wh.versions.version_rows("reviewed", first["version"])}
        pool = wh.query("SELECT pair_id FROM candidate_pairs ORDER BY pair_id")
    dropped = [p for (p,) in pool if p not in kept][:4]
    certified = sorted(kept)[:2]
    # reviewers decide uncertified pairs (for B, whatever the judge said), call a certified one a tie
    decisions = {dropped[0]: "b", dropped[1]: "b", dropped[2]: "a", dropped[3]: "b", certified[0]: "tie",
                 certified[1]: "b"}
    _land_reviews(warehouse, decisions, "borderline")
    after = build_version("reviewed", policy_overrides={"target_agreement": 0.95}, warehouse=str(warehouse))
    assert after["new_version"]
    with Warehouse(warehouse, read_only=True) as wh:
        rows = {r["pair_id"]: r["chosen_side"] for r in wh.versions.version_rows("reviewed", after["version"])}
    for pair, side in decisions.items():
        assert (rows.get(pair) == side) if side != "tie" else pair not in rows, (pair, side, rows.get(pair))
    cert = after["stats"]["certification"]
    assert after["stats"]["dropped"]["reviewed_tie"] == 1 and cert["labels"] == "source"
    accepted = _accepted_anew(warehouse, {"target_agreement": 0.95})
    assert cert["kept_by_reviewers"] == len([p for p in decisions if decisions[p] != "tie" and p not in accepted]) >= 1
    assert cert["kept_certified"] + cert["kept_by_reviewers"] == after["rows"]
    # the exported rows say which the reviewers decided, and claim no judge certainty for those
    from flows.publish import publish

    folder = Path(publish("reviewed", to=str(tmp_path / "out"), warehouse=str(warehouse))["target"])
    for config in ("dpo", "rm", "helpsteer3"):
        exported = pa.concat_tables([pq.read_table(f) for f in sorted((folder / "data" / config).glob("*.parquet"))])
        by_pair = {r["pair_id"]: r for r in exported.to_pylist()}
        assert len(by_pair) == after["rows"] and exported.schema.names[-4:] == ["reviewed", "reviewers_choice",
                                                                                  "reviewers", "certification_score"]
        for pair, r in by_pair.items():
            side = decisions.get(pair)
            if side in ("a", "b"):
                assert (r["reviewed"], r["reviewers_choice"], r["reviewers"]) == (True, side, 1), (config, pair)
                assert r["confidence"] is None and r["p_correct"] is None
            else:
                assert (r["reviewed"], r["reviewers_choice"], r["reviewers"]) == (False, None, 0), (config, pair)
                assert r["confidence"] is not None and r["p_correct"] is not None
    card = (folder / "README.md").read_text()
    assert "Rows that reviewers decided say so" in card
    # the version before the reviews landed has no such rows, and its files no such columns
    first_folder = Path(publish("reviewed", version=first["version"], to=str(tmp_path / "out"),
                                warehouse=str(warehouse))["target"])
    assert "reviewed" not in pq.read_schema(next((first_folder / "data" / "dpo").glob("*.parquet"))).names
    assert "Rows that reviewers decided say so" not in (first_folder / "README.md").read_text()
    # with review overrides off, a reviewed pair is one like any other: certified or dropped as not certified
    off = build_version("reviewed-off", policy_overrides={"target_agreement": 0.95, "review_overrides": False},
                        warehouse=str(warehouse))
    assert off["stats"]["certification"]["kept_by_reviewers"] == 0


def test_a_review_audit_certifies_once_it_has_enough_decided_pairs(judged, tmp_path):
    warehouse = tmp_path / "audited.duckdb"
    shutil.copy(judged, warehouse)
    with Warehouse(warehouse, read_only=True) as wh:
        pairs = [p for (p,) in wh.query("SELECT pair_id FROM candidate_pairs ORDER BY pair_id")]
    audited = pairs[::40][:12]
    _land_reviews(warehouse, {p: "a" if i % 3 else "tie" for i, p in enumerate(audited)}, "audit")  # 8 decided
    # too few decided audit pairs for the minimum: the sources' labels certify
    sources = build_version("audited", policy_overrides={"target_agreement": 0.9, "min_audit_reviews": 9},
                            warehouse=str(warehouse))
    assert sources["stats"]["certification"]["labels"] == "source"
    # enough pairs, but one reviewer decided them all: one person never replaces every source label
    one = build_version("audited-one", policy_overrides={"target_agreement": 0.9, "min_audit_reviews": 8},
                        warehouse=str(warehouse))
    assert one["stats"]["certification"]["labels"] == "source"
    # enough, from as few reviewers as the policy allows: the audit's 8 decided pairs alone calibrate, far too few
    # for 90%, and the refusal says which labels
    with pytest.raises(NotCertifiedError, match=r"on 8 held-out labelled pairs \(from a review audit\)"):
        build_version("audited", policy_overrides={"target_agreement": 0.9, "min_audit_reviews": 8,
                                                   "min_audit_reviewers": 1}, warehouse=str(warehouse))


def test_versions_without_a_target_are_stored_as_before(judged):
    plain = build_version("plain", warehouse=str(judged))
    with Warehouse(judged, read_only=True) as wh:
        stored = json.loads(wh.query("SELECT policy FROM dataset_versions WHERE name = 'plain'")[0][0])
        meta = wh.versions.version_meta("plain")
    assert list(stored) == STORED_BEFORE_CERTIFICATION and "certification" not in meta["stats"]
    assert "not_certified" not in plain["stats"]["dropped"]
    again = build_version("plain", warehouse=str(judged))
    assert not again["new_version"] and again["note"].startswith("unchanged: same inputs and policy")
    # a target over the same pairs promises something else: another content, even where it keeps the same rows
    from tasks.curate.exports import export_options
    from tasks.curate.policy import promised
    from tasks.curate.select import content_hash

    target = load_policy(None, {"target_agreement": 0.9})
    assert content_hash(["x"], {**export_options(target.model_dump()), **promised(target)}) != content_hash(["x"])
    assert content_hash(["x"], {**export_options(stored), **promised(load_policy(None))}) == content_hash(["x"])
    assert np.isfinite(plain["stats"]["pairs_judged"])


def test_the_pipeline_records_an_unreachable_target_and_goes_on(judged, tmp_path):
    from flows.pipeline import curate_pipeline

    warehouse = tmp_path / "night.duckdb"
    shutil.copy(judged, warehouse)
    policy = tmp_path / "certified.toml"
    policy.write_text("[policy]\ntarget_agreement = 0.99\n")
    summary = curate_pipeline(skip=["ingest", "judge", "publish"], policy_path=str(policy), dataset="night",
                              warehouse=str(warehouse))
    (failure,) = summary["failed"]
    assert failure["stage"] == "version" and failure["error"].startswith("no selection certifies 99.0% agreement")
    assert summary["version"] is None
    with Warehouse(warehouse, read_only=True) as wh:
        assert wh.versions.versions("night") == []


def test_review_selections_draw_from_the_whole_judged_pool(judged, tmp_path):
    from tasks.review.select import NotCertifiedVersion, ranked
    from tasks.review.sync import plan, version_candidates

    warehouse = tmp_path / "picked.duckdb"
    shutil.copy(judged, warehouse)
    certified = build_version("picked", policy_overrides={"target_agreement": 0.95}, warehouse=str(warehouse))
    plain = build_version("picked-plain", warehouse=str(warehouse))  # the default cut-offs drop low margins
    accepted = _accepted_anew(warehouse, {"target_agreement": 0.95})
    key = f"{SERVER}#5"
    with Warehouse(warehouse) as wh:
        kept = {r["pair_id"] for r in wh.versions.version_rows("picked", certified["version"])}
        kept_plain = {r["pair_id"] for r in wh.versions.version_rows("picked-plain", plain["version"])}
        judged_pairs = {p for (p,) in wh.query("SELECT DISTINCT pair_id FROM judgments WHERE status = 'ok'")}
        wh.reviews.save_review_project(key, "http://ls", 5, "picked review", "iface", SERVER)
        candidates, config = version_candidates(wh, "picked", certified["version"], "uncertified")
        chosen = plan(wh.reviews, key, "picked", certified["version"], "uncertified", 10, candidates, config)
        selected = [p for (p,) in wh.query("SELECT pair_id FROM review_selections WHERE selection = 'uncertified' "
                                           "ORDER BY rank")]
        borderline, _ = version_candidates(wh, "picked-plain", plain["version"], "borderline")
        with pytest.raises(NotCertifiedVersion, match="picked-plain v1 was built without target_agreement"):
            version_candidates(wh, "picked-plain", plain["version"], "uncertified")
    # uncertified: judged pairs the certification, computed again, did not accept, the nearest the threshold first
    assert chosen["selected"] == chosen["new_tasks"] == 10 == len(selected)
    assert not set(selected) & kept and not set(selected) & accepted and set(selected) <= judged_pairs
    score = dict(zip(candidates.pair_id, candidates.certification_score))
    assert [score[p] for p in selected] == sorted((score[p] for p in selected), reverse=True)
    below = [s for p, s in score.items() if p not in accepted and not np.isnan(s)]
    assert score[selected[-1]] >= sorted(below, reverse=True)[9]
    # borderline of a version: every judged pair a candidate, and the least sure of them are mostly ones it dropped
    assert set(borderline.pair_id) == judged_pairs and len(judged_pairs) > len(kept_plain)
    least_sure = set(borderline.pair_id[ranked(borderline, "borderline")[:50]])
    assert least_sure - kept_plain


def test_status_counts_pairs_over_budget_apart_and_shows_the_reviews(judged, tmp_path):
    from tasks.review.agreement import agreement_text

    warehouse = tmp_path / "status.duckdb"
    shutil.copy(judged, warehouse)
    with Warehouse(warehouse) as wh:
        pairs = [p for (p,) in wh.query("SELECT pair_id FROM pairs_for_curation ORDER BY pair_id")]
        over, too_long, pending, exhausted = pairs[:7], pairs[7:10], pairs[10:15], pairs[15:19]
        # as the judge records them: over the input budget (never sent), too long for the server's context,
        # failures a run sends again, and answers without a verdict up to the attempt limit (3)
        for chosen, reason, attempts in ((over, "over_budget", 0), (too_long, "too_long", 1), (pending, "timeout", 0),
                                         (exhausted, "no_json", 3)):
            wh.con.execute("UPDATE judgments SET status = 'failed', failure_reason = ?, margin_a = NULL, attempts = ? "
                           f"WHERE pair_id IN ({', '.join('?' * len(chosen))})", [reason, attempts, *chosen])
    audit = {p: ("a" if i % 4 else "b") for i, p in enumerate(pairs[100:140])}
    _land_reviews(warehouse, audit, "audit")
    result = CliRunner().invoke(app, ["status", "--warehouse", str(warehouse), "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    (judging,) = status["judging"]
    assert (judging["pairs_over_budget"], judging["pairs_pending"], judging["pairs_exhausted"]) == (
        len(over) + len(too_long), len(pending), len(exhausted))
    assert judging["pairs_judged"] == len(pairs) - len(over) - len(too_long) - len(pending) - len(exhausted)
    (review,) = status["reviews"]
    assert (review["pushed"], review["annotated"], review["audit_decided"]) == (40, 40, 40)
    # the helper's judge side is A for every pair: the judge agrees wherever the reviewer chose A
    assert review["audit_judge_agrees"] == sum(side == "a" for side in audit.values())

    table = CliRunner().invoke(app, ["status", "--warehouse", str(warehouse)]).stdout
    judging_table = table.split("\njudging\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert judging_table[0].endswith("pairs judged  pairs pending  at the attempt limit  over budget, never sent  "
                                     "left at the reward model")
    line = next(row for row in judging_table if row.startswith(judging["judge_config_id"]))
    assert line.split()[-5:] == [count(judging["pairs_judged"]), str(len(pending)), str(len(exhausted)),
                                 str(len(over) + len(too_long)), "0"]  # no judge ladder here
    header, row = table.split("\nreviews\n", 1)[1].splitlines()[:2]
    assert header.split("  ")[0] == "review project" and header.endswith("judge agrees, audit (unbiased)")
    assert row.startswith("review 1 ") and row.endswith(agreement_text(review["audit_judge_agrees"], 40))
    assert row.split()[2:7] == ["40", "0", "40", "1", "0"]  # pushed, not yet pushed, annotated, reviewers, withdrawn

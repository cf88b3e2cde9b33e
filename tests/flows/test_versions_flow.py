"""`build_version` on Prefect's ephemeral API over pairs judged by the stand-in."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from common.numbers import rate
from curator.cli import app
from flows.ingest import ingest
from flows.judge import judge
from flows.versions import EmptyVersionError, build_version
from tasks.curate.figures import token_lengths
from tasks.curate.policy import PolicyError
from tasks.ingest.normalize import estimate_text_tokens
from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    path = tmp_path_factory.mktemp("versions") / "warehouse.duckdb"
    data = path.parent / "hs.jsonl"
    write_synth(data, "helpsteer3", 120, seed=31, pair_bytes=500, bad_rate=0.0)
    ingest("helpsteer3", path=str(data), warehouse=str(path))
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        judge(endpoints=[server.url], strategy="swap", warehouse=str(path))
    return path


def test_versions_are_deterministic_immutable_and_chained(judged):
    first = build_version("helpful", warehouse=str(judged))
    assert first["new_version"] and first["version"] == 1 and first["rows"] > 0 and first["created"]
    again = build_version("helpful", warehouse=str(judged))
    assert not again["new_version"] and again["version"] == 1 and again["content_hash"] == first["content_hash"]
    assert "unchanged" in again["note"]
    stricter = build_version("helpful", policy_overrides={"min_abs_margin": 2.0}, warehouse=str(judged))
    assert stricter["version"] == 2 and stricter["parent_version"] == 1 and stricter["rows"] < first["rows"]
    with Warehouse(judged, read_only=True) as wh:
        v1 = wh.versions.version_rows("helpful", 1)
        listed = wh.versions.versions("helpful")
    assert len(v1) == first["rows"] and [v["version"] for v in listed] == [1, 2]
    for row in v1:
        assert row["margin"] >= 1.0 and row["orders_agree"] is True and row["chosen"] != row["rejected"]
        assert row["prompt"][-1]["role"] == "user" and row["split"] in ("train", "validation")
    # the token lengths are the estimate of the version's own texts, each message with its template tokens
    def tokens(text):
        return estimate_text_tokens(text) + 8

    expected = token_lengths(np.array([sum(tokens(m["content"]) for m in r["prompt"]) for r in v1]),
                             np.array([tokens(r["chosen"]) for r in v1]), np.array([tokens(r["rejected"]) for r in v1]),
                             "estimate")
    assert first["stats"]["lengths"] == expected and expected["rows"] == first["rows"]


def test_content_equal_to_any_earlier_version_makes_no_new_one(judged):
    first = build_version("back-and-forth", warehouse=str(judged))
    other = build_version("back-and-forth", policy_overrides={"min_abs_margin": 2.0}, warehouse=str(judged))
    assert other["new_version"] and other["version"] == first["version"] + 1
    back = build_version("back-and-forth", warehouse=str(judged))  # the first policy again: the first content
    assert not back["new_version"] and back["version"] == first["version"]
    assert back["note"] == f"unchanged: same content as back-and-forth v{first['version']}"
    with Warehouse(judged, read_only=True) as wh:
        assert len(wh.versions.versions("back-and-forth")) == 2


def test_an_rm_margin_column_only_on_purpose(judged, tmp_path):
    import datasets

    from flows.publish import publish

    build_version("trl-margin", policy_overrides={"rm_margin_column": True}, warehouse=str(judged))
    folder = publish("trl-margin", to=str(tmp_path), warehouse=str(judged))["target"]
    rm = datasets.load_dataset(folder, "rm")["train"]
    assert rm[0]["margin"] == rm[0]["judge_margin"] >= 1.0
    assert "RewardTrainer adds it to its loss" in (tmp_path / "trl-margin").joinpath(
        next(p.name for p in (tmp_path / "trl-margin").iterdir()), "README.md").read_text()


def test_empty_result_bad_policy_and_bad_name_are_refused(judged, tmp_path):
    with pytest.raises(EmptyVersionError, match="keeps none"):
        build_version("nothing", judge_config_id="jc-never-used", warehouse=str(judged))  # nothing judged by it
    bad = tmp_path / "p.toml"
    bad.write_text("min_margin = 1\n")
    with pytest.raises(PolicyError, match="unknown key 'min_margin'"):
        build_version("x", policy_path=str(bad), warehouse=str(judged))
    for name in ("../evil", "a/b", "", "x" * 200):
        with pytest.raises(ValueError, match="invalid dataset name"):
            build_version(name, warehouse=str(judged))
    with Warehouse(judged, read_only=True) as wh:
        assert not wh.versions.versions("nothing")


def test_cli_build_version_and_versions_json(judged):
    runner = CliRunner()
    result = runner.invoke(app, ["build-version", "cli-set", "--min-abs-margin", "1.5", "--warehouse", str(judged), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    for key in ("name", "version", "rows", "content_hash", "created"):
        assert key in summary
    listed = runner.invoke(app, ["versions", "cli-set", "--warehouse", str(judged), "--json"])
    assert json.loads(listed.stdout)[0]["content_hash"] == summary["content_hash"]
    bad = runner.invoke(app, ["build-version", "cli-set", "--min-abs-margin", "9", "--warehouse", str(judged)])
    assert bad.exit_code == 2 and "min_abs_margin" in bad.output


def test_publish_locally_in_hub_layout_then_again_is_a_no_op(judged, tmp_path):
    import datasets
    import yaml

    from flows.publish import publish

    made = build_version("pub-set", warehouse=str(judged))
    target = tmp_path / "published"
    first = publish("pub-set", to=str(target), warehouse=str(judged))
    assert first["published"] and not first["already_published"] and first["version"] == made["version"]
    folder = target / "pub-set" / f"v{made['version']}-{made['content_hash'][:12]}"
    assert first["target"] == str(folder.resolve())
    assert "README.md" in first["files"] and any(f.startswith("data/dpo/train-") for f in first["files"])
    card = (folder / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    assert {c["config_name"] for c in front["configs"]} == {"dpo", "rm", "helpsteer3"}
    assert front["license"] == "cc-by-4.0" and "text-generation" in front["task_categories"]
    assert made["content_hash"] in card and "margin_confidence.svg" in card
    cost = made["stats"]["cost"]
    with Warehouse(judged, read_only=True) as wh:
        tokens = wh.query("SELECT sum(tokens_in), sum(tokens_out) FROM judgments")[0]
    assert (cost["tokens_in"], cost["tokens_out"]) == tokens and cost["gpu_hours_per_1000_kept"] > 0
    assert cost["tokens_per_kept_pair"] == round((tokens[0] + tokens[1]) / made["rows"], 1)
    assert "## Cost of judging" in card and f"{rate(cost['gpu_hours_per_1000_kept'])} per 1,000 kept pairs" in card
    dpo = datasets.load_dataset(str(folder), "dpo")
    total = sum(len(dpo[s]) for s in dpo)
    assert total == made["rows"]
    row = dpo["train"][0]
    assert row["prompt"][-1]["role"] == "user" and row["chosen"][0]["role"] == "assistant"
    assert 0 < row["confidence"] <= 1 and row["judge_margin"] >= 1.0
    # TRL's RewardTrainer would put a `margin` column into its loss: none unless the policy asks
    rm = datasets.load_dataset(str(folder), "rm")
    assert "margin" not in rm["train"].column_names and "margin" not in dpo["train"].column_names
    assert "judge_margin" in rm["train"].column_names and "No config has a column named `margin`" in card
    # judged by the stand-in: the card says so before anything else
    assert made["simulated"] and "SIMULATED VERDICTS" in card.split("## Counts")[0]
    assert "simulated" in front["tags"]
    # one language scheme: BCP-47 codes or unknown
    assert all(lang is None or lang == "en" for lang in dpo["train"]["language"])
    hs3 = datasets.load_dataset(str(folder), "helpsteer3")
    assert set(hs3["train"][0]) >= {"context", "response1", "response2", "overall_preference"}

    again = publish("pub-set", to=str(target), warehouse=str(judged))
    assert again["already_published"] and again["files"] == first["files"]
    with Warehouse(judged, read_only=True) as wh:
        assert wh.versions.version_meta("pub-set")["published_tag"] == f"v{made['version']}"


def test_publish_refuses_unknown_versions_and_occupied_folders(judged, tmp_path):
    from flows.publish import UnknownVersionError, publish

    with pytest.raises(UnknownVersionError, match="has no versions yet"):
        publish("never-built", to=str(tmp_path), warehouse=str(judged))
    made = build_version("occupied", warehouse=str(judged))
    taken = tmp_path / "occupied" / f"v1-{made['content_hash'][:12]}"
    taken.mkdir(parents=True)
    (taken / "something.txt").write_text("not ours")
    with pytest.raises(ValueError, match="refusing to overwrite"):
        publish("occupied", to=str(tmp_path), warehouse=str(judged))


def test_publish_to_the_hub_one_commit_a_tag_and_no_token_leak(judged, monkeypatch):
    """Against a local HTTP stand-in of the Hub endpoints huggingface_hub uses (HF_ENDPOINT)."""
    from flows.publish import SimulatedVersionError, publish
    from tasks.publish.hub import PublishError
    from tests.tasks.publish.hub_standin import HubStandin, point_hub_clients_at

    made = build_version("hub-set", warehouse=str(judged))
    token = "hf_secret_token_for_tests"
    with HubStandin(token=token, fail_next={"/commit/": [429]}) as hub:
        point_hub_clients_at(hub, monkeypatch)
        monkeypatch.setenv("HF_TOKEN", token)
        # judged by the stand-in: refused by name unless allowed, and nothing was sent
        with pytest.raises(SimulatedVersionError, match="hub-set v1 was judged by the GenRM stand-in"):
            publish("hub-set", to="hf://curators/hub-set", warehouse=str(judged))
        assert hub.commits == []
        first = publish("hub-set", to="hf://curators/hub-set", warehouse=str(judged), allow_simulated=True)
        assert first["simulated"] and b"SIMULATED VERDICTS" in hub.commits[0].files["README.md"]
        assert first["target"] == "hf://curators/hub-set" and first["tag"] == "v1" and not first["already_published"]
        assert hub.statuses("/commit/") == [429, 200]  # the 429 was retried
        assert len(hub.commits) == 1 and hub.tags["curators/hub-set"]["v1"] == hub.commits[0].oid == first["commit"]
        files = hub.commits[0].files
        assert set(files) == set(first["files"]) and "README.md" in files
        assert token.encode() not in files["README.md"] and made["content_hash"].encode() in files["README.md"]
        again = publish("hub-set", to="hf://curators/hub-set", warehouse=str(judged), allow_simulated=True)
        assert again["already_published"] and len(hub.commits) == 1

        build_version("hub-set", policy_overrides={"min_abs_margin": 2.0}, warehouse=str(judged))
        hub.fail_next = {"/commit/": [403]}
        with pytest.raises(PublishError) as info:
            publish("hub-set", to="hf://curators/hub-set", warehouse=str(judged), allow_simulated=True)
        assert token not in str(info.value)
    with Warehouse(judged, read_only=True) as wh:
        assert wh.versions.version_meta("hub-set", 1)["published_tag"] == "v1"
        assert wh.versions.version_meta("hub-set", 2)["published_target"] is None  # a failed upload records nothing


def test_a_hub_target_in_capitals_goes_to_the_hub_through_the_cli(judged, tmp_path, monkeypatch):
    """`--to HF://ORG/NAME` is the Hub (it once made a local folder `HF:/ORG/NAME` and ended in a traceback)."""
    from tests.tasks.publish.hub_standin import HubStandin, point_hub_clients_at

    build_version("capitals", warehouse=str(judged))
    token = "hf_secret_token_for_tests"
    monkeypatch.chdir(tmp_path)
    with HubStandin(token=token) as hub:
        point_hub_clients_at(hub, monkeypatch)
        monkeypatch.setenv("HF_TOKEN", token)
        result = CliRunner().invoke(app, ["publish", "capitals", "--to", "HF://curators/capitals", "--allow-simulated",
                                          "--warehouse", str(judged), "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["target"] == "hf://curators/capitals"
        assert len(hub.commits) == 1 and hub.commits[0].repo_id == "curators/capitals"
    assert list(tmp_path.iterdir()) == []  # no folder `HF:` here
    with Warehouse(judged, read_only=True) as wh:
        assert wh.versions.version_meta("capitals", 1)["published_target"] == "hf://curators/capitals"


def test_cli_diff_and_publish_json(judged, tmp_path):
    runner = CliRunner()
    build_version("diffed", warehouse=str(judged))
    build_version("diffed", policy_overrides={"min_abs_margin": 2.0}, warehouse=str(judged))
    result = runner.invoke(app, ["diff", "diffed", "1", "2", "--warehouse", str(judged), "--json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    assert d["removed"] and not d["added"] and d["after"]["rows"] == d["before"]["rows"] - len(d["removed"])
    missing = runner.invoke(app, ["diff", "diffed", "1", "7", "--warehouse", str(judged)])
    assert missing.exit_code == 2 and "no version 7" in missing.output
    published = runner.invoke(app, ["publish", "diffed", "1", "--to", str(tmp_path / "out"), "--warehouse", str(judged),
                                     "--json"])
    assert published.exit_code == 0, published.output
    summary = json.loads(published.stdout.strip().splitlines()[-1])
    for key in ("target", "version", "files", "published", "already_published"):
        assert key in summary
    assert summary["version"] == 1 and summary["published"] and not summary["already_published"]

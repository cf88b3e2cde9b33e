"""Declared sources through the commands, in process (typer's runner) on Prefect's ephemeral API: `curate sources`
lists them beside the built-in ones, `curate ingest --source NAME` reads one end to end, `curate synth NAME`
writes its rows, and a mistake in the declaration is one line on stderr, exit 2, before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from curator.cli import app
from tasks.ingest.sources import SOURCES

pytestmark = [pytest.mark.prefect, pytest.mark.usefixtures("clean_settings")]
runner = CliRunner()

DECLARED = '''
[sources.team-pairs]
path = "exports/pairs.jsonl"
format = "trl"
columns = { prompt = "question" }
license = "internal"
description = "the team's export"

[sources.hubbed]
hub_id = "org/pairs"
config = "default"
splits = ["train", "test"]
license = "mit"
'''


@pytest.fixture
def clean_settings(monkeypatch):
    """The flags' CURATE_* variables are this test's alone (the commands set them for the process)."""
    from common.settings import get_settings

    for name in ("CURATE_WAREHOUSE", "CURATE_SOURCES_FILE"):
        monkeypatch.setenv(name, "")  # recorded as it was, so that what the flags set is undone after the test
        monkeypatch.delenv(name)
    get_settings.cache_clear()
    yield
    monkeypatch.undo()
    get_settings.cache_clear()


def _declare(folder: Path, text: str = DECLARED) -> Path:
    path = folder / "sources.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_sources_lists_the_built_in_and_the_declared_ones(tmp_path):
    toml = _declare(tmp_path)
    result = runner.invoke(app, ["sources", "--sources-file", str(toml)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["name", "kind", "format", "rows", "license", "synthetic", "rows", "from"]
    by_name = {line.split()[0]: line for line in lines[1:]}
    assert list(by_name) == [*SOURCES, "team-pairs", "hubbed"]  # one line each, built-in first
    assert by_name["helpsteer3"].endswith(" built-in") and "hf://datasets/nvidia/HelpSteer3 (preference) [train, validation]" in by_name["helpsteer3"]
    team = by_name["team-pairs"].split()
    assert team[:4] == ["team-pairs", "pairs", "trl", str(tmp_path / "exports" / "pairs.jsonl")]
    assert team[4:] == ["internal", "yes", str(toml.resolve())]
    assert "hf://datasets/org/pairs (default) [train, test]" in by_name["hubbed"]
    assert " auto " in by_name["hubbed"] and by_name["hubbed"].endswith(str(toml.resolve()))

    listed = json.loads(runner.invoke(app, ["sources", "--json", "--sources-file", str(toml)]).stdout)
    team = next(s for s in listed if s["name"] == "team-pairs")
    assert team == {"name": "team-pairs", "kind": "pairs", "format": "trl",
                    "location": str(tmp_path / "exports" / "pairs.jsonl"), "config": None, "splits": ["train"],
                    "revision": None, "license": "internal", "synthetic_rows": True, "origin": str(toml.resolve()),
                    "description": "the team's export"}
    assert [s["origin"] for s in listed if s["name"] in SOURCES] == ["built-in"] * len(SOURCES)


def test_the_file_beside_the_warehouse_is_found_without_a_flag(tmp_path):
    _declare(tmp_path)
    result = runner.invoke(app, ["sources", "--warehouse", str(tmp_path / "warehouse.duckdb")])
    assert result.exit_code == 0 and "team-pairs" in result.stdout
    bare = runner.invoke(app, ["sources", "--warehouse", str(tmp_path / "elsewhere" / "w.duckdb")])
    assert bare.exit_code == 0 and "team-pairs" not in bare.stdout  # no file there: nothing declared, no error


def test_ingest_of_a_declared_source_end_to_end(tmp_path):
    toml = _declare(tmp_path)
    data = tmp_path / "exports" / "pairs.jsonl"
    made = runner.invoke(app, ["synth", "team-pairs", str(data), "--rows", "60", "--seed", "3", "--bad-rate", "0.1",
                               "--sources-file", str(toml)])
    assert made.exit_code == 0, made.output
    manifest = json.loads((tmp_path / "exports" / "pairs.jsonl.manifest.json").read_text())
    assert manifest["kind"] == "team-pairs" and manifest["rows"] == 60
    assert all(set(json.loads(line)) == {"question", "chosen", "rejected"}
               for i, line in enumerate(data.read_text().splitlines()) if str(i) not in manifest["bad_rows"])

    warehouse = tmp_path / "warehouse.duckdb"  # sources.toml beside it: found without the flag
    result = runner.invoke(app, ["ingest", "--source", "team-pairs", "--warehouse", str(warehouse), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["source"] == "team-pairs" and summary["read"] == 60 and summary["format"] == "trl"
    assert summary["location"] == str(data.resolve()) and summary["source_revision"].startswith("file:")
    assert summary["quarantined_rows"] == len(manifest["bad_rows"]) > 0
    assert summary["valid"] == 60 - len(manifest["bad_rows"])

    again = runner.invoke(app, ["ingest", "--source", "team-pairs", "--warehouse", str(warehouse), "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["note"].startswith("unchanged")

    status = json.loads(runner.invoke(app, ["status", "--warehouse", str(warehouse), "--json"]).stdout)
    assert status["counts"]["candidate_pairs"] == summary["new_pairs"] + summary["near_duplicates"]


@pytest.mark.parametrize(("toml", "said"), [
    ('[sources.team-pairs]\npath = "exports/pairs.jsonl"\nformat = "trl"\nlisence = "internal"\n',
     "[sources.team-pairs] lisence: unknown key; did you mean 'license'?"),
    ('[sources.team-pairs]\npath = "exports/pairs.jsonl"\nformat = "trl"\nlicense = "internal"\n'
     'columns = { prompt = "asked" }\n', "column(s) 'asked' of [sources.team-pairs]"),
])
def test_a_mistake_is_one_line_on_stderr_exit_2_and_nothing_written(tmp_path, toml, said):
    _declare(tmp_path, toml)
    data = tmp_path / "exports" / "pairs.jsonl"
    data.parent.mkdir()
    data.write_text("".join(json.dumps({"question": f"q{i}", "chosen": "c", "rejected": "r"}) + "\n"
                            for i in range(10)))
    warehouse = tmp_path / "warehouse.duckdb"
    result = runner.invoke(app, ["ingest", "--source", "team-pairs", "--warehouse", str(warehouse)])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], result.stderr
    assert not warehouse.exists()  # refused before anything was made


def test_run_and_the_pipeline_accept_a_declared_name(tmp_path):
    toml = _declare(tmp_path)
    result = runner.invoke(app, ["run", "--source", "nope", "--sources-file", str(toml), "--skip", "judge",
                                 "--warehouse", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 2 and "unknown source 'nope'; known: " in result.stderr
    assert "team-pairs" in result.stderr  # the declared names are among those it knows
    from tasks.pipeline.context import PipelineRun

    run = PipelineRun.of(sources=["team-pairs", "hubbed"], skip=["judge"], sources_file=str(toml),
                         warehouse=str(tmp_path / "w.duckdb"))
    assert run.sources_file == str(toml)
    with pytest.raises(Exception, match="pairs.jsonl: no such file"):
        run.check_files()  # the declared local file is checked as NAME=FILE's is

    data = tmp_path / "exports" / "pairs.jsonl"
    assert runner.invoke(app, ["synth", "team-pairs", str(data), "--rows", "30", "--bad-rate", "0",
                               "--sources-file", str(toml)]).exit_code == 0
    result = runner.invoke(app, ["run", "--source", "team-pairs", "--sources-file", str(toml), "--skip", "judge",
                                 "--skip", "version", "--skip", "publish", "--warehouse", str(tmp_path / "w.duckdb"),
                                 "--json"])
    assert result.exit_code == 0, result.output
    ingested = json.loads(result.stdout)["ingest"]["team-pairs"]
    assert ingested["read"] == 30 and ingested["format"] == "trl" and ingested["location"] == str(data.resolve())


def _binarized_rows(n: int) -> str:
    """Rows shaped as HuggingFaceH4/ultrafeedback_binarized's: `chosen` and `rejected` the whole conversation."""
    def conversation(i, answer):
        return [{"role": "user", "content": f"question {i}?"}, {"role": "assistant", "content": answer}]

    return "".join(json.dumps({"prompt": f"question {i}?", "prompt_id": f"p{i}",
                               "chosen": conversation(i, f"a good answer to {i}"),
                               "rejected": conversation(i, f"a worse answer to {i}"),
                               "messages": conversation(i, f"a good answer to {i}"), "score_chosen": 8.0,
                               "score_rejected": 4.0}) + "\n" for i in range(n))


def test_rows_of_another_format_end_in_one_line_naming_it_and_are_recorded(tmp_path):
    """Every row quarantined for its format (UltraFeedback-binarized declared trl): one line naming the format the
    rows fit, exit 2, the rows quarantined and recorded; declared so, the same file lands every row."""
    _declare(tmp_path, '[sources.ufb]\npath = "ufb.jsonl"\nformat = "trl"\nlicense = "mit"\n')
    (tmp_path / "ufb.jsonl").write_text(_binarized_rows(100))
    warehouse = tmp_path / "warehouse.duckdb"
    result = runner.invoke(app, ["ingest", "--source", "ufb", "--warehouse", str(warehouse)])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "every row of [sources.ufb] (trl, " in lines[0] and "chosen:assistant_turns_only 100" in lines[0]
    assert "its rows fit format 'trl-implicit'" in lines[0] and 'declare format = "trl-implicit"' in lines[0]
    status = json.loads(runner.invoke(app, ["status", "--warehouse", str(warehouse), "--json"]).stdout)
    assert status["counts"]["quarantine"] == 100 and status["counts"]["candidate_pairs"] == 0

    _declare(tmp_path, '[sources.ufb]\npath = "ufb.jsonl"\nformat = "trl-implicit"\nlicense = "mit"\n')
    fixed = runner.invoke(app, ["ingest", "--source", "ufb", "--warehouse", str(warehouse), "--json"])
    assert fixed.exit_code == 0, fixed.output  # the failed run did not count the file as read
    assert json.loads(fixed.stdout)["new_pairs"] == 100

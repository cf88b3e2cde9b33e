"""The `curate` command, in process (typer's runner) and once as a real console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

import pytest
from typer.testing import CliRunner

from curator.cli import app
from tasks.ingest.synth import write_synth

pytestmark = pytest.mark.prefect
runner = CliRunner()
KEYS = {"read", "valid", "quarantined", "exact_duplicates", "near_duplicates", "contaminated", "new_pairs"}


def test_ingest_json_prints_one_object_with_the_documented_keys(tmp_path, warehouse_path):
    data = tmp_path / "hs.jsonl"
    m = write_synth(data, "helpsteer3", 120, seed=3, pair_bytes=800)
    result = runner.invoke(app, ["ingest", "--source", "helpsteer3", "--path", str(data), "--warehouse",
                                 str(warehouse_path), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert KEYS <= set(summary) and summary["read"] == 120
    assert isinstance(summary["quarantined"], dict) and sum(summary["quarantined"].values()) >= len(m.bad_rows)

    status = runner.invoke(app, ["status", "--warehouse", str(warehouse_path), "--json"])
    assert status.exit_code == 0
    assert json.loads(status.stdout)["counts"]["candidate_pairs"] == summary["new_pairs"] + summary["near_duplicates"]


def test_unknown_source_and_missing_file_are_one_line_errors(tmp_path, warehouse_path):
    result = runner.invoke(app, ["ingest", "--source", "nope", "--path", str(tmp_path / "x.jsonl"),
                                 "--warehouse", str(warehouse_path)])
    assert result.exit_code == 2 and "unknown source 'nope'" in result.output
    result = runner.invoke(app, ["ingest", "--source", "arena", "--path", str(tmp_path / "x.jsonl"),
                                 "--warehouse", str(warehouse_path)])
    assert result.exit_code == 2 and "no such file" in result.output


def test_synth_command_writes_rows_and_manifest(tmp_path):
    out = tmp_path / "a.jsonl"
    result = runner.invoke(app, ["synth", "arena", str(out), "--rows", "50", "--seed", "1"])
    assert result.exit_code == 0
    assert len(out.read_text().splitlines()) == 50 and (tmp_path / "a.jsonl.manifest.json").exists()


def test_console_script_reports_a_locked_warehouse_clearly(tmp_path, warehouse_path):
    """A real `curate` process while another process holds the DuckDB file."""
    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 20, seed=1, pair_bytes=500)
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(warehouse_path)!r}); print('ready', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        curate = os.path.join(os.path.dirname(sys.executable), "curate")
        proc = subprocess.run([curate, "ingest", "--source", "helpsteer3", "--path", str(data), "--warehouse",
                               str(warehouse_path), "--json"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr
        assert f"process {holder.pid}" in proc.stderr and "Traceback" not in proc.stderr
        assert proc.stdout == ""
    finally:
        holder.kill()
        holder.wait(10)


def test_judge_json_has_the_documented_keys(tmp_path, warehouse_path):
    from testing.genrm_standin import StandinConfig, StandinProcess

    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 30, seed=5, pair_bytes=500, bad_rate=0.0)
    assert runner.invoke(app, ["ingest", "--source", "helpsteer3", "--path", str(data), "--warehouse",
                               str(warehouse_path), "--json"]).exit_code == 0
    with StandinProcess(StandinConfig(latency_mean=0.01)) as server:
        result = runner.invoke(app, ["judge", "--endpoint", server.url, "--strategy", "single", "--limit", "10",
                                     "--warehouse", str(warehouse_path), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    for key in ("pairs", "judged", "failed", "skipped_cached", "requests", "tokens_in", "tokens_out", "seconds"):
        assert key in summary
    assert (summary["pairs"], summary["judged"], summary["requests"]) == (10, 10, 10)


def test_judge_without_an_endpoint_is_a_clear_error(warehouse_path):
    result = runner.invoke(app, ["judge", "--warehouse", str(warehouse_path)])
    assert result.exit_code == 2 and "no judge endpoint" in result.output


def test_evaluate_judge_json_has_the_documented_keys(tmp_path, warehouse_path):
    from testing.genrm_standin import StandinConfig, StandinProcess

    data = tmp_path / "jb.jsonl"
    data.write_text("".join(json.dumps({"pair_id": f"p{i}", "source": src, "question": f"q{i}", "response_A": f"a{i}",
                                        "response_B": f"b{i}", "label": "A>B" if i % 2 else "B>A"}) + "\n"
                            for i, src in enumerate(["mmlu-pro-law", "livecodebench"] * 4)) + "{broken\n")
    with StandinProcess(StandinConfig(latency_mean=0.001)) as server:
        result = runner.invoke(app, ["evaluate-judge", "--benchmark", "judgebench", "--path", str(data), "--endpoint",
                                     server.url, "--warehouse", str(warehouse_path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"benchmark", "accuracy", "by_category", "pairs", "failed"} <= set(out)
    assert (out["benchmark"], out["pairs"], out["failed"]) == ("judgebench", 8, 0)
    assert set(out["by_category"]) == {"knowledge", "coding"} and 0 <= out["accuracy"] <= 100
    assert [r["reason"] for r in out["rejected"]] == ["malformed_json"]  # the bad line is named, not dropped
    bad = runner.invoke(app, ["evaluate-judge", "--benchmark", "helpsteer3", "--path", str(data), "--endpoint",
                              "http://127.0.0.1:9/v1", "--warehouse", str(warehouse_path)])
    assert bad.exit_code == 2 and "not a judge benchmark" in bad.output


def test_snapshot_command_writes_the_dashboard_snapshot(dashboard_warehouse, tmp_path):
    warehouse, _, _ = dashboard_warehouse
    copy = tmp_path / "warehouse.duckdb"
    copy.write_bytes(warehouse.read_bytes())
    result = runner.invoke(app, ["snapshot", "--warehouse", str(copy)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dashboard.duckdb").exists() and "dash_funnel" in result.output


def test_evaluate_judge_writes_an_oracle_file_for_the_standin(tmp_path):
    data = tmp_path / "jb.jsonl"
    data.write_text(json.dumps({"pair_id": "p", "source": "livecodebench", "question": "q", "response_A": "a",
                                "response_B": "b", "label": "B>A"}) + "\n")
    oracle = tmp_path / "oracle.jsonl"
    result = runner.invoke(app, ["evaluate-judge", "--benchmark", "judgebench", "--path", str(data),
                                 "--write-oracle", str(oracle)])
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in oracle.read_text().splitlines()] == [{"prompt": "q", "better": "b", "worse": "a"}]


def _curate(*args: str, cwd) -> tuple[subprocess.CompletedProcess, float]:
    import time

    curate = os.path.join(os.path.dirname(sys.executable), "curate")
    started = time.monotonic()
    proc = subprocess.run([curate, *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={k: v for k, v in os.environ.items() if not k.startswith("CURATE_")})
    return proc, time.monotonic() - started


@pytest.mark.parametrize("case", ["wrong_source", "run_without_endpoint", "unreachable_endpoint", "judge_no_warehouse",
                                  "publish_missing"])
def test_errors_a_user_can_act_on_are_at_most_three_short_lines(tmp_path, case):
    warehouse = tmp_path / "w.duckdb"
    if case == "wrong_source":
        rm = tmp_path / "rm.jsonl"
        write_synth(tmp_path / "hs.jsonl", "helpsteer3", 5, seed=1)  # something real beside it
        rm.write_text("".join(json.dumps({"id": i, "prompt": f"p{i}", "chosen": ["c"], "rejected": ["r"]}) + "\n"
                              for i in range(20)))
        args = ["ingest", "--source", "helpsteer3", "--path", str(rm), "--warehouse", str(warehouse)]
        said = "required column(s) missing from every row"
    elif case == "run_without_endpoint":
        write_synth(tmp_path / "hs.jsonl", "helpsteer3", 20, seed=1)
        args = ["run", "--source", f"helpsteer3={tmp_path / 'hs.jsonl'}", "--warehouse", str(warehouse)]
        said = "no judge endpoint"
    elif case == "unreachable_endpoint":
        from warehouse.store import Warehouse

        Warehouse(warehouse).close()
        args = ["judge", "--endpoint", "http://127.0.0.1:9/v1", "--warehouse", str(warehouse)]
        said = "no judge endpoint answers: http://127.0.0.1:9/v1"
    elif case == "judge_no_warehouse":  # files before endpoints: the missing warehouse is said first
        args = ["judge", "--endpoint", "http://127.0.0.1:9/v1", "--warehouse", str(warehouse)]
        said = "no warehouse at"
    else:
        from warehouse.store import Warehouse

        Warehouse(warehouse).close()
        args = ["publish", "nothing-here", "9", "--warehouse", str(warehouse)]
        said = "'nothing-here' has no versions yet"
    proc, seconds = _curate(*args, cwd=tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and 1 <= len(lines) <= 3, proc.stderr
    assert lines[0].startswith("error: ") and said in proc.stderr.replace("\n", " ")
    if case in ("run_without_endpoint", "judge_no_warehouse"):
        assert seconds < 30 and not warehouse.exists()  # refused before any stage: nothing touched


def test_a_command_killed_with_sigkill_leaves_no_server_behind(tmp_path):
    """Prefect's temporary API server is the command's child: a watchdog stops it once the command is gone."""
    import signal
    import time

    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 20000, seed=5, pair_bytes=3000)
    curate = os.path.join(os.path.dirname(sys.executable), "curate")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURATE_")}
    proc = subprocess.Popen([curate, "ingest", "--source", "helpsteer3", "--path", str(data), "--warehouse",
                             str(tmp_path / "w.duckdb")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)

    def children() -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        return [int(p) for p in out]

    deadline = time.time() + 90
    servers: list[int] = []
    while not servers and time.time() < deadline and proc.poll() is None:
        servers = [p for p in children()
                   if "uvicorn" in open(f"/proc/{p}/cmdline", "rb").read().decode(errors="replace")]
        time.sleep(0.3)
    if proc.poll() is not None:
        pytest.skip("the ingest finished before a server could be seen")
    assert servers, "Prefect's temporary server runs as the command's child"
    time.sleep(1.0)  # the watchdog polls every 0.5 s
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 20
    alive = servers
    while alive and time.time() < deadline:
        alive = [p for p in servers if os.path.exists(f"/proc/{p}")
                 and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
        time.sleep(0.3)
    for p in alive:  # never leave it to the next test, whatever happened
        os.kill(p, signal.SIGKILL)
    assert not alive


def _commands():
    """(name, click command) of every command, sub-commands included."""
    import click
    import typer

    def walk(group, prefix=""):
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from walk(command, f"{prefix}{name} ")
            else:
                yield f"{prefix}{name}", command

    return list(walk(typer.main.get_command(app)))


def test_every_flag_has_a_description_and_every_number_a_range():
    import re
    import typing

    for name, command in _commands():
        for p in command.params:
            if p.hidden or p.name == "help":
                continue
            kind = [a for a in typing.get_args(p.type_descriptor.annotation) if a is not type(None)] or \
                [p.type_descriptor.annotation]
            assert p.help, f"curate {name} {p.opts[0]}: no description"
            if kind[0] in (int, float):
                assert p._get_number_range_help_str() or re.search(r"\.\.|>=|<=| < |any integer", p.help), \
                    f"curate {name} {p.opts[0]}: no range in {p.help!r}"


def test_help_never_cuts_a_flag_name_even_at_80_columns():
    for name, command in _commands():
        result = runner.invoke(app, [*name.split(), "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0, result.output
        assert "…" not in result.output, f"curate {name} --help:\n{result.output}"
        for p in command.params:
            for flag in p.opts + p.secondary_opts:
                if flag.startswith("--"):
                    assert flag in result.output, f"curate {name} --help lacks {flag}"


def test_commands_are_listed_by_stage():
    from curator.output import STAGES

    text = runner.invoke(app, ["--help"]).output
    panels = [stage for stage, _ in STAGES]
    assert [text.index(f" {p} ") for p in panels] == sorted(text.index(f" {p} ") for p in panels)
    assert "─ Commands ─" not in text and "─ Other ─" not in text  # every command belongs to a stage
    staged = {n for _, names in STAGES for n in names}
    assert {name.split()[0] for name, _ in _commands()} <= staged


def test_the_command_listing_says_each_summary_as_one_paragraph():
    """A summary written over several docstring lines is listed as one paragraph, each row filled before the next,
    not broken where the source broke it ("... `--strategy certify[:K]` judges" then "in rounds ..." on a row of
    its own)."""
    text = runner.invoke(app, ["--help"], env={"COLUMNS": "120"}).output
    rows = [line[1:-1] for line in text.splitlines() if line.startswith("│") and line.endswith("│")]
    names = {name for name, _ in _commands() if " " not in name}
    starts = {row.index(row.split()[1], len(row.split()[0]) + 1) for row in rows
              if row.split() and row.split()[0] in names and len(row.split()) > 1}
    assert len(starts) == 1, starts  # one description column
    at = starts.pop()
    width = max(len(row[at:].rstrip()) for row in rows)
    continued = 0
    for row, after in zip(rows, rows[1:]):
        if not row[at:].strip() or after[:at].strip() or not after[at:].strip():
            continue  # the next row starts another command, or a panel ends
        continued += 1
        assert len(row[at:].rstrip()) + 1 + len(after[at:].split()[0]) > width, f"a summary broken early:\n{text}"
    assert continued  # some summary does take two rows, so the check ran


def test_tables_are_plain_whole_rows_when_piped(dashboard_warehouse):
    warehouse, _, _ = dashboard_warehouse
    from warehouse.store import Warehouse

    with Warehouse(warehouse, read_only=True) as wh:
        versions = wh.versions.versions("dash")
    for args in (["versions"], ["versions", "dash"], ["status"], ["sources"]):
        result = runner.invoke(app, [*args, "--warehouse", str(warehouse)] if args[0] != "sources" else args)
        assert result.exit_code == 0, result.output
        assert not set(result.output) & set("│┃━─┏┡└╇"), result.output  # no box drawing outside a terminal
        assert "…" not in result.output
    listing = runner.invoke(app, ["versions", "--warehouse", str(warehouse)]).output.splitlines()
    assert listing[0].split() == ["name", "version", "parent", "created", "rows", "judge", "content", "hash", "judge",
                                  "config", "published"]
    for v, line in zip(versions, listing[1:]):
        assert line.startswith("dash ") and v["content_hash"] in line and v["judge_config_id"] in line
        assert " SIMULATED " in line  # the stand-in judged this warehouse, as --json says
    assert all(v["simulated"] for v in json.loads(runner.invoke(
        app, ["versions", "--json", "--warehouse", str(warehouse)]).stdout))
    # v2 was built under a looser policy: the diff names the keys that changed, old -> new
    diff = runner.invoke(app, ["diff", "dash", "1", "2", "--warehouse", str(warehouse)]).output
    policy = next(line for line in diff.splitlines() if line.startswith("policy "))
    assert "min_abs_margin 1.0 -> 0.5" in policy and "require_order_agreement true -> false" in policy, policy


def test_the_demo_says_what_it_read_and_its_rerun_reads_nothing(tmp_path):
    first, _ = _curate("demo", "--rows", "60", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    lines = first.stdout.splitlines()
    # offline (the tests set HF_HUB_OFFLINE): the first line on stdout says the rows are synthetic
    assert lines[0].startswith("demo: reading synthetic rows (the Hub is not reachable)"), lines[:3]
    assert any(line.startswith("made: from synthetic rows: ") for line in lines)
    # ... and so does the card it published, first, with its agreement figures said to be of synthetic labels
    card = next((tmp_path / "published").rglob("README.md")).read_text()
    assert card.split("---\n", 2)[2].lstrip().split("\n\n")[1].startswith("> **SYNTHETIC ROWS.** All of its rows")
    assert "The labels of the synthetic rows are synthetic too" in card
    # a log keeps whole lines: the vLLM command is one line, not cut at 80 columns
    assert any(line.strip().startswith("python3 -m vllm.entrypoints") and line.endswith("0.95") for line in lines)
    # the closing lines' declaration is one TOML table as printed, its header too (Rich once took it for markup)
    table = [line.strip().removeprefix("#").split("  #")[0].strip() for line in lines[lines.index(
        next(line for line in lines if "your own preference data" in line)) + 1:] if line.strip().startswith("#   ")]
    assert tomllib.loads("\n".join(table)) == {"sources": {"my-pairs": {"path": "my-pairs.jsonl", "format": "trl",
                                                                         "license": "cc-by-4.0"}}}, table
    again, _ = _curate("demo", "--rows", "60", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    out = again.stdout
    assert "ingest helpsteer3: unchanged, nothing read" in out and "ingest arena: unchanged, nothing read" in out
    assert "judge: nothing to judge, 0 requests" in out and "()" not in out
    assert "(unchanged: same inputs and policy" in out and "(already there)" in out and "read 60" not in out


def _build_version_flags() -> dict[str, object]:
    """{policy key: its click parameter} of `curate build-version`."""
    command = dict(_commands())["build-version"]
    return {p.name: p for p in command.params}


def test_every_policy_key_is_a_build_version_flag_with_its_fields_help():
    from common.errors import allowed_range
    from tasks.curate.policy import FILE_ONLY_KEYS, FilterPolicy

    flags = _build_version_flags()
    assert not set(FILE_ONLY_KEYS) & set(flags)  # a table of shares is a policy file's, never a flag's
    for key, field in FilterPolicy.model_fields.items():
        if key in FILE_ONLY_KEYS:
            continue
        assert key in flags, f"policy key {key} has no flag"
        p = flags[key]
        assert f"--{key.replace('_', '-')}" in p.opts and p.default is None  # None: the file's or default value stands
        assert field.description in p.help, p.help
        if allowed_range(FilterPolicy, key):
            assert allowed_range(FilterPolicy, key) in p.help, p.help
    assert "keep | drop" in flags["one_order_decisive"].help and "default keep" in flags["one_order_decisive"].help
    assert flags["require_order_agreement"].secondary_opts == ["--allow-order-disagreement"]  # unchanged names
    assert flags["rm_margin_column"].secondary_opts == ["--no-rm-margin-column"]


@pytest.mark.parametrize("args,said", [
    (["--min-abs-margin", "3"], "min_abs_margin = 3.0: input should be less than or equal to 2.5 (allowed: 0 .. 2.5)"),
    (["--decisive-margin", "-0.5"], "decisive_margin = -0.5: input should be greater than or equal to 0 (allowed: "
                                    "0 .. 2.5)"),
    (["--max-chosen-longer-share", "0"], "max_chosen_longer_share = 0.0: input should be greater than 0 (allowed: "
                                         "0 < x <= 1)"),
    (["--one-order-decisive", "sometimes"], "one_order_decisive = 'sometimes': input should be 'keep' or 'drop'"),
    (["--max-per-prompt", "0"], "max_per_prompt = 0: input should be greater than or equal to 1 (allowed: >= 1)"),
])
def test_a_policy_flag_out_of_its_range_is_refused_in_one_line_before_the_warehouse(tmp_path, args, said):
    warehouse = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["build-version", "x", *args, "--warehouse", str(warehouse)])
    assert result.exit_code == 2, result.output
    assert result.output == f"error: invalid filter policy: {said}\n"
    assert not warehouse.exists()


def test_build_version_flags_reach_the_version_as_its_policy(dashboard_warehouse, tmp_path):
    warehouse, _, _ = dashboard_warehouse
    copy = tmp_path / "warehouse.duckdb"
    copy.write_bytes(warehouse.read_bytes())
    result = runner.invoke(app, ["build-version", "flagged", "--one-order-decisive", "drop", "--decisive-margin", "1.5",
                                 "--rm-margin-column", "--allow-order-disagreement", "--min-abs-margin", "0.5",
                                 "--warehouse", str(copy), "--json"])
    assert result.exit_code == 0, result.output
    from warehouse.store import Warehouse

    with Warehouse(copy, read_only=True) as wh:
        policy = wh.versions.version_meta("flagged")["policy"]
    assert (policy["one_order_decisive"], policy["decisive_margin"], policy["rm_margin_column"],
            policy["require_order_agreement"], policy["min_abs_margin"]) == ("drop", 1.5, True, False, 0.5)
    assert policy["human_ties"] == "keep"  # a flag not given leaves the default

"""Every refusal a user can cause by arguments or files comes before Prefect starts or the network is asked, in
the order a person fixes things (arguments, then files, then endpoints and the Hub), in one line with exit 2.

Each case runs `curate` in a fresh interpreter that records whether a Prefect flow module was ever imported (a
flow's start-up is what made these refusals take 12-19 s). How long they take is `benchmarks/startup.py`'s to say:
a time asserted here failed on a loaded machine while the refusals were as fast as ever."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tasks.ingest.synth import write_synth
from warehouse.store import Warehouse

# Runs the CLI like the console script does and reports on stderr's last line; a flow module imported means
# Prefect would have started.
_PROBE = textwrap.dedent("""
    import json, sys, time
    started = time.monotonic()
    from curator.cli import app
    code = 0
    try:
        app(sys.argv[1:], prog_name="curate")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    sys.stderr.write("\\nPROBE " + json.dumps({"code": code, "seconds": time.monotonic() - started,
                                               "flows": sorted(m for m in sys.modules if m.startswith("flows."))})
                     + "\\n")
""")


def _probe(*args: str, cwd, settings: dict[str, str] | None = None, wrap: tuple[str, ...] = ()) -> tuple[list[str], dict]:
    """`settings`: CURATE_* variables the command sees (none of the session's); `wrap`: a command line the probe
    runs under (a mount namespace, say)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")}, **(settings or {})}
    proc = subprocess.run([*wrap, sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120, env=env)
    *said, probe = proc.stderr.rstrip("\n").split("\n")
    return [line for line in said if line.strip()], json.loads(probe.removeprefix("PROBE "))


def _refusal(*args: str, cwd, settings: dict[str, str] | None = None,
             wrap: tuple[str, ...] = ()) -> tuple[str, dict]:
    lines, report = _probe(*args, cwd=cwd, settings=settings, wrap=wrap)
    assert report["code"] == 2 and lines and lines[0].startswith("error: "), lines
    assert len(lines) <= 2 and not any("Traceback" in line for line in lines), lines
    # the cause of a slow refusal (a flow's start-up alone took 10 s and more), checked as a fact, not a time:
    # timings belong to benchmarks/startup.py, and a loaded machine stretches every command alike
    assert report["flows"] == [], f"a flow was imported before refusing: {report['flows']}"
    return lines[0], report


@pytest.fixture(scope="session")
def place_made(tmp_path_factory):
    """A warehouse with no pairs or verdicts, files of both sources, and two policies no run in rounds takes: made
    once, copied by each test (session-scoped, so the tests still go to whichever worker is free)."""
    folder = tmp_path_factory.mktemp("refusals-place")
    hs, arena = folder / "hs.jsonl", folder / "arena.jsonl"
    write_synth(hs, "helpsteer3", 30, seed=3, pair_bytes=300)
    write_synth(arena, "arena", 30, seed=4, pair_bytes=300)
    (folder / "heuristic.toml").write_text("[policy]\nmin_abs_margin = 1.5\n")
    (folder / "untargeted.toml").write_text("[policy]\nvalidation_share = 0.1\n")
    Warehouse(folder / "w.duckdb").close()
    return folder


@pytest.fixture
def place(tmp_path, place_made):
    shutil.copytree(place_made, tmp_path, dirs_exist_ok=True)
    return tmp_path


DEAD = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("args, said", [
    # a file of another source: refused from its first batch, not after Prefect's start-up
    (["ingest", "--source", "arena", "--path", "hs.jsonl"], "required column(s) missing from every row"),
    (["ingest", "--source", "arena", "--path", "missing.jsonl"], "missing.jsonl: no such file"),
    (["ingest", "--source", "nope", "--path", "missing.jsonl"], "unknown source 'nope'"),  # argument before file
    (["run", "--source", "arena=hs.jsonl", "--endpoint", DEAD], "required column(s) missing"),  # file before endpoint
    (["run", "--source", "helpsteer3=hs.jsonl", "--strategy", "swapp", "--endpoint", DEAD], "unknown strategy 'swapp'"),
    (["run", "--skip", "nothing"], "unknown stage(s) to skip"),
    (["judge", "--endpoint", DEAD, "--strategy", "swapp"], "unknown strategy 'swapp'"),  # argument before endpoint
    (["judge", "--endpoint", DEAD, "--shard", "4/2"], "shard '4/2'"),
    (["judge", "--endpoint", DEAD, "--warehouse", "none.duckdb"], "no warehouse at"),  # file before endpoint
    (["build-version", "prefs"], "no judged pairs yet"),
    (["build-version", "prefs", "--judge-config", "jc-nope"], "no judged pairs yet"),
    (["build-version", "bad name", "--policy", "missing.toml"], "invalid dataset name 'bad name'"),
    (["build-version", "prefs", "--min-abs-margin", "7", "--policy", "missing.toml"], "min_abs_margin"),
    (["build-version", "prefs", "--policy", "missing.toml"], "missing.toml: cannot read the policy"),
    # a certified version's keys: a target beside the heuristic cut-offs, a risk without a target
    (["build-version", "prefs", "--target-agreement", "0.9", "--min-abs-margin", "1.5", "--policy", "missing.toml"],
     "target_agreement certifies the selection itself: min_abs_margin = 1.5 cannot be set beside it"),
    (["build-version", "prefs", "--risk", "0.1"], "risk only applies with target_agreement"),
    (["build-version", "prefs", "--target-agreement", "0.5"], "target_agreement = 0.5: input should be greater than 0.5"),
    (["publish", "prefs", "3"], "'prefs' has no versions yet"),
    (["publish", "prefs", "--to", "hf://justname"], "a Hub target is hf://ORG/NAME"),
    (["publish", "prefs", "--to", "hf://org/bad name"], "invalid Hub dataset name 'bad name'"),  # before the version
    # every name the Hub would refuse, by huggingface_hub's validator, and the scheme in any case
    (["publish", "prefs", "--to", "hf://org/a--b"], "invalid Hub dataset name 'a--b': cannot have -- or .."),
    (["publish", "prefs", "--to", "hf://org/ends."], "invalid Hub dataset name 'ends.'"),
    (["publish", "prefs", "--to", "HF://org/-starts"], "invalid Hub dataset name '-starts'"),
    (["publish", "prefs", "--to", "Hf://or..g/x"], "invalid Hub user or organisation name 'or..g'"),
    (["publish", "prefs", "--to", "hf://org/" + "x" * 97], "the maximum length is 96"),
    (["publish", "prefs", "--to", "hf://org/x.git"], "cannot end by '.git'"),
    (["publish", "prefs", "--to", "s3://bucket/x"], "cannot publish to s3://: the targets are a local folder or hf://"),
    (["publish", "prefs", "--to", "hf:/org/x"], "a Hub target is hf://ORG/NAME (two slashes)"),
    (["run", "--publish-to", "HF://org/a--b", "--endpoint", DEAD], "invalid Hub dataset name 'a--b'"),
    (["run", "--publish-to", "gs://bucket/x", "--endpoint", DEAD], "cannot publish to gs://"),
    # a local folder that cannot be written: the dataset's folder under it, checked before Prefect
    (["run", "--skip", "ingest", "--skip", "judge", "--publish-to", "/proc/x"], "/proc is a kernel filesystem"),
    (["run", "--skip", "ingest", "--skip", "judge", "--publish-to", "/sys/kernel/x"], "/sys is a kernel filesystem"),
    (["run", "--skip", "ingest", "--skip", "judge", "--publish-to", "hs.jsonl/x"], "hs.jsonl is a file, not a folder"),
    (["versions", "no-such-dataset"], "no dataset named 'no-such-dataset'"),
    (["evaluate-judge", "--benchmark", "arena", "--endpoint", DEAD], "arena is not a judge benchmark"),
    (["evaluate-judge", "--benchmark", "rm-bench", "--strategy", "adaptive", "--endpoint", DEAD], "not adaptive:1"),
    # judging in rounds: a target it escalates toward, the whole pool in one run; a target only with it
    # one refusal of a run in rounds without a target, whichever command asked (`tasks.curate.policy.rounds_policy`)
    (["judge", "--endpoint", DEAD, "--strategy", "certify"],
     "no target: judging in rounds escalates toward a certified version's target (set target_agreement in the "
     "policy, or give curate judge --target-agreement A"),
    (["judge", "--endpoint", DEAD, "--strategy", "certify:1", "--target-agreement", "0.9", "--shard", "0/2"],
     "certify:1 judges in rounds, each decided over the whole judged pool: it cannot judge one shard (drop --shard; "
     "--shards N judges each round in N shards)"),
    (["judge", "--endpoint", DEAD, "--shard", "0/2", "--shards", "2"],
     "--shard judges one hash bucket, --shards splits the run into N: give one of them"),
    (["judge", "--endpoint", DEAD, "--strategy", "certify", "--shards", "2"],
     "no target: judging in rounds escalates toward a certified version's target (set target_agreement in the "
     "policy, or give curate judge --target-agreement A"),
    (["judge", "--endpoint", DEAD, "--target-agreement", "0.9"],
     "--target-agreement applies to a strategy that judges in rounds (certify[:K]), not to swap"),
    (["judge", "--endpoint", DEAD, "--strategy", "single", "--risk", "0.1", "--policy", "missing.toml"],
     "--risk and --policy apply to a strategy that judges in rounds (certify[:K]), not to single"),
    (["judge", "--endpoint", DEAD, "--strategy", "certify", "--target-agreement", "1.5"],
     "target_agreement = 1.5: input should be less than 1"),
    (["judge", "--endpoint", DEAD, "--strategy", "certify", "--target-agreement", "0.9", "--risk", "0.9"], "risk = 0.9"),
    (["judge", "--endpoint", DEAD, "--strategy", "certify", "--policy", "missing.toml"],  # a file before the endpoint
     "missing.toml: cannot read the policy"),
    (["judge", "--endpoint", DEAD, "--strategy", "certify", "--target-agreement", "0.9", "--policy", "heuristic.toml"],
     "target_agreement certifies the selection itself: min_abs_margin = 1.5 cannot be set beside it"),
    (["judge", "--endpoint", DEAD, "--strategy", "certify", "--policy", "untargeted.toml"],
     "untargeted.toml sets no target_agreement: judging in rounds escalates toward a certified version's target"),
    # in shards too: each round is split by the pipeline (no refusal of --shards), toward the policy's target
    (["run", "--source", "helpsteer3=hs.jsonl", "--strategy", "certify", "--shards", "2"],
     "no target: judging in rounds escalates toward a certified version's target (set target_agreement in the policy"),
    (["run", "--source", "helpsteer3=hs.jsonl", "--strategy", "certify", "--endpoint", DEAD],
     "no target: judging in rounds escalates toward a certified version's target (set target_agreement in the policy"),
])
def test_refusals_come_first_and_in_order(place, args, said):
    line, _ = _refusal(*args, *(["--warehouse", "w.duckdb"] if "--warehouse" not in args else []), cwd=place)
    assert said in line, line


@pytest.mark.parametrize("endpoint", ["not-a-url", "ftp://gpu-3/v1", "http:///v1"])
def test_an_endpoint_limit_for_what_is_no_endpoint_is_refused(tmp_path, endpoint):
    # before, any string became a global concurrency limit that no judge run would ever hold a slot of
    line, _ = _refusal("endpoint-limit", endpoint, "--slots", "2", cwd=tmp_path)
    assert line == (f"error: not a judge endpoint: {endpoint!r} (an http:// or https:// base URL, e.g. "
                    "http://gpu-3:8000/v1)")


# A policy file that is not exactly one [policy] table of known keys (or its keys alone), not UTF-8, not a
# regular file, or a value of another type: refused in one line, never a default policy run in its place.
BAD_POLICIES = {
    "beside.toml": (b"min_abs_margin = 2.4\n[policy]\nmin_confidence = 0.1\n",
                    "key(s) 'min_abs_margin' beside the [policy] table would be ignored"),
    "scalar.toml": (b"policy = 5\n", "not `policy = 5`"),
    "tables.toml": (b"[[policy]]\nmin_abs_margin = 1.0\n", "not an array of tables [[policy]]"),
    "string.toml": (b'min_abs_margin = "1.0"\n', "min_abs_margin = '1.0': input should be a valid number"),
    "boolean.toml": (b"[policy]\nmin_abs_margin = true\n", "min_abs_margin = True: input should be a valid number"),
    "flag.toml": (b"require_order_agreement = 1\n", "require_order_agreement = 1: input should be a valid boolean"),
    "latin1.toml": (b"min_abs_margin = 1.0  # caf\xe9\n", "latin1.toml: cannot read the policy: not UTF-8 text"),
    "huge.toml": (b"# padding\n" * 200_000, "huge.toml: cannot read the policy: over 1048576 bytes"),
    "fifo": (None, "fifo: cannot read the policy: not a regular file"),
    "/dev/zero": (None, "/dev/zero: cannot read the policy: not a regular file"),
    "folder": (None, "folder: cannot read the policy: not a regular file"),
    "deep.toml": (b"x = " + b"[" * 1000 + b"]" * 1000 + b"\n", "deep.toml: cannot read the policy: nested deeper"),
    "loop.toml": (None, "loop.toml: cannot read the policy: Too many levels of symbolic links"),
}


def _bad_policy(place, name: str) -> str:
    content, _ = BAD_POLICIES[name]
    if name == "fifo":
        os.mkfifo(place / name)  # no writer: opening it to read would block
    elif name == "folder":
        (place / name).mkdir()
    elif name == "loop.toml":
        (place / name).symlink_to(place / name)
    elif content is not None:
        (place / name).write_bytes(content)
    return name


@pytest.mark.parametrize("command", ["build-version", "run"])
@pytest.mark.parametrize("name", list(BAD_POLICIES))
def test_a_bad_policy_file_is_one_line_before_prefect(place, command, name):
    path = _bad_policy(place, name)
    args = ["build-version", "prefs"] if command == "build-version" else [
        "run", "--source", "helpsteer3=hs.jsonl", "--endpoint", DEAD]
    line, _ = _refusal(*args, "--policy", path, "--warehouse", "w.duckdb", cwd=place)
    assert BAD_POLICIES[name][1] in line, line


def test_good_policy_files_and_typed_flags_pass_to_the_next_check(place):
    """An integer for a number is no error, nor are flags (typer has typed them): the refusal is the next one."""
    (place / "int.toml").write_text("[policy]\nmin_abs_margin = 1\nmax_per_source = 3\n")
    line, _ = _refusal("build-version", "prefs", "--policy", "int.toml", "--warehouse", "w.duckdb", cwd=place)
    assert "no judged pairs yet" in line, line
    line, _ = _refusal("build-version", "prefs", "--min-abs-margin", "1.0", "--max-spread", "1", "--max-per-source",
                       "3", "--allow-order-disagreement", "--human-label", "ignore", "--exports", "dpo",
                       "--warehouse", "w.duckdb", cwd=place)
    assert "no judged pairs yet" in line, line


def test_run_refuses_a_bad_hub_target_before_reading_its_sources(place):
    line, _ = _refusal("run", "--source", "helpsteer3=missing.jsonl", "--publish-to", "hf://justname", "--endpoint",
                       DEAD, "--warehouse", "w.duckdb", cwd=place)
    assert "a Hub target is hf://ORG/NAME" in line


@pytest.mark.parametrize("how, settings", [
    # the outside adversary's case: vLLM launched on a folder, served under the judge's name
    (["--launch-vllm"], {"CURATE_VLLM_MODEL_PATH": "/models/tiny-genrm"}),
    # sharded: the workers' servers are not seen here; the plan says what they load
    (["--shards", "2"], {"CURATE_JUDGE_WEIGHTS": "/models/tiny-genrm"}),
])
def test_run_to_the_hub_with_other_weights_is_refused_before_it_starts(place, how, settings):
    args = ["run", "--source", f"helpsteer3={place / 'hs.jsonl'}", *how, "--publish-to", "hf://org/prefs",
            "--warehouse", "w.duckdb"]
    line, _ = _refusal(*args, cwd=place, settings=settings)
    assert line == ("error: the judge serves the weights /models/tiny-genrm, not the published "
                    "nvidia/Qwen3-Nemotron-235B-A22B-GenRM: a version built on its verdicts would not be pushed to "
                    "hf://org/prefs")
    # the published weights from a local mirror are the judge's: the run goes on to the Hub's check
    mirror = {k: "/models/Qwen3-Nemotron-235B-A22B-GenRM" for k in settings}
    lines, report = _probe(*args, cwd=place, settings={**mirror, "HF_ENDPOINT": "http://127.0.0.1:9",
                                                       "CURATE_HUB_RETRIES": "0"})
    assert report["code"] == 2 and report["flows"] == [] and "127.0.0.1:9" in lines[0], lines


@pytest.mark.prefect
def test_a_simulated_version_is_refused_after_the_hub_name_is_checked(dashboard_warehouse, tmp_path):
    warehouse, _, _ = dashboard_warehouse
    bad, _ = _refusal("publish", "dash", "--to", "hf://justname", "--warehouse", str(warehouse), cwd=tmp_path)
    assert "a Hub target is hf://ORG/NAME" in bad  # the name is an argument: said before the version's problem
    simulated, _ = _refusal("publish", "dash", "--to", "hf://org/dash", "--warehouse", str(warehouse), cwd=tmp_path)
    assert "SIMULATED" in simulated and "not pushing it to hf://org/dash" in simulated
    missing, _ = _refusal("publish", "dash", "9", "--to", "hf://org/dash", "--warehouse", str(warehouse),
                          cwd=tmp_path)
    assert "'dash' has no version 9: its versions are v1, v2" in missing


def _read_only_mount(at) -> tuple[str, ...]:
    """A command line that runs what follows it with a read-only filesystem mounted at `at` (a private mount
    namespace: nothing outside sees it)."""
    import shutil

    at.mkdir(exist_ok=True)
    if not shutil.which("unshare") or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("no unprivileged mount namespaces here (unshare -rm)")
    return ("unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o ro none "$0" && exec "$@"', str(at))


def test_run_refuses_a_read_only_publish_folder_before_prefect(place):
    wrap = _read_only_mount(place / "ro")
    line, _ = _refusal("run", "--skip", "ingest", "--skip", "judge", "--publish-to", "ro/out", "--warehouse",
                       "w.duckdb", cwd=place, wrap=wrap)
    assert line == "error: cannot publish to ro/out/preferences: ro is on a read-only filesystem", line


@pytest.mark.prefect
def test_a_version_is_refused_a_target_it_cannot_be_written_to_before_prefect(dashboard_warehouse, tmp_path):
    warehouse, _, _ = dashboard_warehouse
    (tmp_path / "notes.txt").write_text("a file")
    wrap = _read_only_mount(tmp_path / "ro")
    for to, said, under in (("/proc/out", "/proc is a kernel filesystem, not storage", ()),
                            ("/sys/out", "/sys is a kernel filesystem, not storage", ()),
                            ("notes.txt/out", "notes.txt is a file, not a folder", ()),
                            ("ro/out", "ro is on a read-only filesystem", wrap)):
        line, _ = _refusal("publish", "dash", "--to", to, "--warehouse", str(warehouse), cwd=tmp_path,
                           wrap=under)
        assert line.startswith(f"error: cannot publish to {to}/dash/v2-") and line.endswith(said), line
    # HF:// is the Hub, not a folder named `HF:`: the SIMULATED version is refused on its way there
    line, _ = _refusal("publish", "dash", "--to", "HF://org/dash", "--warehouse", str(warehouse), cwd=tmp_path)
    assert "not pushing it to hf://org/dash" in line and not (tmp_path / "HF:").exists()


@pytest.mark.prefect
def test_a_target_that_fills_up_while_written_is_one_line(dashboard_warehouse, tmp_path):
    """A disk that fills up half-way (a 16 KiB filesystem): the write fails inside the flow, which says so in
    one line with the cause."""
    import shutil

    source, _, _ = dashboard_warehouse
    warehouse = tmp_path / "w.duckdb"
    shutil.copy(source, warehouse)  # the publish records itself: not in the shared warehouse
    (tmp_path / "small").mkdir()
    wrap = _read_only_mount(tmp_path / "small")
    small = (*wrap[:4], wrap[4].replace("-o ro", "-o size=16k"), *wrap[5:])
    lines, report = _probe("publish", "dash", "--to", "small", "--warehouse", str(warehouse), cwd=tmp_path, wrap=small)
    assert report["code"] == 2 and len(lines) == 1 and not any("Traceback" in x for x in lines), lines
    assert lines[0].startswith("error: cannot publish to small/dash/v2-"), lines
    assert "No space left on device" in lines[0], lines


@pytest.mark.parametrize(("toml", "said"), [
    ('[sources."a\\nb"]\npath = "a.jsonl"\nlicense = "mit"\n', "[sources.a\\nb] name: not a valid source name"),
    ('[sources.x]\npath = "a.jsonl"\nlicense = "mit"\ndescription = "\\u001b[2J"\n',
     "control character \\x1b (a string ('\\x1b[2J'))"),
    ("[sources.x]\nlabel = { a = " + "[" * 1000 + "]" * 1000 + " }\n", "not valid TOML: nested deeper than 16 levels"),
])
def test_a_hostile_sources_file_is_one_escaped_line(tmp_path, toml, said):
    (tmp_path / "s.toml").write_text(toml)
    line, _ = _refusal("sources", "--sources-file", "s.toml", cwd=tmp_path)
    assert said in line and "\x1b" not in line, line


@pytest.mark.parametrize("kind", ["loop", "fifo", "device"])
def test_a_declared_path_that_is_no_file_says_what_it_is(tmp_path, kind):
    path = {"loop": tmp_path / "loop.jsonl", "fifo": tmp_path / "fifo.jsonl", "device": tmp_path / "zero.jsonl"}[kind]
    if kind == "loop":
        path.symlink_to(path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    (tmp_path / "s.toml").write_text(f'[sources.x]\npath = "{path.name}"\nformat = "trl"\nlicense = "mit"\n')
    line, _ = _refusal("ingest", "--source", "x", "--sources-file", "s.toml", "--warehouse", "w.duckdb", cwd=tmp_path)
    said = {"loop": "cannot read it: Too many levels of symbolic links", "fifo": "not a regular file or folder but a FIFO",
            "device": "not a regular file or folder but a device"}[kind]
    assert f"{path.name}: {said}" in line and "no such file" not in line, line


@pytest.mark.prefect
def test_a_version_of_a_source_the_warehouse_does_not_hold_is_refused_before_prefect(dashboard_warehouse, tmp_path):
    """`sources` naming a source no pair comes from: the refusal the version's selection makes (a deployment's build)
    is made before Prefect starts, in the same words, from the warehouse opened read-only."""
    from prefect.logging import disable_run_logger

    from common.errors import InvalidInputError
    from flows.versions import build_version

    warehouse, _, _ = dashboard_warehouse
    line, _ = _refusal("build-version", "dash", "--sources", "nope", "--warehouse", str(warehouse), cwd=tmp_path)
    assert "sources 'nope': no pair judged under jc-" in line and line.endswith("(judged: arena, helpsteer3)"), line
    with disable_run_logger(), pytest.raises(InvalidInputError) as caught:
        build_version.fn("dash", policy_overrides={"sources": ["nope"]}, warehouse=str(warehouse))
    assert line == f"error: {caught.value}"

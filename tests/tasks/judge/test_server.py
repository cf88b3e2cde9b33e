import sys

import pytest

from tasks.judge.server import ManagedServer, ServerStartError, VllmLaunch, vllm_command
from testing.genrm_standin import StandinConfig, standin_command


def test_vllm_command_line_follows_the_reference_deployment():
    argv = vllm_command(VllmLaunch(tensor_parallel_size=4, data_parallel_size=2, port=5001, max_num_seqs=96))
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    text = " ".join(argv)
    for part in ("--model nvidia/Qwen3-Nemotron-235B-A22B-GenRM", "--trust-remote-code", "--seed 1",
                 "--served-model-name nvidia/Qwen3-Nemotron-235B-A22B-GenRM", "--tensor-parallel-size 4",
                 "--data-parallel-size 2", "--max-model-len 40000", "--gpu-memory-utilization 0.95", "--port 5001",
                 "--max-num-seqs 96"):
        assert part in text


def test_managed_server_reports_a_crash_at_start_up_with_its_output():
    argv = [sys.executable, "-c", "import sys; print('no GPU here', flush=True); sys.exit(3)"]
    with pytest.raises(ServerStartError, match="(?s)exited with code 3.*no GPU here"):
        with ManagedServer(argv, "http://127.0.0.1:9", startup_timeout=20):
            pass


def test_managed_server_starts_and_stops_the_standin_through_the_same_code():
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with ManagedServer(standin_command(port, config=StandinConfig(capacity=2)), f"http://127.0.0.1:{port}", startup_timeout=60) as server:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as response:
            assert b"SIMULATED" in response.read()
        pid = server.pid
    assert server.process.poll() is not None  # stopped by its id when the block ends
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
    assert pid

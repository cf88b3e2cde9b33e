"""Where verdicts come from: the servers a caller lets a run start are the ones it can start."""

from contextlib import nullcontext

import pytest

from common.settings import Settings
from tasks.judge.config import JudgeConfig
from tasks.judge.endpoints import NoEndpointError
from tasks.judge.targets import LAUNCHERS, judge_targets, launcher


def test_only_vllm_is_built_in_and_another_server_comes_from_the_caller():
    assert set(LAUNCHERS) == {"vllm"}
    with pytest.raises(ValueError, match="launch must be vllm, not 'standin'"):
        launcher("standin", Settings(), JudgeConfig(), 5000)
    started = []

    def fake(settings, config, port):
        started.append(port)
        return nullcontext(), f"http://127.0.0.1:{port}/v1"

    server, targets = judge_targets(["http://gpu:5000/v1"], "fake", 5123, Settings(), JudgeConfig(),
                                    {**LAUNCHERS, "fake": fake})
    assert targets == ["http://gpu:5000/v1", "http://127.0.0.1:5123/v1"] and started == [5123]
    assert launcher(None, Settings(), JudgeConfig(), 1)[1] is None  # nothing asked, nothing started


def test_no_endpoint_and_no_server_is_refused():
    with pytest.raises(NoEndpointError):
        judge_targets(None, None, None, Settings(judge_endpoints=[], judge_launch=None), JudgeConfig())

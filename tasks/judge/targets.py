"""Where verdicts come from: the judge configuration the settings name, the endpoints given or a server
this worker starts itself (vLLM, or the stand-in), and the check that they answer and serve that judge."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace

from common.errors import InvalidInputError
from common.settings import Settings
from tasks.judge.config import JudgeConfig
from tasks.judge.endpoints import NoEndpointError, check_endpoints
from tasks.judge.server import ManagedServer, VllmLaunch, require_vllm, vllm_command

_log = logging.getLogger(__name__)


def judge_config_from(settings: Settings, simulated: bool | None = None) -> JudgeConfig:
    """The configuration the settings describe (`simulated` as the endpoint check found it)."""
    return JudgeConfig(model=settings.judge_model, served_revision=settings.judge_served_revision,
                       temperature=settings.judge_temperature, top_p=settings.judge_top_p,
                       max_tokens=settings.judge_max_tokens,
                       simulated=settings.judge_simulated if simulated is None else simulated)


def launcher(launch: str | None, settings: Settings, config: JudgeConfig,
             port: int) -> tuple[AbstractContextManager, str | None]:
    """(server context, endpoint) for a server this worker starts itself; none unless asked."""
    if launch in (None, "", "none"):
        return nullcontext(), None
    base = f"http://127.0.0.1:{port}"
    if launch == "vllm":
        require_vllm()
        argv = vllm_command(VllmLaunch(
            model=config.model, tensor_parallel_size=settings.vllm_tensor_parallel_size,
            data_parallel_size=settings.vllm_data_parallel_size, max_model_len=settings.judge_max_model_len,
            gpu_memory_utilization=settings.vllm_gpu_memory_utilization, port=port,
            max_num_seqs=settings.judge_max_in_flight,
            revision=None if config.served_revision == "main" else config.served_revision,
        ))
        return ManagedServer(argv, base, name="vLLM"), f"{base}/v1"
    if launch == "standin":  # tests and demos only: the stand-in lives in the testing package
        from testing.genrm_standin import StandinProcess

        return StandinProcess(port=port), f"{base}/v1"
    raise InvalidInputError(f"launch must be vllm or standin, not {launch!r}")


def judge_targets(endpoints: list[str] | None, launch: str | None, port: int | None, settings: Settings,
                  config: JudgeConfig) -> tuple[AbstractContextManager, list[str]]:
    """(server context, endpoints): the given ones or the settings', plus a server started here."""
    server, launched = launcher(launch or settings.judge_launch, settings, config, port or settings.vllm_port)
    targets = list(endpoints or settings.judge_endpoints) + ([launched] if launched else [])
    if not targets:
        raise NoEndpointError("no judge endpoint")
    return server, targets


def checked_targets(targets: list[str], config: JudgeConfig, settings: Settings,
                    log: logging.Logger | logging.LoggerAdapter | None = None) -> tuple[list[str], JudgeConfig]:
    """The endpoints that answer (refusing when none does, or one serves another model), and the
    configuration marked simulated when they serve the stand-in."""
    log = log or _log
    report = check_endpoints(targets, config.model, allow_other_model=settings.judge_allow_other_model,
                             timeout=settings.judge_check_timeout)
    for p in report.unreachable:
        log.warning("judge endpoint %s does not answer (%s): judging with the others", p.url, p.error)
    if report.simulated:
        log.warning("the judge endpoints serve the SIMULATED stand-in: its verdicts are marked simulated")
    return report.usable, replace(config, simulated=report.simulated)

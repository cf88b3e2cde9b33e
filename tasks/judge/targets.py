"""Where verdicts come from: the judge configuration the settings name, the endpoints given or a server
this worker starts itself, and the check that they answer and serve that judge.

This module starts vLLM; a caller that may start another server (the flows start the stand-in for tests and
demos) passes its launcher in, so that nothing here depends on what sits above it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace

from common.errors import InvalidInputError
from common.settings import Settings
from tasks.judge.config import JudgeConfig
from tasks.judge.endpoints import EndpointCheckError, EndpointReport, NoEndpointError, check_judge
from tasks.judge.server import ManagedServer, VllmLaunch, detect_device, require_vllm, vllm_command, vllm_env
from tasks.judge.weights import served_weights, weights_words

# (settings, configuration, port) -> (the server as a context, its OpenAI base URL)
Launcher = Callable[[Settings, JudgeConfig, int], tuple[AbstractContextManager, str]]

_log = logging.getLogger(__name__)


def judge_config_from(settings: Settings, report: EndpointReport | None = None) -> JudgeConfig:
    """The configuration the settings describe, and what the endpoint check found (simulated, the template's
    fingerprint, the weights) when there was one."""
    return JudgeConfig(model=settings.judge_model, served_revision=settings.judge_served_revision,
                       temperature=settings.judge_temperature, top_p=settings.judge_top_p,
                       max_tokens=settings.judge_max_tokens,
                       simulated=settings.judge_simulated if report is None else report.simulated,
                       template=(settings.judge_template or "") if report is None else (report.template or ""),
                       weights=planned_weights(settings) if report is None else report.weights)


def planned_weights(settings: Settings) -> str:
    """The weights a sharded plan is for: CURATE_JUDGE_WEIGHTS (the workers' servers' root) read by the rule a
    server's root is (a mirror of the published weights is the published weights), "" when unset."""
    return served_weights(settings.judge_weights, settings.judge_model) if settings.judge_weights else ""


def vllm_server(settings: Settings, config: JudgeConfig, port: int) -> tuple[AbstractContextManager, str]:
    """vLLM's OpenAI server on this host, as the settings describe it (refused at once when vLLM is missing)."""
    spec = vllm_launch(settings, config, port)
    require_vllm(spec.python)
    base = f"http://127.0.0.1:{port}"
    return (ManagedServer(vllm_command(spec), base, name=f"vLLM ({spec.device})", env=vllm_env(spec),
                          startup_timeout=settings.vllm_startup_timeout), f"{base}/v1")


LAUNCHERS: dict[str, Launcher] = {"vllm": vllm_server}


def launcher(launch: str | None, settings: Settings, config: JudgeConfig, port: int,
             launchers: Mapping[str, Launcher] = LAUNCHERS) -> tuple[AbstractContextManager, str | None]:
    """(server context, endpoint) for a server this worker starts itself, by its name in `launchers`; none
    unless asked."""
    if launch in (None, "", "none"):
        return nullcontext(), None
    if launch not in launchers:
        raise InvalidInputError(f"launch must be {' or '.join(launchers)}, not {launch!r}")
    return launchers[launch](settings, config, port)


def vllm_launch(settings: Settings, config: JudgeConfig, port: int) -> VllmLaunch:
    """vLLM's launch as the settings describe it: the judge's weights (or a local folder) served under the
    judge's name, on this host's GPUs, or on its CPUs with vLLM's CPU build."""
    return VllmLaunch(
        model=settings.vllm_model_path or config.model, served_model_name=config.model,
        tensor_parallel_size=settings.vllm_tensor_parallel_size, data_parallel_size=settings.vllm_data_parallel_size,
        max_model_len=settings.judge_max_model_len, gpu_memory_utilization=settings.vllm_gpu_memory_utilization,
        port=port, max_num_seqs=settings.judge_max_in_flight,
        revision=None if config.served_revision == "main" else config.served_revision,
        python=settings.vllm_python or sys.executable, device=detect_device(settings.vllm_device),
        chat_template=settings.vllm_chat_template, reasoning_parser=settings.vllm_reasoning_parser,
    )


def launched_weights(settings: Settings, config: JudgeConfig) -> str:
    """The weights a vLLM launched as the settings say will serve, known before it starts: vLLM reports its
    `--model` as the root ("" for the judge's published weights, `weights.served_weights`)."""
    return served_weights(vllm_launch(settings, config, settings.vllm_port).model, config.model)


def judge_targets(endpoints: list[str] | None, launch: str | None, port: int | None, settings: Settings,
                  config: JudgeConfig, launchers: Mapping[str, Launcher] = LAUNCHERS,
                  ) -> tuple[AbstractContextManager, list[str]]:
    """(server context, endpoints): the given ones or the settings', plus a server started here (`launch` names
    it in `launchers`)."""
    server, launched = launcher(launch or settings.judge_launch, settings, config, port or settings.vllm_port,
                                launchers)
    targets = list(endpoints or settings.judge_endpoints) + ([launched] if launched else [])
    if not targets:
        raise NoEndpointError("no judge endpoint")
    return server, targets


def checked_targets(targets: list[str], config: JudgeConfig, settings: Settings,
                    log: logging.Logger | logging.LoggerAdapter | None = None) -> tuple[list[str], JudgeConfig]:
    """The endpoints that pass the preflight (refusing when none answers, one serves another model, a context
    is too small or a template drops an answer), and the configuration with what it found: simulated when
    they serve the stand-in, the fingerprint of their chat template, and the weights they loaded."""
    log = log or _log
    report = check_judge(targets, settings)
    for p in report.unreachable:
        log.warning("judge endpoint %s does not answer (%s): judging with the others", p.url, p.error)
    for url in report.untokenized:
        log.warning("judge endpoint %s has no /tokenize: its chat template is unchecked and prompt budgets are "
                    "estimated", url)
    if report.simulated:
        log.warning("the judge endpoints serve the SIMULATED stand-in: its verdicts are marked simulated")
    if report.weights:
        log.warning("the judge endpoints serve %s, not the published %s: their verdicts are filed under a "
                    "configuration of their own", weights_words(report.weights), config.model)
    return report.usable, replace(config, simulated=report.simulated, template=report.template or "",
                                  weights=report.weights)


def refuse_unplanned(plan: JudgeConfig, served: JudgeConfig) -> None:
    """A GPU worker judges a shard only with servers of the plan's configuration: the orchestrator does not see
    them, so what they are (the stand-in or a real judge, their weights, the chat template where the plan pins
    one) is checked here against what the plan records."""
    if served.simulated != plan.simulated:
        raise EndpointCheckError(
            f"this worker's endpoints serve {'the SIMULATED stand-in' if served.simulated else 'a real judge'}"
            f" but the plan is for {'simulated' if plan.simulated else 'real'} verdicts ({plan.id})",
            hint="point the worker at the judge the plan names (CURATE_JUDGE_SIMULATED on the orchestrator)")
    if served.weights != plan.weights:
        raise EndpointCheckError(
            f"this worker's endpoints serve {weights_words(served.weights, plan.model)} but the plan is for "
            f"{weights_words(plan.weights, plan.model)} ({plan.id})",
            hint="point the worker at the weights the plan names (CURATE_JUDGE_WEIGHTS on the orchestrator: the "
                 "servers' /v1/models root)")
    if plan.template and served.template != plan.template:
        raise EndpointCheckError(
            f"this worker's endpoints render the probe pair as {served.template or 'unknown'}, but the "
            f"plan pins the chat template {plan.template} ({plan.id})",
            hint="serve the chat template the plan names (CURATE_JUDGE_TEMPLATE on the orchestrator)")

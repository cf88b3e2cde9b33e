"""Before judging: does each endpoint answer, and does it serve the configured judge?

`GET /v1/models` with a short time-out, so that a mistyped or dead endpoint is reported in seconds rather
than after the client's retries and cool-downs. A server that names itself SIMULATED (the stand-in) is
accepted as what it is: its verdicts are marked simulated wherever they go. Any other model than the
configured judge is refused unless allowed, since its verdicts would be filed under the wrong judge.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from common.errors import UserError

SIMULATED_MARK = "SIMULATED"


class EndpointCheckError(UserError):
    """No endpoint answers, or one serves a model other than the configured judge."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class NoEndpointError(UserError):
    """Judging was asked for with nowhere to send the requests."""

    hint = "pass --endpoint URL (repeatable) or --launch-vllm; a GPU worker: set CURATE_JUDGE_ENDPOINTS or CURATE_JUDGE_LAUNCH"


@dataclass(frozen=True)
class Probe:
    url: str
    served: list[str] = field(default_factory=list)
    error: str | None = None  # why it did not answer

    @property
    def simulated(self) -> bool:
        return any(SIMULATED_MARK in m for m in self.served)


@dataclass(frozen=True)
class EndpointReport:
    usable: list[str]  # the endpoints to judge with, in the order given
    unreachable: list[Probe]
    served: dict[str, list[str]]  # endpoint -> models it serves
    simulated: bool  # they serve the SIMULATED stand-in


def is_simulated_model(name: str | None) -> bool:
    return bool(name) and SIMULATED_MARK in name


def probe(url: str, timeout: float, api_key: str = "EMPTY") -> Probe:
    """The models an OpenAI-compatible endpoint serves, or why it did not say."""
    import openai

    try:
        with openai.OpenAI(base_url=url, api_key=api_key, timeout=timeout, max_retries=0) as client:
            return Probe(url, [m.id for m in client.models.list()])
    except openai.APIStatusError as err:
        return Probe(url, error=f"HTTP {err.status_code}")
    except openai.APITimeoutError:
        return Probe(url, error=f"no answer within {timeout:g} s")
    except openai.APIConnectionError as err:
        cause = err.__cause__ or err
        return Probe(url, error=f"cannot connect ({type(cause).__name__}: {str(cause)[:120]})")
    except Exception as err:  # noqa: BLE001 - anything else is still "not usable", said once
        return Probe(url, error=f"{type(err).__name__}: {str(err)[:120]}")


def check_endpoints(urls: list[str], model: str, *, allow_other_model: bool = False, timeout: float = 5.0,
                    api_key: str = "EMPTY") -> EndpointReport:
    """Probe every endpoint at once; judge with those that answer. Refuses when none answers, when one
    serves another model (unless `allow_other_model`), or when real and SIMULATED servers are mixed."""
    if not urls:
        raise NoEndpointError("no judge endpoint")
    with ThreadPoolExecutor(max_workers=min(16, len(urls))) as pool:
        probes = list(pool.map(lambda u: probe(u, timeout, api_key), urls))
    answered = [p for p in probes if p.error is None]
    down = [p for p in probes if p.error is not None]
    if not answered:
        raise EndpointCheckError(
            "no judge endpoint answers: " + "; ".join(f"{p.url}: {p.error}" for p in down),
            hint="is the server up, and is the URL its OpenAI base (ending in /v1)? nothing was judged")
    for p in answered:
        if model not in p.served and not p.simulated and not allow_other_model:
            raise EndpointCheckError(
                f"{p.url} serves {', '.join(p.served) or 'no model'}, not the configured judge {model}",
                hint="start the server with --served-model-name set to the judge, set CURATE_JUDGE_MODEL, "
                     "or pass --allow-other-model")
    kinds = {p.simulated for p in answered}
    if len(kinds) > 1:
        raise EndpointCheckError(
            "the endpoints mix the SIMULATED stand-in with real servers: "
            + ", ".join(f"{p.url} ({', '.join(p.served)})" for p in answered),
            hint="judge with one kind at a time: simulated verdicts are kept apart from real ones")
    return EndpointReport([p.url for p in answered], down, {p.url: p.served for p in answered}, kinds.pop())

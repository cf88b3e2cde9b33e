"""Before judging: does each endpoint answer, does it serve the configured judge, can its context hold the
judge's budget, and does its chat template show the judge both answers (`preflight.py`)?

`GET /v1/models` with a short time-out, so that a mistyped or dead endpoint is reported in seconds rather
than after the client's retries and cool-downs. A server that names itself SIMULATED (the stand-in) is
accepted as what it is: its verdicts are marked simulated wherever they go. Any other model than the
configured judge is refused unless allowed, since its verdicts would be filed under the wrong judge. What a
server loaded (its `root`) is read too: weights other than the judge's published ones are named in the judge
configuration (`weights.py`), and endpoints that serve different weights are not mixed.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from common.errors import UserError
from common.settings import Settings
from common.tls import tls_context
from tasks.judge.kinds import GENRM, KINDS, REWARD_MODEL, JudgeKind
from tasks.judge.preflight import TemplateProbe, api_problem, context_problem
from tasks.judge.weights import served_weights, weights_words

SIMULATED_MARK = "SIMULATED"


class EndpointCheckError(UserError):
    """No endpoint answers, or one serves a model other than the configured judge."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class NoEndpointError(UserError):
    """Judging was asked for with nowhere to send the requests."""

    hint = "pass --endpoint URL (repeatable) or --launch-vllm; a GPU worker: set CURATE_JUDGE_ENDPOINTS or CURATE_JUDGE_LAUNCH"


def require_endpoint(urls: list[str] | None, launch: str | None, settings: Settings) -> None:
    """A judge to ask: an endpoint given, CURATE_JUDGE_ENDPOINTS, or a server the run starts itself."""
    if not (urls or launch or settings.judge_endpoints or settings.judge_launch):
        raise NoEndpointError("no judge endpoint")


@dataclass(frozen=True)
class Probe:
    url: str
    served: list[str] = field(default_factory=list)
    error: str | None = None  # why it did not answer
    contexts: dict[str, int] = field(default_factory=dict)  # model -> max_model_len, where the server says
    roots: dict[str, str] = field(default_factory=dict)  # model -> what the server loaded, where it says

    @property
    def simulated(self) -> bool:
        return any(SIMULATED_MARK in m for m in (*self.served, *self.roots.values()))


@dataclass(frozen=True)
class EndpointReport:
    usable: list[str]  # the endpoints to judge with, in the order given
    unreachable: list[Probe]
    served: dict[str, list[str]]  # endpoint -> models it serves
    simulated: bool  # they serve the SIMULATED stand-in
    template: str | None = None  # the fingerprint of the rendered probe, the same on every endpoint
    untokenized: list[str] = field(default_factory=list)  # endpoints without /tokenize: budgets estimated
    contexts: dict[str, int | None] = field(default_factory=dict)  # endpoint -> its served context
    probe_tokens: int | None = None  # the probe pair's prompt tokens
    weights: str = ""  # what every endpoint loaded, where not the judge's published weights (`weights.py`)


def is_simulated_model(name: str | None) -> bool:
    return bool(name) and SIMULATED_MARK in name


def probe(url: str, timeout: float, api_key: str = "EMPTY") -> Probe:
    """The models an OpenAI-compatible endpoint serves, or why it did not say."""
    import httpx2
    import openai

    try:
        with openai.OpenAI(base_url=url, api_key=api_key, timeout=timeout, max_retries=0,
                           http_client=httpx2.Client(timeout=timeout, verify=tls_context())) as client:
            models = list(client.models.list())
        contexts, roots = {}, {}
        for m in models:
            extra = m.model_extra or {}
            value = extra.get("max_model_len")
            if isinstance(value, int) and not isinstance(value, bool):
                contexts[m.id] = value
            if isinstance(extra.get("root"), str):
                roots[m.id] = extra["root"]
        return Probe(url, [m.id for m in models], contexts=contexts, roots=roots)
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
                    api_key: str = "EMPTY", max_model_len: int | None = None, max_tokens: int | None = None,
                    probe_templates: bool = True, kind: JudgeKind | None = None) -> EndpointReport:
    """Probe every endpoint at once; judge with those that answer. Refuses when none answers, when one does not
    serve the kind's API (`_serves_api`: a generative model given as the reward model, a pooling model given as the
    GenRM), when one serves another model (unless `allow_other_model`), when real and SIMULATED servers are mixed,
    or servers of different weights (the report names the weights where they are not the judge's published ones),
    when one's context cannot hold `max_model_len` (the prompt budget + `max_tokens`), when one's chat template
    drops an answer, or when the endpoints render the probe differently. `kind`: the judge kind they serve (the
    GenRM unless said), whose probes ask what it needs."""
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
    if probe_templates:
        _serves_api(answered, kind or GENRM, timeout)
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
    simulated = kinds.pop()
    weights = {p.url: "" if simulated else served_weights(p.roots.get(_model_of(p, model)), model) for p in answered}
    if len(set(weights.values())) > 1:
        raise EndpointCheckError(
            "the endpoints serve different weights: " + ", ".join(
                f"{url} ({weights_words(w, model)})" for url, w in weights.items()),
            hint="judge with servers of one configuration at a time: verdicts are filed by the weights that gave them")
    contexts = {p.url: p.contexts.get(_model_of(p, model)) for p in answered}
    if max_model_len is not None and max_tokens is not None:
        for url, served in contexts.items():
            problem = context_problem(url, served, max_model_len, max_tokens)
            if problem:
                raise EndpointCheckError(problem, hint="nothing was sent to the server")
    report = EndpointReport([p.url for p in answered], down, {p.url: p.served for p in answered}, simulated,
                            contexts=contexts, weights=next(iter(weights.values())))
    return _with_templates(report, answered, model, timeout, kind or GENRM) if probe_templates else report


def _serves_api(answered: list[Probe], kind: JudgeKind, timeout: float) -> None:
    """Refuses a server that does not serve `kind`'s API (a generative model given as the reward model, a pooling
    model given as the GenRM), asked before anything else is (`preflight.api_problem`)."""
    with ThreadPoolExecutor(max_workers=min(16, len(answered))) as pool:
        others = [k.path for k in KINDS.values() if k.path != kind.path]
        wrong = [(p.url, why) for p, why in zip(answered, pool.map(
            lambda p: api_problem(p.url, kind.path, others, timeout), answered)) if why]
    if wrong:
        url, why = wrong[0]
        raise EndpointCheckError(
            f"{url} does not serve {kind.said}'s API ({why}): "
            + {GENRM.name: "it generates nothing (a pooling model), so it cannot be the GenRM",
               REWARD_MODEL.name: "it is not a pooling model, so it cannot be the reward model"}.get(
                   kind.name, f"it cannot be {kind.said}"),
            hint="give --endpoint the GenRM (vLLM's chat API) and --rm-endpoint a reward model served with "
                 "--runner pooling; nothing was judged")


def _model_of(p: Probe, model: str) -> str:
    return model if model in p.served or not p.served else p.served[0]


def _with_templates(report: EndpointReport, answered: list[Probe], model: str, timeout: float,
                    kind: JudgeKind = GENRM) -> EndpointReport:
    """The report with each endpoint's template probe (its kind's); refuses a template that drops an answer."""
    with ThreadPoolExecutor(max_workers=min(16, len(answered))) as pool:
        probes: list[TemplateProbe] = list(pool.map(lambda p: kind.probe(p.url, _model_of(p, model), timeout),
                                                    answered))
    if kind is not GENRM:
        for t in probes:
            if (t.tokenizes and t.error) or t.missing:
                raise EndpointCheckError(
                    f"{t.url}'s chat template does not render {kind.said}'s probe conversation with its answer"
                    f"{': ' + t.error if t.error else ''}",
                    hint=f"serve {kind.said} with its own chat template; nothing was judged")
    for t in probes:
        if t.tokenizes and t.error:
            raise EndpointCheckError(f"{t.url} could not render a probe pair through its chat template: {t.error}",
                                     hint="serve the GenRM with a chat template that renders the roles response_1 "
                                          "and response_2; nothing was judged")
        if t.missing:
            raise EndpointCheckError(
                f"{t.url}'s chat template drops {' and '.join(t.missing)}: a probe pair's answers are missing from "
                "the prompt it renders, so the judge would see neither answer",
                hint="serve the GenRM with its own chat template, which renders the roles response_1 and "
                     "response_2 (vLLM --chat-template FILE); nothing was judged")
    prints = {t.fingerprint for t in probes if t.tokenizes}
    if len(prints) > 1:
        raise EndpointCheckError(
            "the endpoints render the same probe pair differently (another chat template or tokenizer): "
            + ", ".join(f"{t.url} {t.fingerprint}" for t in probes if t.tokenizes),
            hint="judge with servers of one configuration at a time")
    counts = [t.prompt_tokens for t in probes if t.prompt_tokens is not None]
    return replace(report, template=prints.pop() if prints else None,
                   untokenized=[t.url for t in probes if not t.tokenizes], probe_tokens=counts[0] if counts else None)


def check_judge(urls: list[str], settings: Settings) -> EndpointReport:
    """The preflight of a judge run as the settings describe it."""
    return check_endpoints(urls, settings.judge_model, allow_other_model=settings.judge_allow_other_model,
                           timeout=settings.judge_check_timeout, max_model_len=settings.judge_max_model_len,
                           max_tokens=settings.judge_max_tokens)

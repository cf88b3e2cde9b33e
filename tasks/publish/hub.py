"""Publish a built dataset folder to the Hugging Face Hub as one commit, pinned by an immutable tag.

The flow is idempotent per tag: when the tag already exists on the Hub the folder is not uploaded again and
the existing tag's commit is reported (`already_published=True`). Otherwise every file of the folder goes in
ONE commit (relative paths preserved) and the tag is created at that commit.

Each Hub call is retried with exponential back-off on HTTP 429, 5xx and connection/time-out errors, never on
other 4xx. Whatever fails ends as a `PublishError` naming the repo and the step. The endpoint comes from the
`HF_ENDPOINT` environment variable, read by huggingface_hub itself. The token is never logged and is scrubbed
from every message this module produces.

A Hub that cannot be reached is found first, by one request with a short connect time-out (huggingface_hub's
own calls have none), and network errors are retried for `network_budget` seconds in all, over every step: an
offline host fails in seconds with "cannot reach the Hugging Face Hub at ...", not after each step's back-off.
When no token is found, the error's hint says `HF_TOKEN` is not set.

Caveat: a commit whose response is lost (connection dropped after the Hub accepted it) is re-sent on retry,
which may add a second commit with the same content; the tag is then placed on the commit that answered.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub import constants as hf_constants
from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
from huggingface_hub.utils import get_session
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from common.errors import UserError

logger = logging.getLogger(__name__)

DEFAULT_TOKEN_BLOCK = "hf-token"
TOKEN_BLOCK_ENV = "CURATE_HF_TOKEN_BLOCK"
MAX_RETRY_WAIT = 60.0
NETWORK_BUDGET = 10.0  # seconds one publish keeps retrying network errors, all steps together
REACH_TIMEOUT = httpx2.Timeout(10.0, connect=5.0)  # the reachability check's; the Hub calls themselves have none

T = TypeVar("T")


class PublishError(UserError, RuntimeError):
    """A Hub step failed for good (non-retryable error, or retries exhausted)."""

    def __init__(self, message: str, *, repo_id: str, step: str, status_code: int | None = None,
                 hint: str | None = None):
        super().__init__(message)
        self.repo_id = repo_id
        self.step = step
        self.status_code = status_code
        self.hint = hint


@dataclass
class HubPublication:
    repo_id: str
    tag: str
    commit: str
    already_published: bool
    url: str


def resolve_hf_token(explicit: str | None = None) -> str | None:
    """The explicit token, else env `HF_TOKEN`, else the Prefect Secret block named by env
    `CURATE_HF_TOKEN_BLOCK` (default "hf-token") if one exists; None when none is found."""
    if explicit:
        return explicit
    env_token = os.environ.get("HF_TOKEN")
    if env_token:
        return env_token
    block_name = os.environ.get(TOKEN_BLOCK_ENV) or DEFAULT_TOKEN_BLOCK
    try:
        from prefect.blocks.system import Secret

        value = Secret.load(block_name).get()
    except Exception as exc:  # noqa: BLE001 - no block, no Prefect API, wrong type...: no token
        logger.debug("No Hub token from Prefect Secret block %r (%s)", block_name, type(exc).__name__)
        return None
    if isinstance(value, str) and value:
        return value
    return None


def token_found(explicit: str | None) -> bool:
    """Whether huggingface_hub will send a token: the one given, `HF_TOKEN`, or one stored by `hf auth login`.
    Looked up without the network (huggingface_hub's own look-up may refresh a token online)."""
    if explicit or os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN"):
        return True
    try:
        return bool(Path(hf_constants.HF_TOKEN_PATH).read_text().strip())
    except OSError:
        return False


def _no_token_hint(repo_id: str) -> str:
    org = repo_id.partition("/")[0]
    return (f"HF_TOKEN is not set and no token is stored by `hf auth login`: publishing also needs a token with "
            f"write access to {org} (HF_TOKEN, or the Prefect Secret block "
            f"{os.environ.get(TOKEN_BLOCK_ENV) or DEFAULT_TOKEN_BLOCK!r})")


def _status_code(exc: BaseException) -> int | None:
    if isinstance(exc, HfHubHTTPError):
        response = getattr(exc, "response", None)
        if response is not None:
            return response.status_code
    return None


def _is_retryable(exc: BaseException) -> bool:
    status = _status_code(exc)
    if status is not None:
        return status == 429 or status >= 500
    if isinstance(exc, OfflineModeIsEnabled):  # a ConnectionError subclass, but retrying cannot help
        return False
    # Connection refused/reset, DNS, time-outs, server hanging up mid-response.
    return isinstance(exc, (httpx2.TransportError, ConnectionError, TimeoutError))


def _unreachable(exc: BaseException) -> bool:
    """No conversation with the Hub happened at all: the name does not resolve, nothing listens, no answer to the
    connection, a proxy that refuses. (A connection lost mid-answer is retryable, but the Hub was there.)"""
    if isinstance(exc, OfflineModeIsEnabled):
        return False
    return isinstance(exc, (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.ProxyError, ConnectionRefusedError))


def network_reason(exc: BaseException, host: str) -> str:
    """What stopped the connection, in words, with the system's own text."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lowered = text.lower()
    if any(k in lowered for k in ("name or service not known", "temporary failure in name resolution",
                                  "nodename nor servname", "no address associated", "getaddrinfo")):
        return f"the name {host} does not resolve ({text})"
    if "connection refused" in lowered:
        return f"the connection to {host} was refused ({text})"
    if isinstance(exc, httpx2.TimeoutException):
        return f"{host} did not answer in time ({type(exc).__name__})"
    return text


class _NetworkBudget:
    """Seconds a publish may spend on network failures, over all its steps, counted from the start of the
    first attempt that failed on the network: retrying stops when the next wait would go past it."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self.since: float | None = None

    def spent(self, started: float, upcoming_sleep: float) -> bool:
        if self.since is None:
            self.since = started
        return self.clock() - self.since + upcoming_sleep > self.seconds

    def stop(self, state: RetryCallState) -> bool:
        """A tenacity stop condition: only network errors draw on the budget."""
        exc = state.outcome.exception() if state.outcome is not None else None
        if exc is None or _status_code(exc) is not None:
            return False
        return self.spent(state.start_time, state.upcoming_sleep)


def _scrub(text: str, token: str | None) -> str:
    if token:
        text = text.replace(token, "***")
    return text


def _describe(exc: BaseException, token: str | None) -> str:
    status = _status_code(exc)
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    detail = f"HTTP {status}" if status is not None else type(exc).__name__
    if first_line:
        detail = f"{detail}: {first_line}"
    return _scrub(detail, token)


def _call(
    step: str,
    fn: Callable[[], T],
    *,
    repo_id: str,
    token: str | None,
    retries: int,
    retry_wait: float,
    sleep: Callable[[float], Any],
    budget: _NetworkBudget | None = None,
    endpoint: str | None = None,
) -> T:
    """Run one Hub step with retries; any final failure becomes a PublishError (token-free)."""
    attempts = max(0, retries) + 1
    budget = budget or _NetworkBudget(NETWORK_BUDGET)
    endpoint = endpoint or hf_constants.ENDPOINT
    tries = [0]

    def _attempt() -> T:
        tries[0] += 1
        return fn()

    def _before_sleep(state: Any) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        # A network retry ends within seconds, in one line if it fails; a 429/5xx back-off can be long: news.
        level = logging.INFO if exc is not None and _status_code(exc) is None else logging.WARNING
        logger.log(
            level,
            "Hub step %r on %s failed (attempt %d/%d, %s); retrying in %.1fs",
            step,
            repo_id,
            state.attempt_number,
            attempts,
            _describe(exc, token) if exc is not None else "?",
            wait,
        )

    retrying = Retrying(
        stop=stop_after_attempt(attempts) | budget.stop,
        wait=wait_exponential(multiplier=retry_wait, max=max(retry_wait, MAX_RETRY_WAIT)),
        retry=retry_if_exception(_is_retryable),
        sleep=sleep,
        before_sleep=_before_sleep,
        reraise=True,
    )
    hint = None if token_found(token) else _no_token_hint(repo_id)
    try:
        return retrying(_attempt)
    except PublishError:
        raise
    except RetryError as exc:  # not raised with reraise=True, kept for safety
        last = exc.last_attempt.exception()
        raise PublishError(
            f"Publishing to {repo_id} failed at step {step!r}: retries exhausted",
            repo_id=repo_id,
            step=step,
            status_code=_status_code(last) if last else None,
        ) from None
    except Exception as exc:
        if _unreachable(exc):
            host = httpx2.URL(endpoint).host or endpoint
            message = (f"cannot reach the Hugging Face Hub at {endpoint}: {_scrub(network_reason(exc, host), token)} "
                       f"— is this host online? ({tries[0]} attempt(s) at step {step!r}; nothing was published to "
                       f"{repo_id})")
            hint = hint or f"check this host's network, its proxy settings (HTTPS_PROXY) or HF_ENDPOINT ({endpoint})"
            raise PublishError(message, repo_id=repo_id, step=step, hint=hint) from None
        retryable = _is_retryable(exc)
        when = f"after {tries[0]} attempt(s)" if retryable else "(not retryable)"
        message = f"Publishing to dataset repo {repo_id} failed at step {step!r} {when}: {_describe(exc, token)}"
        error = PublishError(message, repo_id=repo_id, step=step, status_code=_status_code(exc), hint=hint)
        # Keep the original for debugging unless its text could carry the token.
        if token and token in repr(exc):
            raise error from None
        raise error from exc


def _reach(endpoint: str) -> None:
    """One request to the Hub with a short time-out: any answer at all means it can be reached."""
    get_session().head(endpoint, timeout=REACH_TIMEOUT)


def check_reachable(
    repo_id: str,
    *,
    token: str | None = None,
    retries: int = 5,
    retry_wait: float = 2.0,
    sleep: Callable[[float], Any] = time.sleep,
    network_budget: float = NETWORK_BUDGET,
) -> None:
    """Fail within `network_budget` seconds (plus one attempt), naming the network, when the Hub at HF_ENDPOINT
    cannot be reached; the CLI asks before anything slower starts."""
    endpoint = HfApi(token=token).endpoint.rstrip("/")
    _call("reach", lambda: _reach(endpoint), repo_id=repo_id, token=token, retries=retries, retry_wait=retry_wait,
          sleep=sleep, budget=_NetworkBudget(network_budget), endpoint=endpoint)


def _folder_files(folder: Path) -> list[tuple[str, Path]]:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return [(p.relative_to(folder).as_posix(), p) for p in files]


def publish_folder_to_hub(
    folder: Path,
    repo_id: str,
    tag: str,
    *,
    token: str | None,
    commit_message: str,
    private: bool = False,
    retries: int = 5,
    retry_wait: float = 2.0,
    sleep: Callable[[float], Any] = time.sleep,
    network_budget: float = NETWORK_BUDGET,
) -> HubPublication:
    """Upload every file of `folder` to dataset repo `repo_id` in ONE commit and tag it `tag`.

    A no-op (`already_published=True`) when `tag` already exists. `retries` is the number of retries after
    the first attempt of each Hub call (429/5xx/connection errors only); waits grow as
    `retry_wait * 2**n` (capped at 60 s) through `sleep`. Network errors stop being retried once they have
    taken `network_budget` seconds, all steps together.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise PublishError(f"Nothing to publish: {folder} is not a directory", repo_id=repo_id, step="scan")
    files = _folder_files(folder)
    if not files:
        raise PublishError(f"Nothing to publish: {folder} holds no files", repo_id=repo_id, step="scan")

    api = HfApi(token=token)
    endpoint = api.endpoint.rstrip("/")
    call_kwargs = dict(repo_id=repo_id, token=token, retries=retries, retry_wait=retry_wait, sleep=sleep,
                       budget=_NetworkBudget(network_budget), endpoint=endpoint)
    url = f"{endpoint}/datasets/{repo_id}/tree/{tag}"

    _call("reach", lambda: _reach(endpoint), **call_kwargs)

    _call(
        "create_repo",
        lambda: api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True),
        **call_kwargs,
    )

    refs = _call("list_repo_refs", lambda: api.list_repo_refs(repo_id, repo_type="dataset"), **call_kwargs)
    for ref in refs.tags:
        if ref.name == tag:
            logger.info("%s@%s already published at commit %s; nothing uploaded", repo_id, tag, ref.target_commit)
            return HubPublication(repo_id, tag, ref.target_commit, already_published=True, url=url)

    def _commit() -> Any:
        # Fresh operations per attempt: huggingface_hub marks them as used once a commit succeeds.
        operations = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(path)) for rel, path in files]
        return api.create_commit(
            repo_id,
            operations=operations,
            commit_message=commit_message,
            repo_type="dataset",
        )

    logger.info("Committing %d file(s) from %s to %s", len(files), folder, repo_id)
    commit_info = _call("create_commit", _commit, **call_kwargs)
    commit_oid = commit_info.oid

    _call(
        "create_tag",
        lambda: api.create_tag(repo_id, tag=tag, revision=commit_oid, repo_type="dataset"),
        **call_kwargs,
    )
    logger.info("Published %s@%s at commit %s", repo_id, tag, commit_oid)
    return HubPublication(repo_id, tag, commit_oid, already_published=False, url=url)

"""A thin client of Label Studio's REST API (the few calls review needs), over httpx2.

Not the label-studio-sdk: its current release pins opencv-python-headless 4.12, which holds numpy below 2.3,
and the project runs numpy 2.4; the calls below are all review needs.

The token comes from `LABEL_STUDIO_API_KEY`, else a Prefect Secret block (name in
`CURATE_LABEL_STUDIO_TOKEN_BLOCK`, default "label-studio-api-key"). It is sent in a header only: never logged,
stored or put in a message. A legacy token is sent as `Token <key>`; a personal access token (a JWT refresh
token) is exchanged for an access token first, as Label Studio asks. Whatever the server does wrong is one
`LabelStudioError` line: unreachable, a refused token, an answer that is not Label Studio's.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2

from common.errors import UserError
from common.tls import tls_context

logger = logging.getLogger(__name__)

TOKEN_ENV = "LABEL_STUDIO_API_KEY"
TOKEN_BLOCK_ENV = "CURATE_LABEL_STUDIO_TOKEN_BLOCK"
DEFAULT_TOKEN_BLOCK = "label-studio-api-key"
TIMEOUT = httpx2.Timeout(60.0, connect=5.0)
PAGE_SIZE = 500
IMPORT_BATCH = 500
RETRIES = 3  # for 502/503/504 only: a server that is up but busy
_JWT = re.compile(r"^eyJ[\w-]*\.[\w-]+\.[\w-]+$")


class LabelStudioError(UserError, RuntimeError):
    """Label Studio cannot be used as asked: unreachable, a refused token, a project that is not ours."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status  # the HTTP status Label Studio answered with, when it answered


class NoTokenError(LabelStudioError):
    hint = (f"set {TOKEN_ENV} to an access token of that Label Studio (Account & Settings), or save it as a "
            f"Prefect Secret block named by {TOKEN_BLOCK_ENV} (default {DEFAULT_TOKEN_BLOCK!r})")


def resolve_token(explicit: str | None = None) -> str:
    """The explicit token, else `LABEL_STUDIO_API_KEY`, else the Prefect Secret block; refused when none."""
    if explicit:
        return explicit
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV]
    block = os.environ.get(TOKEN_BLOCK_ENV) or DEFAULT_TOKEN_BLOCK
    try:
        from prefect.blocks.system import Secret

        value = Secret.load(block).get()
    except Exception as exc:  # noqa: BLE001 - no block, no Prefect API, another type of block: no token
        logger.debug("no Label Studio token from Prefect Secret block %r (%s)", block, type(exc).__name__)
        value = None
    if isinstance(value, str) and value:
        return value
    raise NoTokenError(f"no Label Studio token: {TOKEN_ENV} is not set and there is no Prefect Secret block {block!r}")


def normalize_url(url: str) -> str:
    url = (url or "").strip().rstrip("/")
    if not re.match(r"^https?://[^/\s]+", url):
        raise LabelStudioError(f"{url!r} is not a Label Studio URL (http://HOST:PORT)")
    return url


@dataclass(frozen=True)
class Project:
    id: int
    title: str
    label_config: str
    task_number: int = 0


class LabelStudio:
    """One Label Studio server, one token."""

    def __init__(self, url: str, token: str, timeout: httpx2.Timeout = TIMEOUT):
        self.url = normalize_url(url)
        self._token = token
        self._client = httpx2.Client(base_url=self.url, timeout=timeout, follow_redirects=False,
                                    verify=tls_context())
        self._auth: str | None = None
        self._server_id: str | None = None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> LabelStudio:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:  # never the token
        return f"LabelStudio({self.url!r})"

    # -- transport --------------------------------------------------------------------------------
    def _authorization(self) -> str:
        if self._auth is None:
            if _JWT.match(self._token):  # a personal access token: trade it for a short-lived access token
                answer = self._send("POST", "/api/token/refresh", json={"refresh": self._token}, auth=False)
                access = answer.get("access") if isinstance(answer, dict) else None
                if not access:
                    raise LabelStudioError(f"Label Studio at {self.url} gave no access token for the personal "
                                           "access token")
                self._auth = f"Bearer {access}"
            else:
                self._auth = f"Token {self._token}"
        return self._auth

    def _send(self, method: str, path: str, *, auth: bool = True, **kwargs: Any) -> Any:
        headers = {"Authorization": self._authorization()} if auth else {}
        for attempt in range(RETRIES + 1):
            try:
                response = self._client.request(method, path, headers=headers, **kwargs)
            except httpx2.TimeoutException:
                raise LabelStudioError(f"Label Studio at {self.url} did not answer {method} {path} in time") from None
            except httpx2.TransportError as err:
                raise LabelStudioError(f"cannot reach Label Studio at {self.url}: {_why(err)}") from None
            if response.status_code in (502, 503, 504) and attempt < RETRIES:
                time.sleep(0.5 * 2 ** attempt)
                continue
            break
        if response.status_code in (401, 403):
            error = LabelStudioError(f"Label Studio at {self.url} refused the token (HTTP {response.status_code}: "
                                     f"{_detail(response)})", response.status_code)
            error.hint = NoTokenError.hint
            raise error
        if response.status_code == 404:
            raise LabelStudioError(f"Label Studio at {self.url} has no {path} (HTTP 404: {_detail(response)})", 404)
        if response.status_code >= 300:
            raise LabelStudioError(f"Label Studio at {self.url} answered {method} {path} with HTTP "
                                   f"{response.status_code}: {_detail(response)}", response.status_code)
        try:
            return response.json()
        except ValueError:
            raise LabelStudioError(f"{self.url} answered {method} {path} with something that is not JSON: is it "
                                   "Label Studio?") from None

    # -- calls ------------------------------------------------------------------------------------
    def whoami(self) -> dict[str, Any]:
        """Who the token is: the first call of every command (reachable, token accepted, Label Studio)."""
        me = self._send("GET", "/api/current-user/whoami")
        if not isinstance(me, dict) or "id" not in me:
            raise LabelStudioError(f"{self.url} does not answer as Label Studio does (/api/current-user/whoami)")
        return me

    def server_id(self) -> str:
        """Which Label Studio this is, whatever URL reached it (`localhost` or `127.0.0.1`, a proxy): the token's
        organization, by its id and creation time as the server records them (ids alone start at 1 on every
        server; the time is to the microsecond and never changes). Refused when the server does not say them."""
        if self._server_id is None:
            org = self.whoami().get("active_organization")
            answer = self._send("GET", "/api/organizations/")
            listed = answer.get("results", []) if isinstance(answer, dict) else answer
            for o in listed if isinstance(listed, list) else []:
                if isinstance(o, dict) and o.get("id") == org and isinstance(o.get("created_at"), str) \
                        and o["created_at"]:
                    self._server_id = f"org {org} created {o['created_at']}"
                    break
            else:
                raise LabelStudioError(f"Label Studio at {self.url} does not say which organization the token "
                                       f"belongs to (organization {org!r} is not among /api/organizations/ with its "
                                       "creation time): its reviews could not be told apart from another server's")
        return self._server_id

    def projects(self) -> Iterator[Project]:
        page = 1
        while True:
            answer = self._send("GET", "/api/projects", params={"page": page, "page_size": 100})
            results = answer.get("results", []) if isinstance(answer, dict) else answer
            for p in results:
                yield _project(p)
            if not isinstance(answer, dict) or not answer.get("next"):
                return
            page += 1

    def find_project(self, title: str) -> Project | None:
        """The project with exactly this title (the oldest, when several share it)."""
        found = sorted((p for p in self.projects() if p.title == title), key=lambda p: p.id)
        return self.project(found[0].id) if found else None

    def project(self, project_id: int) -> Project:
        return _project(self._send("GET", f"/api/projects/{project_id}"))

    def create_project(self, title: str, label_config: str, description: str, annotators_per_task: int = 1) -> Project:
        return _project(self._send("POST", "/api/projects", json={
            "title": title, "label_config": label_config, "description": description,
            "maximum_annotations": annotators_per_task, "show_skip_button": True}))

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> list[int] | None:
        """Create tasks (their `data`), in order; their ids in the same order when the server says them."""
        answer = self._send("POST", f"/api/projects/{project_id}/import", params={"return_task_ids": "true"},
                            json=[{"data": t} for t in tasks])
        ids = answer.get("task_ids") if isinstance(answer, dict) else None
        return [int(i) for i in ids] if isinstance(ids, list) and len(ids) == len(tasks) else None

    def tasks(self, project_id: int) -> Iterator[dict[str, Any]]:
        """Every task of a project with its annotations, page by page."""
        page, seen = 1, 0
        while True:
            try:
                answer = self._send("GET", "/api/tasks", params={"project": project_id, "page": page,
                                                                 "page_size": PAGE_SIZE, "fields": "all"})
            except LabelStudioError as err:
                if page > 1 and err.status == 404:  # past the last page
                    return
                raise
            tasks = answer.get("tasks", []) if isinstance(answer, dict) else []
            yield from tasks
            seen += len(tasks)
            if not tasks or seen >= int(answer.get("total", 0) or 0):
                return
            page += 1

    def task(self, task_id: int) -> dict[str, Any] | None:
        """One task, or None when Label Studio has no task of that id (deleted)."""
        try:
            answer = self._send("GET", f"/api/tasks/{task_id}")
        except LabelStudioError as err:
            if err.status == 404:
                return None
            raise
        return answer if isinstance(answer, dict) else None

    def users(self) -> dict[int, str]:
        """User id -> e-mail, for naming annotators (empty when the token may not list users)."""
        try:
            answer = self._send("GET", "/api/users")
        except LabelStudioError as err:
            if err.status in (401, 403):
                return {}
            raise
        results = answer.get("results", answer) if isinstance(answer, dict) else answer
        return {u["id"]: str(u.get("email") or u.get("username") or "") for u in results or []
                if isinstance(u, dict) and isinstance(u.get("id"), int)}


def _project(p: Any) -> Project:
    if not isinstance(p, dict) or "id" not in p:
        raise LabelStudioError("Label Studio answered with something that is not a project")
    return Project(int(p["id"]), p.get("title") or "", p.get("label_config") or "", int(p.get("task_number") or 0))


def _detail(response: httpx2.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = response.text
    if isinstance(body, dict):
        errors = body.get("validation_errors")
        text = " ".join(str(x) for x in (body.get("detail"), errors) if x) or body
    else:
        text = body
    return re.sub(r"\s+", " ", str(text)).strip()[:200] or response.reason_phrase


def _why(err: Exception) -> str:
    text = str(err) or type(err).__name__
    return re.sub(r"\s+", " ", text)[:200]

"""The Label Studio client's one-line errors and its token handling, against small local servers (127.0.0.1)."""

from __future__ import annotations

import json
import socket
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tasks.review import label_studio
from tasks.review.label_studio import LabelStudio, LabelStudioError, NoTokenError, normalize_url, resolve_token

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJ0b2tlbl90eXBlIjoicmVmcmVzaCJ9.c2lnbmF0dXJl"


@contextmanager
def serving(answer):
    """A local HTTP server whose handler is `answer(method, path, headers, body) -> (status, body)`."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, method):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            seen.append((method, self.path, dict(self.headers), body))
            status, payload = answer(method, self.path, self.headers, body)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._reply("GET")

        def do_POST(self):
            self._reply("POST")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_an_unreachable_server_is_one_line_naming_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    with LabelStudio(url, "secret-token") as ls, pytest.raises(LabelStudioError) as err:
        ls.whoami()
    assert str(err.value).startswith(f"cannot reach Label Studio at {url}") and "\n" not in str(err.value)
    assert "secret-token" not in str(err.value) and "secret-token" not in repr(ls)


def test_a_refused_token_and_a_server_that_is_not_label_studio():
    with serving(lambda *a: (401, {"detail": "Invalid token."})) as (url, seen):
        with LabelStudio(url, "wrong") as ls, pytest.raises(LabelStudioError) as err:
            ls.whoami()
    assert "refused the token (HTTP 401: Invalid token.)" in str(err.value) and err.value.hint
    assert seen[0][2]["Authorization"] == "Token wrong"
    with serving(lambda *a: (200, b"<html>hello</html>")) as (url, _):
        with LabelStudio(url, "t") as ls, pytest.raises(LabelStudioError, match="not JSON: is it Label Studio"):
            ls.whoami()


def test_a_personal_access_token_is_exchanged_for_an_access_token():
    def answer(method, path, headers, body):
        if path == "/api/token/refresh":
            assert json.loads(body) == {"refresh": JWT}
            return 200, {"access": "short-lived"}
        return 200, {"id": 1, "email": "me@example.com"}

    with serving(answer) as (url, seen), LabelStudio(url, JWT) as ls:
        assert ls.whoami()["id"] == 1
    assert seen[-1][2]["Authorization"] == "Bearer short-lived"


def test_tasks_are_read_page_by_page():
    def answer(method, path, headers, body):
        page = int(path.split("page=")[1].split("&")[0])
        return 200, {"total": 3, "tasks": [{"id": i} for i in ((1, 2) if page == 1 else (3,))]}

    with serving(answer) as (url, _), LabelStudio(url, "t") as ls:
        label_studio_page = [t["id"] for t in ls.tasks(5)]
    assert label_studio_page == [1, 2, 3]


def test_the_token_comes_from_the_environment_or_a_secret_block(monkeypatch):
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "from-env")
    assert resolve_token() == "from-env" and resolve_token("given") == "given"
    monkeypatch.delenv("LABEL_STUDIO_API_KEY")
    from prefect.blocks.system import Secret

    class Block:
        def get(self):
            return "from-block"

    asked = []
    monkeypatch.setattr(Secret, "load", classmethod(lambda cls, name, **kw: asked.append(name) or Block()))
    monkeypatch.setenv(label_studio.TOKEN_BLOCK_ENV, "review-token")
    assert resolve_token() == "from-block" and asked == ["review-token"]
    monkeypatch.setattr(Secret, "load", classmethod(lambda cls, name, **kw: (_ for _ in ()).throw(ValueError(name))))
    with pytest.raises(NoTokenError, match="LABEL_STUDIO_API_KEY is not set"):
        resolve_token()


def test_urls_are_checked():
    assert normalize_url(" http://h:8080/ ") == "http://h:8080"
    with pytest.raises(LabelStudioError):
        normalize_url("h:8080")


def test_the_server_is_told_by_its_organization_not_by_its_url():
    orgs = {"/api/organizations/": [{"id": 2, "created_at": "2026-01-01T00:00:00.000001Z"},
                                    {"id": 5, "title": "ours", "created_at": "2026-03-04T05:06:07.891011Z"}]}

    def answer(method, path, headers, body):
        if path == "/api/current-user/whoami":
            return 200, {"id": 1, "active_organization": 5}
        return 200, orgs[path]

    with serving(answer) as (url, seen):
        with LabelStudio(url, "t") as ls, LabelStudio(url.replace("127.0.0.1", "localhost"), "t") as other:
            assert ls.server_id() == other.server_id() == "org 5 created 2026-03-04T05:06:07.891011Z"
            asked = len(seen)
            assert ls.server_id() == ls.server_id() and len(seen) == asked  # asked once per client
        orgs["/api/organizations/"] = {"results": [{"id": 5, "created_at": "2026-03-04T05:06:07.891011Z"}]}
        with LabelStudio(url, "t") as ls:
            assert ls.server_id().startswith("org 5 created")
        for unsaid in ([{"id": 5}], [{"id": 4, "created_at": "x"}], {"detail": "no"}, [None, "5"]):
            orgs["/api/organizations/"] = unsaid
            with LabelStudio(url, "t") as ls, pytest.raises(LabelStudioError, match="does not say which organization"):
                ls.server_id()


def test_a_deleted_task_is_none_and_users_of_odd_shapes_are_passed_over():
    def answer(method, path, headers, body):
        if path == "/api/tasks/7":
            return 404, {"detail": "No Task matches the given query."}
        if path == "/api/tasks/8":
            return 200, {"id": 8, "project": 3}
        if path == "/api/tasks/9":
            return 500, {"detail": "boom"}
        return 200, [{"id": 1, "email": "a@x"}, {"id": "2"}, None, {"email": "c@x"}, {"id": 4, "username": "d"}]

    with serving(answer) as (url, _), LabelStudio(url, "t") as ls:
        assert ls.task(7) is None and ls.task(8) == {"id": 8, "project": 3}
        with pytest.raises(LabelStudioError, match="HTTP 500"):
            ls.task(9)
        assert ls.users() == {1: "a@x", 4: "d"}

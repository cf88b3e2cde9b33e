"""A local HTTP stand-in for the few Hugging Face Hub endpoints that `tasks.publish.hub` needs.

Endpoints (as called by huggingface_hub 2.4 for create_repo / list_repo_refs / create_commit / create_tag):

    HEAD /                                              the reachability check `tasks.publish.hub` makes first
    POST /api/repos/create                              create_repo (409 when it exists)
    GET  /api/{type}s/{repo_id}/refs                    list_repo_refs
    POST /api/validate-yaml                             create_commit, when README.md is among the files
    POST /api/{type}s/{repo_id}/preupload/{revision}    create_commit -> upload modes ("regular" for all)
    POST /api/{type}s/{repo_id}/commit/{revision}       create_commit -> NDJSON payload, base64 content inline
    POST /api/{type}s/{repo_id}/tag/{revision}          create_tag (409 when the tag exists)
    GET  /api/{type}s/{repo_id}[/revision/{revision}]   repo_info (only used by create_commit on a no-op commit)
    GET  /api/agent-harnesses                           unauthenticated, best-effort registry fetch made while
                                                        building the user agent in AI-agent shells; answered 404

and the reads `datasets.load_dataset(repo_id, config, revision=...)` makes of what was committed (each answered
from the files as they were at the commit the revision names: a branch, a tag or a commit oid):

    GET  /api/datasets/{repo_id}/revision/{revision}    dataset_info: the commit's sha and its files (siblings)
    GET  /api/datasets/{repo_id}/tree/{revision}[/path] list_repo_tree / HfFileSystem.ls (recursive or not)
    POST /api/datasets/{repo_id}/paths-info/{revision}  get_paths_info / HfFileSystem.info
    HEAD|GET /datasets/{repo_id}/resolve/{revision}/{path}  a file's bytes (Range honoured), X-Repo-Commit, ETag

Every file is answered "regular" by preupload, so no LFS/Xet negotiation ever happens: the content arrives
inline in the commit payload. Runs an `http.server.ThreadingHTTPServer` in a thread on 127.0.0.1 (free port).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

_REPO_PATH = re.compile(r"^/api/(?P<type>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+)(?:/(?P<rest>.*))?$")
_RESOLVE_PATH = re.compile(r"^/datasets/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<file>.+)$")


@dataclass
class StandinCommit:
    repo_id: str
    oid: str
    parent: str | None
    message: str
    description: str
    files: dict[str, bytes]


@dataclass
class StandinRepo:
    repo_id: str
    repo_type: str
    private: bool
    head: str  # commit oid of main
    files: dict[str, bytes] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)  # tag -> commit oid
    snapshots: dict[str, dict[str, bytes]] = field(default_factory=dict)  # commit oid -> its files

    def commit_of(self, revision: str) -> str | None:
        """The commit a branch (main only), tag or commit oid names, or None."""
        if revision in ("main", "refs/heads/main"):
            return self.head
        oid = self.tags.get(revision.removeprefix("refs/tags/"), revision)
        return oid if oid in self.snapshots else None


class HubStandin:
    """Records what arrives; `fail_next` maps a path substring to status codes answered to the next matches."""

    def __init__(self, token: str | None = "hf_standin_token", fail_next: dict[str, list[int]] | None = None):
        self.token = token
        self.fail_next: dict[str, list[int]] = {k: list(v) for k, v in (fail_next or {}).items()}
        self.repos: dict[str, StandinRepo] = {}
        self.created_repos: list[dict[str, Any]] = []
        self.commits: list[StandinCommit] = []
        self.tags: dict[str, dict[str, str]] = {}  # repo_id -> {tag: commit}
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status)
        self.auth_failures = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> HubStandin:
        standin = self

        class Handler(_Handler):
            hub = standin

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="hub-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> HubStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ helpers for tests
    def statuses(self, path_substring: str, method: str | None = None) -> list[int]:
        return [s for m, p, s in self.requests if path_substring in p and (method is None or m == method)]

    # ------------------------------------------------------------------ request handling (under lock)
    def _new_oid(self, seed: str) -> str:
        return hashlib.sha1(f"{seed}:{len(self.commits)}:{len(self.repos)}".encode()).hexdigest()

    def handle(self, method: str, raw_path: str, headers: Any, body: bytes) -> tuple[int, dict[str, str], Any]:
        path = urlsplit(raw_path).path
        for needle, codes in self.fail_next.items():
            if needle in path and codes:
                status = codes.pop(0)
                return status, {}, {"error": f"stand-in injected HTTP {status}"}

        if method == "GET" and path == "/api/agent-harnesses":
            # huggingface_hub's user-agent builder fetches this registry (no auth, best effort, errors swallowed)
            # when it detects an AI-agent environment. A 404 keeps it from caching anything under HF_HOME.
            return 404, {}, {"error": "stand-in: no agent harness registry"}

        resolve = _RESOLVE_PATH.match(path)
        if resolve and method in ("GET", "HEAD"):
            return self._resolve(unquote(resolve["repo"]), unquote(resolve["revision"]), unquote(resolve["file"]),
                                 headers)

        if self.token is not None and headers.get("Authorization") != f"Bearer {self.token}":
            self.auth_failures += 1
            return 401, {"X-Error-Code": "RepoNotFound"}, {"error": "Invalid credentials in Authorization header"}

        if method == "POST" and path == "/api/repos/create":
            return self._create_repo(json.loads(body or b"{}"))
        if method == "POST" and path == "/api/validate-yaml":
            return 200, {}, {"errors": [], "warnings": []}

        match = _REPO_PATH.match(path)
        if not match:
            return 404, {}, {"error": f"stand-in: no route for {method} {path}"}
        repo_type = match["type"][:-1]
        repo_id = unquote(match["repo"])
        rest = match["rest"] or ""
        repo = self.repos.get(repo_id)
        if repo is None or repo.repo_type != repo_type:
            return 404, {"X-Error-Code": "RepoNotFound"}, {"error": "Repository not found"}

        if method == "GET" and rest == "refs":
            return 200, {}, {
                "branches": [{"name": "main", "ref": "refs/heads/main", "targetCommit": repo.head}],
                "converts": [],
                "tags": [
                    {"name": name, "ref": f"refs/tags/{name}", "targetCommit": oid} for name, oid in repo.tags.items()
                ],
            }
        if method == "GET" and (rest == "" or rest.startswith("revision/")):
            commit = repo.commit_of(unquote(rest[len("revision/"):]) if rest else "main")
            if commit is None:
                return _no_revision(rest)
            return 200, {}, {
                "id": repo_id,
                "sha": commit,
                "private": repo.private,
                "disabled": False,
                "gated": False,
                "siblings": [{"rfilename": name, "size": len(data)} for name, data in sorted(repo.snapshots[commit].items())],
            }
        if method == "GET" and rest.startswith("tree/"):
            revision, _, under = unquote(rest[len("tree/"):]).partition("/")
            recursive = parse_qs(urlsplit(raw_path).query).get("recursive", [""])[0].lower() in ("true", "1")
            return self._tree(repo, revision, under.strip("/"), recursive)
        if method == "POST" and rest.startswith("paths-info/"):
            return self._paths_info(repo, unquote(rest[len("paths-info/"):]), headers, body)
        if method == "POST" and rest.startswith("preupload/"):
            files = json.loads(body)["files"]
            return 200, {}, {
                "files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
            }
        if method == "POST" and rest.startswith("commit/"):
            return self._commit(repo, unquote(rest[len("commit/") :]), body)
        if method == "POST" and rest.startswith("tag/"):
            revision = unquote(rest[len("tag/") :])
            tag = json.loads(body)["tag"]
            if tag in repo.tags:
                return 409, {}, {"error": f"Tag {tag} already exists"}
            commit = repo.head if revision == "main" else revision
            if commit != repo.head and all(c.oid != commit for c in self.commits):
                return _no_revision(revision)
            repo.tags[tag] = commit
            self.tags.setdefault(repo_id, {})[tag] = commit
            return 200, {}, {}
        return 404, {}, {"error": f"stand-in: no route for {method} {path}"}

    # ------------------------------------------------------------------ reads of what was committed
    @staticmethod
    def _entry(path: str, data: bytes | None) -> dict[str, Any]:
        if data is None:
            return {"type": "directory", "oid": hashlib.sha1(path.encode()).hexdigest(), "size": 0, "path": path}
        return {"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data), "path": path}

    def _tree(self, repo: StandinRepo, revision: str, under: str, recursive: bool) -> tuple[int, dict[str, str], Any]:
        commit = repo.commit_of(revision)
        if commit is None:
            return _no_revision(revision)
        files = repo.snapshots[commit]
        prefix = f"{under}/" if under else ""
        if under and not any(name.startswith(prefix) for name in files):
            return 404, {"X-Error-Code": "EntryNotFound"}, {"error": f"{under} does not exist at {revision}"}
        entries: dict[str, dict[str, Any]] = {}
        for name, data in sorted(files.items()):
            if not name.startswith(prefix):
                continue
            parts = name[len(prefix):].split("/")
            for depth in range(1, len(parts)):  # the folders on the way
                folder = prefix + "/".join(parts[:depth])
                if recursive or depth == 1:
                    entries.setdefault(folder, self._entry(folder, None))
            if recursive or len(parts) == 1:
                entries[name] = self._entry(name, data)
        return 200, {}, list(entries.values())

    def _paths_info(self, repo: StandinRepo, revision: str, headers: Any, body: bytes) -> tuple[int, dict[str, str], Any]:
        commit = repo.commit_of(revision)
        if commit is None:
            return _no_revision(revision)
        if "json" in (headers.get("Content-Type") or ""):
            paths = json.loads(body or b"{}").get("paths", [])
        else:
            paths = parse_qs(body.decode()).get("paths", [])
        files = repo.snapshots[commit]
        out = []
        for path in paths:
            path = path.strip("/")
            if path in files:
                out.append(self._entry(path, files[path]))
            elif any(name.startswith(path + "/") for name in files):
                out.append(self._entry(path, None))
        return 200, {}, out

    def _resolve(self, repo_id: str, revision: str, name: str, headers: Any) -> tuple[int, dict[str, str], Any]:
        repo = self.repos.get(repo_id)
        if repo is None or repo.repo_type != "dataset":
            return 404, {"X-Error-Code": "RepoNotFound"}, {"error": "Repository not found"}
        commit = repo.commit_of(revision)
        if commit is None:
            return _no_revision(revision)
        data = repo.snapshots[commit].get(name)
        if data is None:
            return 404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": commit}, {"error": f"{name} not found"}
        extra = {"X-Repo-Commit": commit, "ETag": f'"{hashlib.sha1(data).hexdigest()}"', "Accept-Ranges": "bytes"}
        ranged = re.fullmatch(r"bytes=(\d*)-(\d*)", headers.get("Range") or "")
        if ranged:
            start = int(ranged[1]) if ranged[1] else max(0, len(data) - int(ranged[2]))
            end = min(int(ranged[2]), len(data) - 1) if ranged[1] and ranged[2] else len(data) - 1
            if start >= len(data):
                return 416, {"Content-Range": f"bytes */{len(data)}"}, b""
            extra["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return 206, extra, data[start:end + 1]
        return 200, extra, data

    def _create_repo(self, payload: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        name, org = payload.get("name"), payload.get("organization")
        repo_id = f"{org}/{name}" if org else name
        repo_type = payload.get("type") or "model"
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        url = f"{self.url}/{prefix}{repo_id}"
        if repo_id in self.repos:
            return 409, {}, {"error": "You already created this repo", "url": url}
        # Like the Hub, a new repo starts with an initial commit on main.
        head = self._new_oid(f"init:{repo_id}")
        self.repos[repo_id] = StandinRepo(repo_id, repo_type, payload.get("visibility") == "private", head)
        self.repos[repo_id].snapshots[head] = {}
        self.created_repos.append(dict(payload, repo_id=repo_id))
        return 200, {}, {"url": url, "name": repo_id, "id": repo_id}

    def _commit(self, repo: StandinRepo, revision: str, body: bytes) -> tuple[int, dict[str, str], Any]:
        if revision != "main":
            return 400, {}, {"error": "stand-in only commits to main"}
        message, description, parent = "", "", None
        files: dict[str, bytes] = {}
        for line in body.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key, value = item["key"], item["value"]
            if key == "header":
                message, description = value["summary"], value.get("description", "")
                parent = value.get("parentCommit")
            elif key == "file":
                if value.get("encoding") != "base64":
                    return 400, {}, {"error": "stand-in expects base64 content"}
                files[value["path"]] = base64.b64decode(value["content"])
            else:
                return 400, {}, {"error": f"stand-in does not support {key!r} operations (LFS/Xet)"}
        if parent is not None and parent != repo.head:
            return 412, {}, {"error": "A commit has happened since. Please refresh and try again."}
        oid = self._new_oid(f"commit:{repo.repo_id}:{message}")
        repo.files.update(files)
        self.commits.append(StandinCommit(repo.repo_id, oid, repo.head, message, description, files))
        repo.snapshots[oid] = dict(repo.files)
        repo.head = oid
        return 200, {}, {
            "commitUrl": f"{self.url}/datasets/{repo.repo_id}/commit/{oid}",
            "commitOid": oid,
            "pullRequestUrl": None,
            "success": True,
        }


def _no_revision(revision: str) -> tuple[int, dict[str, str], Any]:
    """The Hub's answer to a branch, tag or commit a repo does not have."""
    return 404, {"X-Error-Code": "RevisionNotFound"}, {"error": f"Invalid rev id: {revision}"}


def point_hub_clients_at(hub: HubStandin, monkeypatch: Any) -> None:
    """huggingface_hub in this process talks to `hub`: HF_ENDPOINT and HF_HUB_OFFLINE are read once, at import, into
    `huggingface_hub.constants`, so the constants are set beside the environment (processes started later read
    the environment)."""
    from huggingface_hub import constants as hf_constants

    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hf_constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)


class _Handler(BaseHTTPRequestHandler):
    hub: HubStandin
    protocol_version = "HTTP/1.1"
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.hub._lock:
            try:
                status, extra_headers, payload = self.hub.handle(self.command, self.path, self.headers, body)
            except Exception as exc:  # noqa: BLE001 - a bug in the stand-in must show up as a 500, not a hang
                status, extra_headers, payload = 500, {}, {"error": f"stand-in crashed: {exc!r}"}
            self.hub.requests.append((self.command, urlsplit(self.path).path, status))
        raw = isinstance(payload, bytes)
        data = payload if raw else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream" if raw else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in extra_headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def do_HEAD(self) -> None:
        if _RESOLVE_PATH.match(urlsplit(self.path).path):  # a file's metadata: its headers without its bytes
            self._serve()
            return
        # The Hub's front page, which answers without a token.
        with self.hub._lock:
            self.hub.requests.append((self.command, urlsplit(self.path).path, 200))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

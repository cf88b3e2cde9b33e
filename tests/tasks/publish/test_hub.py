"""publish_folder_to_hub against a local stand-in of the Hub (tests/tasks/publish/hub_standin.py).

huggingface_hub reads HF_ENDPOINT and HF_HUB_OFFLINE once, at import, into `huggingface_hub.constants`
(`ENDPOINT`, `HF_HUB_OFFLINE`; `HfApi()` defaults to `constants.ENDPOINT` and every request is blocked when
`constants.is_offline_mode()`, which returns `constants.HF_HUB_OFFLINE`). tests/conftest.py sets
HF_HUB_OFFLINE=1 before anything imports huggingface_hub, so setting the env vars alone is not enough: the
fixture patches both the environment and the constants module attributes.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import constants as hf_constants

from tasks.publish.hub import (
    HubPublication,
    PublishError,
    _NetworkBudget,
    network_reason,
    publish_folder_to_hub,
    resolve_hf_token,
)
from tests.tasks.publish.hub_standin import HubStandin, point_hub_clients_at

TOKEN = "hf_secretTOKEN_do_not_leak_123"
REPO = "curator-org/preferences"

FILES = {
    "README.md": b"---\nlicense: cc-by-4.0\n---\n# Preferences\n",
    "data/dpo/train-00000-of-00001.parquet": b"PAR1" + bytes(range(256)) * 4 + b"PAR1",
    "manifest.json": b'{"version": "v1", "rows": 3}\n',
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "release"
    for rel, content in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[HubStandin]:
    with HubStandin(token=TOKEN) as hub:
        point_hub_clients_at(hub, monkeypatch)  # read at import time by huggingface_hub (see module docstring)
        monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
        yield hub


class FakeSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def _publish(folder: Path, tag: str = "v1", **kwargs) -> HubPublication:
    kwargs.setdefault("token", TOKEN)
    kwargs.setdefault("commit_message", f"Publish {tag}")
    kwargs.setdefault("sleep", FakeSleep())
    return publish_folder_to_hub(folder, REPO, tag, **kwargs)


def _exception_texts(exc: BaseException) -> list[str]:
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return texts


def test_publish_creates_repo_one_commit_and_tag(standin: HubStandin, folder: Path) -> None:
    result = _publish(folder, private=True)

    assert [r["repo_id"] for r in standin.created_repos] == [REPO]
    assert standin.created_repos[0]["type"] == "dataset"
    assert standin.created_repos[0]["visibility"] == "private"
    assert len(standin.commits) == 1
    commit = standin.commits[0]
    assert commit.repo_id == REPO
    assert commit.message == "Publish v1"
    assert commit.files == FILES
    assert standin.tags[REPO] == {"v1": commit.oid}
    assert result == HubPublication(
        repo_id=REPO,
        tag="v1",
        commit=commit.oid,
        already_published=False,
        url=f"{standin.url}/datasets/{REPO}/tree/v1",
    )
    assert standin.auth_failures == 0
    hub_calls = [(m, p, s) for m, p, s in standin.requests if p != "/api/agent-harnesses"]
    assert all(status < 400 for _, _, status in hub_calls), hub_calls
    assert [(m, p) for m, p, _ in hub_calls] == [
        ("HEAD", "/"),  # can the Hub be reached at all (with a short time-out)?
        ("POST", "/api/repos/create"),
        ("GET", f"/api/datasets/{REPO}/refs"),
        ("POST", "/api/validate-yaml"),
        ("POST", f"/api/datasets/{REPO}/preupload/main"),
        ("POST", f"/api/datasets/{REPO}/commit/main"),
        ("POST", f"/api/datasets/{REPO}/tag/{commit.oid}"),
    ]


def test_publishing_the_same_tag_again_is_a_noop(standin: HubStandin, folder: Path) -> None:
    first = _publish(folder)
    (folder / "manifest.json").write_bytes(b'{"changed": true}\n')
    requests_before = len(standin.requests)

    again = _publish(folder)

    assert again.already_published is True
    assert again.commit == first.commit
    assert len(standin.commits) == 1
    later = [(m, p) for m, p, _ in standin.requests[requests_before:]]
    assert not any("/preupload/" in p or "/commit/" in p or "/tag/" in p for _, p in later)


def test_a_429_on_commit_is_retried_then_succeeds(standin: HubStandin, folder: Path) -> None:
    standin.fail_next["/commit/"] = [429]
    sleep = FakeSleep()

    result = _publish(folder, sleep=sleep, retry_wait=0.5)

    assert standin.statuses("/commit/", "POST") == [429, 200]
    assert sleep.calls == [0.5]
    assert len(standin.commits) == 1
    assert result.commit == standin.commits[0].oid
    assert standin.tags[REPO] == {"v1": result.commit}


def test_5xx_retries_are_exhausted_into_publish_error(standin: HubStandin, folder: Path) -> None:
    standin.fail_next["/tag/"] = [503, 503, 503]
    sleep = FakeSleep()

    with pytest.raises(PublishError) as info:
        _publish(folder, sleep=sleep, retries=2, retry_wait=1.0)

    assert info.value.step == "create_tag"
    assert info.value.status_code == 503
    assert REPO in str(info.value) and "create_tag" in str(info.value)
    assert standin.statuses("/tag/", "POST") == [503, 503, 503]
    assert sleep.calls == [1.0, 2.0]  # exponential back-off


def test_a_403_is_not_retried(standin: HubStandin, folder: Path) -> None:
    standin.fail_next["/commit/"] = [403]
    sleep = FakeSleep()
    started = time.monotonic()

    with pytest.raises(PublishError) as info:
        _publish(folder, sleep=sleep)

    assert time.monotonic() - started < 5
    assert standin.statuses("/commit/", "POST") == [403]
    assert sleep.calls == []
    assert info.value.step == "create_commit"
    assert info.value.status_code == 403
    assert REPO in str(info.value)
    assert standin.commits == [] and REPO not in standin.tags


def test_token_never_appears_in_errors_or_logs(
    standin: HubStandin, folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    standin.fail_next["/commit/"] = [500, 403]

    with pytest.raises(PublishError) as info:
        _publish(folder)

    assert standin.statuses("/commit/", "POST") == [500, 403]
    assert all(TOKEN not in text for text in _exception_texts(info.value))
    assert TOKEN not in caplog.text


def test_wrong_token_fails_without_leaking_it(standin: HubStandin, folder: Path) -> None:
    with pytest.raises(PublishError) as info:
        _publish(folder, token="hf_wrong_TOKEN_999")

    assert info.value.step == "create_repo"
    assert all("hf_wrong_TOKEN_999" not in text for text in _exception_texts(info.value))


def test_resolve_hf_token_prefers_explicit_then_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    assert resolve_hf_token("hf_explicit") == "hf_explicit"
    assert resolve_hf_token() == "hf_from_env"


def test_resolve_hf_token_falls_back_to_secret_block_or_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.blocks import system

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("CURATE_HF_TOKEN_BLOCK", "my-hf-block")
    loaded: list[str] = []

    class FakeSecret:
        def __init__(self, value: str) -> None:
            self.value = value

        def get(self) -> str:
            return self.value

        @classmethod
        def load(cls, name: str) -> FakeSecret:
            loaded.append(name)
            if name != "my-hf-block":
                raise ValueError("no such block")
            return cls("hf_from_block")

    monkeypatch.setattr(system, "Secret", FakeSecret)
    assert resolve_hf_token() == "hf_from_block"
    monkeypatch.setenv("CURATE_HF_TOKEN_BLOCK", "missing")
    assert resolve_hf_token() is None
    assert loaded == ["my-hf-block", "missing"]


def test_5xx_retries_do_not_draw_on_the_network_budget(standin: HubStandin, folder: Path) -> None:
    standin.fail_next["/tag/"] = [503, 502]
    sleep = FakeSleep()

    result = _publish(folder, sleep=sleep, retries=2, retry_wait=1.0, network_budget=0.0)

    assert standin.statuses("/tag/", "POST") == [503, 502, 200]
    assert result.tag == "v1"


# -- a Hub that cannot be reached ------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Point huggingface_hub at `endpoint`, where nothing answers, with HF_HUB_OFFLINE unset and no token anywhere
    (neither HF_TOKEN nor a stored one)."""

    def point(endpoint: str) -> str:
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        monkeypatch.setattr(hf_constants, "ENDPOINT", endpoint)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
        for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-stored-token"))
        return endpoint

    return point


@pytest.mark.parametrize("where", ["unresolvable host", "closed port"])
def test_an_unreachable_hub_fails_within_30_s_naming_the_network_and_hf_token(no_hub, folder: Path, where: str) -> None:
    endpoint = no_hub("http://hub.invalid" if where == "unresolvable host" else f"http://127.0.0.1:{_closed_port()}")
    started = time.monotonic()

    with pytest.raises(PublishError) as info:  # the default retries and real waits, as `curate publish` has them
        publish_folder_to_hub(folder, REPO, "v1", token=None, commit_message="Publish v1", retries=5, retry_wait=2.0)

    assert time.monotonic() - started < 30
    message = str(info.value)
    assert message.startswith(f"cannot reach the Hugging Face Hub at {endpoint}: "), message
    assert "is this host online?" in message and "nothing was published" in message
    assert ("hub.invalid does not resolve" if where == "unresolvable host" else "was refused") in message
    assert "attempt" in message and "1 attempt(s)" not in message  # retried, within the bound
    assert info.value.hint is not None and info.value.hint.startswith("HF_TOKEN is not set")
    assert info.value.step == "reach"


def test_with_a_token_the_hint_names_the_endpoint_not_the_token(no_hub, folder: Path) -> None:
    endpoint = no_hub(f"http://127.0.0.1:{_closed_port()}")

    with pytest.raises(PublishError) as info:
        _publish(folder, network_budget=0.0)

    assert str(info.value).startswith(f"cannot reach the Hugging Face Hub at {endpoint}")
    assert "1 attempt(s)" in str(info.value)  # no budget: no retry
    assert "HF_TOKEN" not in info.value.hint and f"HF_ENDPOINT ({endpoint})" in info.value.hint
    assert all(TOKEN not in text for text in _exception_texts(info.value))


def test_a_stored_token_counts_as_a_token(no_hub, folder: Path, tmp_path: Path, monkeypatch) -> None:
    no_hub(f"http://127.0.0.1:{_closed_port()}")
    stored = tmp_path / "stored-token"
    stored.write_text("hf_stored_by_login\n")
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(stored))

    with pytest.raises(PublishError) as info:
        publish_folder_to_hub(folder, REPO, "v1", token=None, commit_message="m", network_budget=0.0)

    assert "HF_TOKEN" not in info.value.hint


def test_the_network_budget_counts_every_step_from_the_first_failure() -> None:
    now = [0.0]
    budget = _NetworkBudget(10.0, clock=lambda: now[0])

    assert not budget.spent(started=0.0, upcoming_sleep=2.0)  # 0 s spent + 2 s to wait
    now[0] = 6.0
    assert not budget.spent(started=5.0, upcoming_sleep=4.0)  # a later step: counted from 0, not 5
    now[0] = 7.0
    assert budget.spent(started=7.0, upcoming_sleep=4.0)  # 7 + 4 > 10


def test_network_reason_names_what_failed() -> None:
    import httpx2

    dns = httpx2.ConnectError("[Errno -2] Name or service not known")
    assert network_reason(dns, "hub.invalid") == (
        "the name hub.invalid does not resolve ([Errno -2] Name or service not known)")
    refused = httpx2.ConnectError("[Errno 111] Connection refused")
    assert network_reason(refused, "127.0.0.1").startswith("the connection to 127.0.0.1 was refused")
    assert network_reason(httpx2.ConnectTimeout("timed out"), "huggingface.co") == (
        "huggingface.co did not answer in time (ConnectTimeout)")


def test_curate_publish_to_an_unreachable_hub_fails_within_30_s_in_one_line_and_a_hint(tmp_path: Path) -> None:
    """The command as a user runs it: the Hub is asked before Prefect starts, so its start-up does not count."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CURATE_", "HF_", "HUGGING_FACE_"))}
    env.update(HF_ENDPOINT="http://hub.invalid", HF_HOME=str(tmp_path / "hf-home"))  # online mode, no token
    curate = str(Path(sys.executable).with_name("curate"))
    # a version to publish: the warehouse and the version are checked before the Hub is asked
    from tasks.curate.select import ROW_SCHEMA
    from warehouse.store import Warehouse

    with Warehouse(tmp_path / "warehouse.duckdb") as wh:
        wh.versions.write_version({"name": "helpful", "version": 1, "parent_version": None, "judge_config_id": "jc-test",
                          "policy": {}, "source_revisions": {}, "row_count": 0, "content_hash": "0" * 32, "stats": {},
                          "simulated": False}, ROW_SCHEMA.empty_table())
    started = time.monotonic()

    proc = subprocess.run([curate, "publish", "helpful", "--to", "hf://curators/helpful", "--warehouse",
                           str(tmp_path / "warehouse.duckdb")], capture_output=True, text=True, timeout=120, env=env)

    assert time.monotonic() - started < 30
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr
    assert lines[0].startswith("error: cannot reach the Hugging Face Hub at http://hub.invalid: the name hub.invalid "
                               "does not resolve"), lines[0]
    assert "is this host online?" in lines[0]
    assert lines[1].startswith("hint: HF_TOKEN is not set"), lines[1]

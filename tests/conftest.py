"""Shared fixtures. Prefect runs on its ephemeral API in a temporary PREFECT_HOME, offline."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

# Set before anything imports Prefect or datasets.
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="prefect-home-"))
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# INFO lines logged at interpreter exit (the ephemeral server stopping) would hit pytest's closed streams.
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.pop("CURATE_WAREHOUSE", None)

import pytest  # noqa: E402

from curator.settings import Settings  # noqa: E402

# Bind Prefect's console handler to the session's stderr now, not to the stream of whichever CliRunner
# invocation first logs (that stream is closed when its test ends).
from prefect.logging.configuration import setup_logging  # noqa: E402

setup_logging()

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CURATE_SHARED_DIR", REPO.parent / "shared"))


def shared_file(*parts: str) -> Path:
    """A file under ../shared/data, or a clean skip when the shared folder is absent."""
    path = SHARED.joinpath("data", *parts)
    if "acceptance" in path.name:
        raise RuntimeError("acceptance files are held back for acceptance checks")
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is absent on a fresh clone)")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def warehouse_path(tmp_path: Path) -> Path:
    return tmp_path / "warehouse.duckdb"

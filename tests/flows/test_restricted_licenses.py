"""A source whose license does not allow redistribution never reaches a public Hub repository unasked: the publish
flow and `curate publish` refuse in one line naming the source and its rows; `--private` or
`--allow-restricted-licenses` lets it through."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from curator.cli import app
from flows.publish import RestrictedLicenseError, publish
from flows.versions import build_version
from tasks.ingest.sources import SOURCES
from tasks.publish.summary import restricted_license
from tests.flows.conftest import judged_as_source

pytestmark = pytest.mark.prefect

NAME = "internal-made-up"
INTERNAL = dataclasses.replace(SOURCES["helpsteer3"], name=NAME, license="internal")


@pytest.mark.parametrize(("license_", "declaration", "restricted"), [
    ("internal", None, True), ("Proprietary", None, True), ("other", None, True),
    ("other: https://example.org/terms", None, False), ("cc-by-4.0", None, False), ("", None, False),
    ("cc-by-4.0", {"redistribute": False}, True),
])
def test_which_licenses_forbid_publishing(license_, declaration, restricted) -> None:
    assert restricted_license(license_, declaration) is restricted


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    path, _ = judged_as_source(tmp_path_factory.mktemp("internal"), NAME, INTERNAL, 200, seed=7, pair_bytes=300)
    return path


def test_an_internal_source_is_refused_by_a_public_hub_repository(judged, monkeypatch, tmp_path):
    from tests.tasks.publish.hub_standin import HubStandin, point_hub_clients_at

    made = build_version("inside", policy_overrides={"min_abs_margin": 0.0}, warehouse=str(judged))
    rows = made["rows"]
    token = "hf_secret_token_for_tests"
    monkeypatch.chdir(tmp_path)
    with HubStandin(token=token) as hub:
        point_hub_clients_at(hub, monkeypatch)
        monkeypatch.setenv("HF_TOKEN", token)
        with pytest.raises(RestrictedLicenseError, match=rf"{NAME} \({rows} rows\)"):
            publish("inside", to="hf://curators/inside", warehouse=str(judged), allow_simulated=True)
        result = CliRunner().invoke(app, ["publish", "inside", "--to", "hf://curators/inside", "--allow-simulated",
                                          "--warehouse", str(judged)])
        assert result.exit_code == 2, result.output
        assert f"{NAME} ({rows} rows)" in result.output and "--allow-restricted-licenses" in result.output
        assert hub.commits == []
        done = publish("inside", to="hf://curators/inside", warehouse=str(judged), allow_simulated=True,
                       private=True)
        assert done["tag"] == "v1" and len(hub.commits) == 1
        assert f"{NAME}: internal ({rows} rows)".encode() in hub.commits[0].files["README.md"]
    # a local folder is not a public repository
    assert publish("inside", to=str(tmp_path / "out"), warehouse=str(judged), allow_simulated=True)["tag"] == "v1"

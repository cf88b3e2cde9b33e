"""A version this project published, read back as a declared source: each config (`dpo`, `rm`, `helpsteer3`)
yields the version's own pair ids, so a team that re-curates its releases duplicates nothing."""

from __future__ import annotations

import pytest

from flows.ingest import ingest
from flows.publish import publish
from tests.flows.conftest import judged_version
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    folder = tmp_path_factory.mktemp("round-trip")
    warehouse, made = judged_version(folder, "release", rows=150, seed=41)
    target = folder / "published"
    publish("release", to=str(target), warehouse=str(warehouse))
    (version,) = (target / "release").iterdir()
    with Warehouse(warehouse, read_only=True) as wh:
        ids = {r[0] for r in wh.query("SELECT pair_id FROM dataset_rows WHERE name = 'release' AND version = ?",
                                      [made["version"]])}
    assert len(ids) == made["rows"] > 0
    return warehouse, version, ids


def _declare(folder, config: str, fmt: str) -> tuple[str, list[str]]:
    """A sources file declaring each split's file of `config` as a source: (its path, the source names)."""
    files = sorted((folder / "data" / config).glob("*.parquet"))
    assert files
    names = [f"back-{config}-{f.name.split('-')[0]}" for f in files]
    toml = folder.parent / f"{config}.toml"
    toml.write_text("".join(f'[sources.{n}]\npath = "{f}"\nformat = "{fmt}"\nlicense = "cc-by-4.0"\n\n'
                            for n, f in zip(names, files)), encoding="utf-8")
    return str(toml), names


@pytest.mark.parametrize(("config", "fmt"), [("dpo", "auto"), ("rm", "auto"), ("helpsteer3", "helpsteer3")])
def test_each_config_reads_back_with_the_version_s_pair_ids_and_duplicates_nothing(published, tmp_path, config,
                                                                                     fmt):
    warehouse, version, ids = published
    toml, names = _declare(version, config, fmt)
    fresh = tmp_path / "fresh.duckdb"
    summaries = [ingest(n, warehouse=str(fresh), sources_file=toml) for n in names]
    assert all(s["quarantined_rows"] == 0 for s in summaries) and sum(s["valid"] for s in summaries) == len(ids)
    if fmt == "auto":  # the dpo config is TRL's explicit prompt, the rm config its implicit one
        assert {(s["format"], s["format_detected"]) for s in summaries} == \
            {({"dpo": "trl", "rm": "trl-implicit"}[config], True)}
    with Warehouse(fresh, read_only=True) as wh:
        made = {r[0] for r in wh.query("SELECT pair_id FROM candidate_pairs")}
    assert made == ids
    # into the warehouse the version came from: every pair is one it holds, none is new
    again = [ingest(n, warehouse=str(warehouse), sources_file=toml) for n in names]
    assert sum(s["valid"] for s in again) == len(ids) and sum(s["new_pairs"] for s in again) == 0


def _declare_folder(folder, config: str, fmt: str, name: str, tmp_path, splits: str = "") -> str:
    """A sources file declaring the version's folder itself (its card's configs say where `config`'s files are)."""
    toml = tmp_path / f"{name}.toml"
    toml.write_text(f'[sources.{name}]\npath = "{folder}"\nconfig = "{config}"\nformat = "{fmt}"\n{splits}'
                    'license = "cc-by-4.0"\n', encoding="utf-8")
    return str(toml)


@pytest.mark.parametrize(("config", "fmt"), [("dpo", "auto"), ("rm", "trl-implicit"), ("helpsteer3", "auto")])
def test_the_version_s_folder_reads_back_by_config_with_every_split(published, tmp_path, config, fmt):
    """The folder as published (README.md's configs, data/<config>/<split>-*.parquet) is read by `datasets` as the
    Hub's copy is: the config named, every split it has, the same pair ids; a second read of the unchanged folder
    reads nothing."""
    warehouse, version, ids = published
    toml = _declare_folder(version, config, fmt, f"folder-{config}", tmp_path)
    fresh = tmp_path / "fresh.duckdb"
    summary = ingest(f"folder-{config}", warehouse=str(fresh), sources_file=toml)
    assert summary["quarantined_rows"] == 0 and summary["valid"] == len(ids)
    assert summary["source_revision"].startswith("folder:")
    assert len({p.name.split("-")[0] for p in (version / "data" / config).glob("*.parquet")}) > 1  # train, test
    with Warehouse(fresh, read_only=True) as wh:
        assert {r[0] for r in wh.query("SELECT pair_id FROM candidate_pairs")} == ids
    again = ingest(f"folder-{config}", warehouse=str(fresh), sources_file=toml)
    assert again["note"].startswith("unchanged:") and again["valid"] == again["new_pairs"] == 0


def test_one_split_of_the_folder_reads_that_split_only(published, tmp_path):
    warehouse, version, ids = published
    toml = _declare_folder(version, "dpo", "trl", "folder-train", tmp_path, splits='splits = ["train"]\n')
    summary = ingest("folder-train", warehouse=str(tmp_path / "w.duckdb"), sources_file=toml)
    train = pq_rows(version / "data" / "dpo", "train")
    assert summary["valid"] == train < len(ids)


def test_a_config_the_folder_does_not_have_is_refused_naming_it(published, tmp_path):
    from tasks.ingest.read import SourceReadError

    _, version, _ = published
    toml = _declare_folder(version, "nope", "trl", "folder-nope", tmp_path)
    with pytest.raises(SourceReadError, match="config 'nope': its card has dpo, rm, helpsteer3"):
        ingest("folder-nope", warehouse=str(tmp_path / "w.duckdb"), sources_file=toml)


def test_the_folder_s_configs_are_read_from_its_card_without_datasets(published, tmp_path):
    """The card's YAML names the configs, so a wrong one is refused before `datasets` (seconds to import) is."""
    import subprocess
    import sys

    _, version, _ = published
    probe = ("import sys; from tasks.ingest.read import folder_configs, read_folder, SourceReadError\n"
             f"print(folder_configs({str(version)!r}))\n"
             f"try:\n    next(read_folder({str(version)!r}, 'nope', (), 10))\n"
             "except SourceReadError as e:\n    print('refused', 'datasets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["('dpo', 'rm', 'helpsteer3')", "refused False"]
    (tmp_path / "README.md").write_text("no front matter\n")
    from tasks.ingest.read import folder_configs

    assert folder_configs(tmp_path) == () and folder_configs(tmp_path / "absent") == ()


def pq_rows(folder, split: str) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob(f"{split}-*.parquet"))


def test_the_version_published_to_the_hub_reads_back_by_config_at_its_tag(published, tmp_path, monkeypatch):
    """Published to the Hub (a local stand-in over HTTP: the same upload, then the reads `datasets` makes of a
    repo) and declared by `hub_id`, `config`, `splits` and the tag `v1`: `curate ingest` reads it from there in a
    process of its own (HF_ENDPOINT, as a user points it), with the version's pair ids, and a rerun reads
    nothing (the tag was pinned to its commit)."""
    import os
    import subprocess
    import sys

    from flows.publish import publish
    from tests.tasks.publish.hub_standin import HubStandin, point_hub_clients_at

    warehouse, _, ids = published
    token = "hf_round_trip_token"
    with HubStandin(token=token) as hub:
        point_hub_clients_at(hub, monkeypatch)
        monkeypatch.setenv("HF_TOKEN", token)
        made = publish("release", to="hf://curators/release", warehouse=str(warehouse), allow_simulated=True)
        assert made["tag"] == "v1"
        toml = tmp_path / "sources.toml"
        toml.write_text('[sources.from-hub]\nhub_id = "curators/release"\nconfig = "dpo"\nsplits = ["train", "validation"]\n'
                        'revision = "v1"\nformat = "auto"\nlicense = "cc-by-4.0"\n', encoding="utf-8")
        env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_OFFLINE="0", HF_HOME=str(tmp_path / "hf-home"),
                   HF_TOKEN=token)
        fresh = tmp_path / "fresh.duckdb"
        command = [sys.executable, "-m", "curator.cli", "ingest", "--source", "from-hub", "--sources-file", str(toml),
                   "--warehouse", str(fresh)]
        first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert first.returncode == 0, first.stderr[-3000:]
        read = {(p.rsplit("/", 1)[-1], s) for m, p, s in hub.requests if m == "GET" and "/resolve/" in p}
        assert {name for name, status in read if status in (200, 206)} >= {"README.md"} and \
            any(name.endswith(".parquet") for name, _ in read)  # the card, then the data files, over HTTP
        with Warehouse(fresh, read_only=True) as wh:
            assert {r[0] for r in wh.query("SELECT pair_id FROM candidate_pairs")} == ids
            (pin,) = wh.query("SELECT revision FROM source_pins WHERE source = 'from-hub'")
        assert pin[0] == hub.tags["curators/release"]["v1"]  # the tag, pinned to its commit
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0 and "unchanged" in again.stdout + again.stderr, again.stderr[-3000:]

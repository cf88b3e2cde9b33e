"""Every source declaration the README and docs/sources.md show (each ```toml block) is ingested by `curate ingest`
as written, over rows of its data's shape: a local file's rows are what `curate synth NAME --sources-file` writes for
it; a Hub dataset's (or a published version's) are rows of the shape that dataset holds (`HUB_ROWS`, from its card),
read from a local file in its place (no network here; reading the Hub itself and a version's folder are tested in
tests/tasks/ingest/test_read.py and tests/flows/test_round_trip.py). A declaration whose columns or format its data
does not have fails here, as the README's Skywork example once did ("column(s) 'prompt' in no row of the first
batch")."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from curator.cli import app
from tests.curator.commands.test_ingest import clean_settings  # noqa: F401 - the fixture, used by name

pytestmark = [pytest.mark.prefect, pytest.mark.usefixtures("clean_settings")]
REPO = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/sources.md")
ROWS = 24
runner = CliRunner()


def _turns(i: int, answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Question {i}: how do tides work near {i * 7} degrees?"},
            {"role": "assistant", "content": f"{answer} {i}: the moon's pull, and the sun's, at {i * 7} degrees."}]


# what a Hub dataset's rows look like (its card's columns), by hub_id; a published version's by its config
HUB_ROWS: dict[str, Callable[[int], dict[str, Any]]] = {
    "Skywork/Skywork-Reward-Preference-80K-v0.2": lambda i: {
        "chosen": _turns(i, "A careful answer"), "rejected": _turns(i, "A hasty answer"), "source": "helpsteer2"},
    "Anthropic/hh-rlhf": lambda i: {
        "chosen": f"\n\nHuman: How do I bake bread number {i}?\n\nAssistant: Knead it for {i} minutes, then rest.",
        "rejected": f"\n\nHuman: How do I bake bread number {i}?\n\nAssistant: Bread is food."},
    "berkeley-nest/Nectar": lambda i: {
        "prompt": f"\n\nHuman: Name {i} prime numbers.\n\nAssistant:",
        "answers": [{"answer": f"Answer {k} of {i}: " + ", ".join(str(p) for p in range(2, 2 + k + i)),
                     "model": f"model-{k}", "rank": float(k + 1)} for k in range(7)],
        "turns": 1, "num_responses": 7, "source": ["sharegpt"], "good_natured": True},
    "dpo": lambda i: {"prompt": _turns(i, "")[:1], "chosen": _turns(i, "A careful answer")[1:],
                      "rejected": _turns(i, "A hasty answer")[1:], "pair_id": f"p{i}"},
    "rm": lambda i: {"chosen": _turns(i, "A careful answer"), "rejected": _turns(i, "A hasty answer"),
                     "pair_id": f"p{i}"},
}


def examples() -> list[tuple[str, str, dict[str, Any]]]:
    """(page, source name, its table) of every declaration the pages show."""
    found = []
    for page in PAGES:
        for block in re.findall(r"```toml\n(.*?)```", (REPO / page).read_text(encoding="utf-8"), re.DOTALL):
            for name, table in tomllib.loads(block)["sources"].items():
                found.append((page, name, table))
    return found


def _hub_shape(table: dict[str, Any]) -> str | None:
    """The key of HUB_ROWS a declaration's rows have: its Hub dataset's, or a version's config; None for a local file
    of its own format."""
    if "hub_id" in table:
        return table.get("config") if table.get("config") in HUB_ROWS else table["hub_id"]
    if not Path(table["path"]).suffix:  # a folder in the Hub's layout: a published version
        return table["config"]
    return None


def test_every_page_declares_examples_and_each_hub_dataset_has_its_rows_here():
    listed = examples()
    assert {page for page, _, _ in listed} == set(PAGES) and len(listed) >= 8
    assert {"trl", "trl-implicit", "pairwise", "rated", "hh"} <= {t.get("format") for _, _, t in listed}
    missing = {_hub_shape(t) for _, _, t in listed} - set(HUB_ROWS) - {None}
    assert not missing, f"add the rows of {missing} to HUB_ROWS"


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        # a Parquet column holds one type: the rows whose prompt is of the first row's (text, or a message list)
        first = type(next(iter(rows[0].values())))
        pq.write_table(pa.Table.from_pylist([r for r in rows if type(next(iter(r.values()))) is first]), path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.parametrize(("page", "name", "table"), examples(), ids=[f"{p}:{n}" for p, n, _ in examples()])
def test_each_example_ingests_as_written(tmp_path, page, name, table):
    shape = _hub_shape(table)
    declared = dict(table)
    if shape is not None:  # the Hub (or a version's folder) read from a file of its rows
        for key in ("hub_id", "path", "config", "splits", "revision"):
            declared.pop(key, None)
        declared["path"] = f"{name}.jsonl"
    toml = tmp_path / "sources.toml"
    toml.write_text(_toml(name, declared), encoding="utf-8")
    data = tmp_path / declared["path"]
    if shape is not None:
        _write(data, [HUB_ROWS[shape](i) for i in range(ROWS)])
    else:
        written = tmp_path / "synth" / f"{name}.jsonl"
        made = runner.invoke(app, ["synth", name, str(written), "--rows", str(ROWS), "--seed", "5", "--bad-rate", "0",
                                   "--exact-dup-rate", "0", "--near-dup-rate", "0", "--pair-bytes", "400",
                                   "--sources-file", str(toml)])
        assert made.exit_code == 0, made.output
        _write(data, [json.loads(line) for line in written.read_text().splitlines()])

    result = runner.invoke(app, ["ingest", "--source", name, "--sources-file", str(toml), "--warehouse",
                                 str(tmp_path / "warehouse.duckdb"), "--json"])
    assert result.exit_code == 0, f"{page} [sources.{name}]: {result.output}"
    summary = json.loads(result.stdout)
    assert summary["valid"] > 0 and summary["format"] == table.get("format", summary["format"])
    # nothing quarantined but rows whose responses all tie (a rated source's synthetic rows plant a few)
    assert set(summary["quarantined"]) <= {"no_clear_preference"}, summary["quarantined"]


def _toml(name: str, table: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    return f"[sources.{name}]\n" + "".join(f"{k} = {value(v)}\n" for k, v in table.items())

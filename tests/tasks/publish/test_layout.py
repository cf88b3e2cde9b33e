"""Publishing to a folder: a publish killed half-way leaves nothing the next one does not clean up, a
target that runs through a file is refused before anything is written, and each export the policy selects
is written under the schema it declares."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.curate.exports import EXPORTS, selected_exports
from tasks.publish.layout import (
    MissingColumnsError,
    PublishTargetError,
    check_folder_target,
    export_files,
    remove_stale_staging,
    write_atomically,
)

REPO = Path(__file__).resolve().parents[3]


def test_a_publish_killed_mid_write_leaves_staging_that_the_next_publish_removes(tmp_path):
    parent = tmp_path / "published" / "prefs"
    code = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from tasks.publish.layout import write_atomically

        def fill(folder):
            (folder / "data").mkdir()
            (folder / "data" / "train-00000.parquet").write_bytes(b"PAR1 partial")
            print("filling", flush=True)
            time.sleep(600)

        write_atomically(Path({str(parent / "v1-abc")!r}), fill)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "filling"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    left = [p.name for p in parent.iterdir()]
    assert len(left) == 1 and left[0].startswith(".v1-abc.staging-")  # hidden, partial, never renamed

    # a staging folder of a live process (this one) is never touched
    busy = parent / f".v2-def.staging-{os.uname().nodename}-{os.getpid()}-x1"
    busy.mkdir()
    write_atomically(parent / "v3-123", lambda folder: (folder / "README.md").write_text("card"))
    assert sorted(p.name for p in parent.iterdir()) == sorted([busy.name, "v3-123"])

    # one of another host is removed only once abandoned for a day
    other = parent / ".v4-aaa.staging-some-other-host-123-zz9"
    other.mkdir()
    assert remove_stale_staging(parent) == [] and other.exists()
    old = time.time() - 2 * 24 * 3600
    os.utime(other, (old, old))
    assert remove_stale_staging(parent) == [other.name] and not other.exists()


def test_a_target_inside_a_regular_file_is_refused(tmp_path):
    regular = tmp_path / "notes.txt"
    regular.write_text("a file")
    with pytest.raises(PublishTargetError, match="notes.txt is a file, not a folder"):
        check_folder_target(regular / "prefs" / "v1-abc")
    check_folder_target(tmp_path / "new" / "prefs" / "v1-abc")  # a folder still to be made is fine


ROW = {"pair_id": "p1", "prompt": [{"role": "user", "content": "q?"}], "chosen": "good", "rejected": "bad",
       "chosen_side": "b", "margin": 2.0, "confidence": 0.9, "p_correct": None, "source": "arena",
       "domain": "general", "language": "en", "split": "train"}


def test_each_default_export_is_written_per_split_under_its_declared_schema(tmp_path):
    rows = [ROW, {**ROW, "pair_id": "p2"}, {**ROW, "pair_id": "p3", "split": "validation"}]
    configs = export_files(tmp_path, rows, {})
    assert configs == {e.name: ["train", "validation"] for e in selected_exports({})}
    for name in configs:
        table = pq.read_table(tmp_path / "data" / name / "train-00000-of-00001.parquet")
        assert table.num_rows == 2 and table.schema.remove_metadata() == EXPORTS[name].schema({})
        assert table.schema.field("p_correct").type == pa.float64()  # no calibration: still a float column


def test_the_policy_picks_the_exports_and_a_missing_column_is_refused_before_anything_is_written(tmp_path):
    assert export_files(tmp_path / "one", [ROW], {"exports": ["helpsteer3"]}) == {"helpsteer3": ["train"]}
    assert [p.name for p in (tmp_path / "one" / "data").iterdir()] == ["helpsteer3"]
    no_side = {k: v for k, v in ROW.items() if k != "chosen_side"}
    with pytest.raises(MissingColumnsError, match="export 'helpsteer3' needs the column\\(s\\) chosen_side"):
        export_files(tmp_path / "two", [no_side], {})  # dpo and rm could be written: none is
    assert not (tmp_path / "two").exists()


def test_every_export_in_the_registry_loads_with_datasets_from_a_published_folder(tmp_path):
    import datasets

    from tasks.publish.card import card_markdown

    rows = [ROW, {**ROW, "pair_id": "p2", "chosen_side": "a", "p_correct": 0.8},
            {**ROW, "pair_id": "p3", "split": "validation"}]
    policy = {"exports": list(EXPORTS)}
    folder = tmp_path / "every-export"
    configs = export_files(folder, rows, policy)
    assert list(configs) == list(EXPORTS)
    (folder / "README.md").write_text(card_markdown(
        name="prefs", version=1, content_hash="abc", rows=rows, stats={}, policy=policy, judge_config={},
        source_revisions={}, licenses=["arena: cc-by-4.0"], configs=configs, plot_file="plot.svg"))
    for name, export in EXPORTS.items():
        loaded = datasets.load_dataset(str(folder), name)
        assert set(loaded) == {"train", "validation"}
        assert loaded["train"].column_names == export.schema(policy).names
        assert len(loaded["train"]) == len(export.records(rows[:2], policy))


def test_a_target_under_proc_or_sys_or_read_only_is_refused_and_a_failed_write_is_one_line(tmp_path):
    from tasks.publish.layout import check_writable_target

    for final in (Path("/proc/published/v1"), Path("/sys/fs/x/v1"), Path("/proc")):
        with pytest.raises(PublishTargetError, match="is a kernel filesystem, not storage"):
            write_atomically(final, lambda folder: None)
    check_writable_target(tmp_path / "new" / "v1")  # a folder still to be made, under a writable one

    def full(folder: Path) -> None:
        (folder / "README.md").write_text("card")
        raise OSError(28, "No space left on device")

    final = tmp_path / "out" / "v1-abc"
    with pytest.raises(PublishTargetError) as caught:
        write_atomically(final, full)
    assert str(caught.value) == f"cannot publish to {final}: No space left on device"
    assert list((tmp_path / "out").iterdir()) == []  # the staging folder is gone

import json
import statistics
from collections import Counter, defaultdict

from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import read_jsonl
from tasks.ingest.sources import get_source
from tasks.ingest.sources.ultrafeedback import source_id
from tasks.ingest.synth import SynthManifest, synth_class, synth_eval_prompts, synth_lines, write_synth


def test_seeded_and_reproducible():
    a = list(synth_lines("helpsteer3", 300, seed=5))
    b = list(synth_lines("helpsteer3", 300, seed=5))
    c = list(synth_lines("helpsteer3", 300, seed=6))
    assert a == b and a != c


def test_planted_counts_and_sizes(tmp_path):
    m = SynthManifest("helpsteer3", 0)
    lines = list(synth_lines("helpsteer3", 3000, seed=1, exact_dup_rate=0.05, near_dup_rate=0.05, bad_rate=0.02,
                             contamination_rate=0.01, eval_prompts=synth_eval_prompts(20), manifest=m))
    assert len(lines) == 3000 == m.rows
    assert 100 < len(m.exact_duplicates) < 200 and 100 < len(m.near_duplicates) < 200
    assert 30 < len(m.bad_rows) < 100 and len(m.contaminated) > 10
    sizes = []
    for i, line in enumerate(lines):
        if i in m.bad_rows:
            continue
        row = json.loads(line)
        sizes.append(sum(len(x["content"].encode()) for x in row["context"]) + len(row["response1"]) + len(row["response2"]))
    assert 5000 < statistics.median(sizes) < 7500  # about 6 KB of text a pair


def test_exact_duplicates_are_the_same_comparison(tmp_path):
    m = write_synth(tmp_path / "a.jsonl", "arena", 600, seed=2, exact_dup_rate=0.1)
    rows = (tmp_path / "a.jsonl").read_text().splitlines()
    for dup, orig in m.exact_duplicates[:20]:
        a, b = json.loads(rows[dup]), json.loads(rows[orig])
        texts = lambda r: {r["conversation_a"][-1]["content"][0]["text"], r["conversation_b"][-1]["content"][0]["text"]}  # noqa: E731
        assert texts(a) == texts(b) and a["id"] != b["id"]


def test_ultrafeedback_rows_are_seeded_and_plant_every_kind():
    m = SynthManifest("ultrafeedback", 0)
    a = list(synth_lines("ultrafeedback", 800, seed=5, bad_rate=0.1, manifest=m))
    assert a == list(synth_lines("ultrafeedback", 800, seed=5, bad_rate=0.1))
    assert a != list(synth_lines("ultrafeedback", 800, seed=6, bad_rate=0.1))
    assert {k for k, _ in m.bad_rows.values()} == set(synth_class("ultrafeedback").BAD_KINDS)
    assert m.no_clear_preference and m.exact_duplicates and m.near_duplicates
    assert not set(m.no_clear_preference) & (set(m.pairs) | set(m.bad_rows))
    row = json.loads(a[next(i for i in range(len(a)) if i in m.pairs and i not in m.bad_rows)])
    assert {"source", "instruction", "models", "completions"} <= set(row) and len(row["completions"]) == 4
    assert {"model", "response", "annotations", "fine-grained_score", "overall_score", "critique",
            "custom_system_prompt", "principle"} <= set(row["completions"][0])


def test_ultrafeedback_rows_make_the_pairs_and_quarantine_the_manifest_says(tmp_path, settings):
    path = tmp_path / "uf.jsonl"
    m = write_synth(path, "ultrafeedback", 1200, seed=9, pair_bytes=1200, bad_rate=0.1, exact_dup_rate=0.05,
                    near_dup_rate=0.05)
    lines = path.read_text().splitlines()
    made, pair_ids, quarantined = Counter(), defaultdict(set), {}
    for batch in read_jsonl(path, batch_size=400):
        prepared = prepare_batch(batch, get_source("ultrafeedback"), settings, str(path))
        for pair, pid in zip(prepared.pairs, prepared.pair_ids):
            row_id = pair.source_id.rsplit(":", 1)[0]
            made[row_id] += 1
            pair_ids[row_id].add(pid)
        quarantined |= {int(q.position.rsplit(":", 1)[1]) - 1: q for q in prepared.quarantined}

    expected = Counter()
    for i, n in m.pairs.items():
        expected[source_id(json.loads(lines[i]))] += n  # identical lines share their row id
    assert made == expected and sum(made.values()) == sum(m.pairs.values()) > len(m.pairs)
    for i, (kind, reason) in m.bad_rows.items():
        assert any(r.startswith(reason) for r in quarantined[i].reasons), (kind, quarantined[i].reasons)
    assert all(quarantined[i].reasons == ["no_clear_preference"] for i in m.no_clear_preference)
    assert set(quarantined) == set(m.bad_rows) | set(m.no_clear_preference)
    for dup, orig in m.exact_duplicates:  # the same comparisons, whatever the completions' order
        assert pair_ids[source_id(json.loads(lines[dup]))] == pair_ids[source_id(json.loads(lines[orig]))]


def test_the_manifest_marks_exactly_the_bytes_synth_wrote(tmp_path):
    from tasks.ingest.read import file_revision
    from tasks.ingest.synth import written_by_synth

    path = tmp_path / "rows.jsonl"
    m = write_synth(path, "helpsteer3", 20, seed=1, pair_bytes=300)
    assert m.revision == file_revision(path) and written_by_synth(path, file_revision(path))
    assert SynthManifest.from_json((tmp_path / "rows.jsonl.manifest.json").read_text()).revision == m.revision
    other = tmp_path / "other.jsonl"
    other.write_text(path.read_text().replace("a", "b", 1))
    (tmp_path / "other.jsonl.manifest.json").write_text((tmp_path / "rows.jsonl.manifest.json").read_text())
    assert not written_by_synth(other, file_revision(other))  # edited since: not the rows synth wrote
    assert not written_by_synth(tmp_path / "none.jsonl", "file:x")  # no manifest
    (tmp_path / "bad.jsonl.manifest.json").write_text("[1, 2")
    assert not written_by_synth(tmp_path / "bad.jsonl", "file:x")

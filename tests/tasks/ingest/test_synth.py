import json
import statistics

from tasks.ingest.synth import SynthManifest, synth_eval_prompts, synth_lines, write_synth


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

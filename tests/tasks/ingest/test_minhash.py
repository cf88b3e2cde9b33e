import numpy as np

from tasks.ingest import minhash
from tasks.ingest.synth_rows import TextMaker


def _exact_jaccard(a: str, b: str) -> float:
    ha, oa = minhash.shingle_hashes([a])
    hb, ob = minhash.shingle_hashes([b])
    sa, sb = set(ha.tolist()), set(hb.tolist())
    return len(sa & sb) / len(sa | sb)


def test_shingles_ignore_case_and_whitespace_runs():
    h1, _ = minhash.shingle_hashes(["Hello   World,\n this is  a test"])
    h2, _ = minhash.shingle_hashes(["hello world, this is a test"])
    assert set(h1.tolist()) == set(h2.tolist())


def test_shingles_of_a_doc_do_not_depend_on_its_neighbours():
    a, _ = minhash.shingle_hashes(["first document text here"])
    h, off = minhash.shingle_hashes(["zzz other", "first document text here", "yyy"])
    assert h[off[1]:off[2]].tolist() == a.tolist()


def test_cjk_text_gets_a_shingle_per_character():
    h, off = minhash.shingle_hashes(["你好世界这是一个测试"])
    assert len(h) == 10


def test_signature_estimates_jaccard():
    tm = TextMaker(3)
    rng = np.random.default_rng(0)
    errors = []
    for rate in (0.0, 0.01, 0.03, 0.08, 0.2):
        for _ in range(5):
            a = tm.text(4000)
            b = tm.edit(a, rate) if rate else a
            h, off = minhash.shingle_hashes([a, b])
            sig = minhash.signatures(h, off, 256)
            est = minhash.estimated_jaccard(sig[0], sig[1])
            errors.append(abs(est - _exact_jaccard(a, b)))
    assert max(errors) < 0.12 and np.mean(errors) < 0.04
    unrelated = minhash.signatures(*minhash.shingle_hashes([tm.text(3000), tm.text(3000)]), 256)
    assert minhash.estimated_jaccard(unrelated[0], unrelated[1]) < 0.2
    assert rng is not None


def test_short_texts_are_densified_without_empty_bins():
    sig = minhash.signatures(*minhash.shingle_hashes(["two words", "two words", "other words"]), 128)
    assert (sig != 0xFFFFFFFF).all()
    assert minhash.estimated_jaccard(sig[0], sig[1]) == 1.0
    assert minhash.estimated_jaccard(sig[0], sig[2]) < 1.0


def test_lsh_params_reach_the_target_below_threshold():
    bands, rows = minhash.lsh_params(0.8, 256)
    assert bands * rows <= 256
    assert 1 - (1 - 0.75**rows) ** bands >= 0.95
    assert 1 - (1 - 0.3**rows) ** bands < 0.01  # unrelated docs rarely collide


def test_band_keys_equal_only_for_equal_bands():
    sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [7, 2, 3, 4]], dtype=np.uint32)
    keys = minhash.band_keys(sig, 2, 2)
    assert keys[0, 0] == keys[1, 0] and keys[0, 1] != keys[1, 1] and keys[0, 1] == keys[2, 1] and keys[0, 0] != keys[2, 0]

"""The judged pool's model names: only a source whose facts say its pairs name their models lends them to the
bias audit's model families."""

from __future__ import annotations

from tasks.curate.bias import audit
from tasks.curate.confidence import pool_confidences
from tasks.curate.pool import JudgedPair, JudgedPool, models_as_stated
from tasks.curate.select import pool_index, preferences
from tasks.judge.genrm import Verdict, to_a_side

STRONG_A = [("ab", (5, 1, 1)), ("ba", (1, 5, 6))]


def _pool() -> JudgedPool:
    def pair(i: int, source: str) -> JudgedPair:
        return JudgedPair(f"p{i:03d}", source, str(i), "r", [{"role": "user", "content": f"q{i}"}], f"A{i}", f"B{i}",
                          None, False, "general", "en", False, [(o, to_a_side(Verdict(*v), o)) for o, v in STRONG_A],
                          model_a=f"gpt-{i}" if source == "naming" else f"llama-{i}", model_b=f"claude-{i}")

    return JudgedPool.of([pair(i, "naming" if i % 2 else "silent") for i in range(10)])


def test_only_sources_that_name_their_models_count_in_the_model_families():
    pool = _pool()
    stated = models_as_stated(pool, {"naming"})
    naming = stated.source == "naming"
    assert all(m is None for m in stated.model_a[~naming]) and all(m is None for m in stated.model_b[~naming])
    assert stated.model_a[naming].tolist() == pool.model_a[naming].tolist()
    assert models_as_stated(pool, {"naming", "silent"}) is pool  # every source names them: nothing to take away
    c = pool_confidences(len(stated), stated.v_pair, stated.v_ab, stated.v_margin, stated.v_scores_agree,
                         stated.human_label)
    families = audit(preferences(stated, c, pool_index(c)))["model_families"]
    assert set(families) == {"gpt", "claude"} and families["gpt"]["pairs"] == 5  # no llama: its source is silent
    nobody = models_as_stated(pool, set())
    assert audit(preferences(nobody, c, pool_index(c)))["model_families"] == {}

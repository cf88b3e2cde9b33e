from collections import Counter

import numpy as np

from tasks.curate.confidence import pool_confidences
from tasks.curate.policy import FilterPolicy, make_policy
from tasks.curate.pool import JudgedPair, JudgedPool
from tasks.curate.select import REASONS, content_hash, select_rows, split_of, version_table
from tasks.judge.genrm import SideVerdict, Verdict, to_a_side


def _pair(i, verdicts, **kw):
    base = dict(pair_id=f"p{i:03d}", source="helpsteer3", source_id=str(i), source_revision="r",
                history=[{"role": "user", "content": f"question {kw.pop('prompt', i)}"}], response_a=f"A{i}",
                response_b=f"B{i}", human_label=None, both_bad=False, domain="general", language="english",
                contaminated=False)
    base.update(kw)
    return JudgedPair(**base, verdicts=[(o, to_a_side(Verdict(*v), o)) for o, v in verdicts])


def _select(pairs, policy, p_correct=None):
    pool = JudgedPool.of(pairs)
    c = pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)
    kept, dropped = select_rows(pool, c, policy, p_correct)
    p = np.full(len(pool), np.nan) if p_correct is None else p_correct
    return version_table(pool, c, p, kept, policy).to_pylist(), dropped


STRONG_A = [("ab", (5, 1, 1)), ("ba", (1, 5, 6))]
STRONG_B = [("ab", (1, 5, 6)), ("ba", (5, 1, 1))]
FLIP = [("ab", (4, 2, 2)), ("ba", (4, 2, 2))]
SLIGHT = [("ab", (4, 3, 3)), ("ba", (3, 4, 4))]


def test_direction_filters_and_reasons():
    pairs = [_pair(0, STRONG_A), _pair(1, STRONG_B, human_label=1.0), _pair(2, FLIP), _pair(3, SLIGHT),
             _pair(4, STRONG_A, contaminated=True), _pair(5, STRONG_A, both_bad=True), _pair(6, []),
             _pair(7, [("ab", (5, 1, 1))])]
    rows, dropped = _select(pairs, make_policy({}))
    assert [r["pair_id"] for r in rows] == ["p000", "p001"]
    assert (rows[0]["chosen_side"], rows[0]["margin"], rows[0]["orders_agree"]) == ("a", 2.5, True)
    assert (rows[1]["chosen_side"], rows[1]["human_label"], rows[1]["human_agrees"]) == ("b", -1.0, False)
    assert dropped == Counter(judge_tie=1, margin_below_min=1, contaminated=1, both_bad=1, not_judged=1,
                              one_order_only=1)


def test_human_policy_and_caps():
    pairs = [_pair(0, STRONG_A, human_label=-2.0), _pair(1, STRONG_A, prompt=9), _pair(2, STRONG_B, prompt=9),
             _pair(3, STRONG_A, prompt=9)]
    rows, dropped = _select(pairs, make_policy({"human_label": "require_agreement", "max_per_prompt": 2}))
    assert [r["pair_id"] for r in rows] == ["p001", "p002"] and dropped == Counter(human_disagrees=1, cap_per_prompt=1)
    rows, _ = _select(pairs, make_policy({"max_per_source": 3, "human_label": "ignore"}))
    assert len(rows) == 3 and all(r["human_agrees"] is None for r in rows)


def test_caps_keep_the_most_confident_first_and_ties_by_pair_id():
    slight_a = [("ab", (4, 3, 3)), ("ba", (3, 4, 4))]
    pairs = [_pair(3, STRONG_A, prompt=1, domain="code"), _pair(1, slight_a, prompt=1, domain="code"),
             _pair(2, STRONG_A, prompt=1, domain="code"), _pair(4, STRONG_A, prompt=2, domain=None),
             _pair(5, STRONG_A, prompt=3, domain=None)]
    rows, dropped = _select(pairs, make_policy({"max_per_prompt": 1, "min_abs_margin": 0.0}))
    assert [r["pair_id"] for r in rows] == ["p002", "p004", "p005"] and dropped == Counter(cap_per_prompt=2)
    rows, dropped = _select(pairs, make_policy({"max_per_domain": 1, "min_abs_margin": 0.0}))
    assert [r["pair_id"] for r in rows] == ["p002", "p004"] and dropped == Counter(cap_per_domain=3)


def test_split_is_by_prompt_and_hash_is_deterministic():
    pairs = [_pair(i, STRONG_A if i % 2 else STRONG_B, prompt=i // 3) for i in range(300)]
    policy = make_policy({"validation_share": 0.2})
    rows, _ = _select(pairs, policy)
    prompts = {p.pair_id: p.history[0]["content"] for p in pairs}
    by_prompt = {}
    for r in rows:
        by_prompt.setdefault(prompts[r["pair_id"]], set()).add(r["split"])
        assert r["split"] == split_of(next(p.history for p in pairs if p.pair_id == r["pair_id"]), 0.2)
    assert all(len(s) == 1 for s in by_prompt.values())  # no prompt in both splits
    share = sum(r["split"] == "validation" for r in rows) / len(rows)
    assert 0.08 < share < 0.35
    again, _ = _select(list(reversed(pairs)), policy)
    assert again == rows
    assert split_of([{"role": "user", "content": "x"}], 0.0) == "train"


def test_content_hash_follows_the_digests_and_export_options():
    assert content_hash(["a", "b"]) == content_hash(iter(["a", "b"]))
    assert content_hash(["a", "b"]) != content_hash(["a"])
    assert content_hash(["a", "b"]) != content_hash(["a", "b"], {"rm_margin_column": True})


def test_min_p_correct_filters_on_the_calibrated_probability_and_counts_none_as_below():
    pairs = [_pair(i, STRONG_A) for i in range(4)]
    rows, dropped = _select(pairs, make_policy({"min_p_correct": 0.8}), np.array([0.9, 0.7, np.nan, 0.95]))
    assert [r["pair_id"] for r in rows] == ["p000", "p003"] and dropped == Counter(p_correct_below_min=2)
    assert [r["p_correct"] for r in rows] == [0.9, 0.95]


def test_adaptive_pairs_judged_in_one_order_on_purpose_are_kept_and_broken_ones_are_not():
    loose = {"min_abs_margin": 0.0, "min_confidence": 0.0}

    def reason(adaptive, failed, margin, scores=(5, 1), policy=FilterPolicy(**loose)):
        ranking = int(3.5 - margin)
        p = JudgedPair("p", "s", "1", "r", [{"role": "user", "content": "q"}], "a", "b", None, False, None, None,
                       False, [("ab", SideVerdict(scores[0], scores[1], ranking, margin))], adaptive, failed)
        rows, dropped = _select([p], policy)
        assert len(rows) + sum(dropped.values()) == 1
        return None if rows else next(iter(dropped))

    assert reason(True, False, 2.5) is None  # decisive, on purpose: kept
    assert reason(True, True, 2.5) == "second_order_failed"
    assert reason(True, False, 0.5) == "second_order_missing"  # borderline, no ba
    assert reason(True, False, 2.5, scores=(1, 5)) == "second_order_missing"
    assert reason(False, False, 2.5) == "one_order_only"  # `single`: no bias check
    assert reason(True, False, 2.5, policy=FilterPolicy(one_order_decisive="drop", **loose)) == "one_order_decisive"
    assert set(REASONS) >= {"one_order_only", "second_order_failed", "second_order_missing", "one_order_decisive"}


def test_a_certified_selection_drops_what_it_did_not_accept_before_the_label_filters():
    from common.reasons import Dropped
    from tasks.curate.select import certifiable, drop_reasons

    # 0 judged, strong; 1 the human disagrees; 2 orders disagree; 3 contaminated; 4 human tie; 5 strong, not accepted
    disagreeing = [("ab", (5, 1, 1)), ("ba", (5, 1, 2))]  # A by much, then B (shown first) by a little
    pairs = [_pair(0, STRONG_A, human_label=2.0), _pair(1, STRONG_A, human_label=-2.0), _pair(2, disagreeing),
             _pair(3, STRONG_A, contaminated=True), _pair(4, STRONG_A, human_label=0.0), _pair(5, STRONG_B),
             _pair(6, SLIGHT)]
    pool = JudgedPool.of(pairs)
    c = pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)
    policy = make_policy({"target_agreement": 0.9, "human_label": "require_agreement", "human_ties": "drop"})
    # what a certification may accept is chosen without a label: the human's disagreement and tie do not count,
    # the judge's own filters do (orders disagreeing, contamination); a slight margin is no longer a reason
    assert certifiable(pool, c, policy).tolist() == [True, True, False, False, True, True, True]
    accepted = np.array([True, True, False, False, True, False, False])
    codes = drop_reasons(pool, c, policy, np.full(len(pool), np.nan), accepted)
    said = [None if k == 0 else REASONS[k - 1] for k in codes]
    assert said == [None, Dropped.HUMAN_DISAGREES, Dropped.ORDERS_DISAGREE, Dropped.CONTAMINATED, Dropped.HUMAN_TIE,
                    Dropped.NOT_CERTIFIED, Dropped.NOT_CERTIFIED]
    kept, dropped = select_rows(pool, c, policy, None, None, accepted)
    assert kept.tolist() == [0] and dropped[Dropped.NOT_CERTIFIED] == 2
    # without a certification the order is as it always was: the human tie before the judge's filters
    plain = make_policy({"human_ties": "drop", "min_abs_margin": 0.0})
    assert REASONS[drop_reasons(pool, c, plain, np.full(len(pool), np.nan))[4] - 1] == Dropped.HUMAN_TIE


def test_a_ladders_one_order_pair_is_left_to_its_certificate():
    """A judge ladder's pair with one GenRM order the reward model scored: a certified build leaves it to the
    certificate (the reward model stands where the other order would); a build without one drops it as before."""
    from dataclasses import replace

    from common.reasons import Dropped
    from tasks.curate.ladder import with_reward_model
    from tasks.curate.select import certifiable, drop_reasons

    slight = [("ab", (4, 3, 3))]  # one order, not decisive
    pool = JudgedPool.of([_pair(i, slight, one_order_on_purpose=True) for i in range(3)])
    pool = replace(pool, rm_margin=np.array([0.8, -0.8, np.nan]))  # agrees, disagrees, not scored
    c = with_reward_model(pool, pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin,
                                                 pool.v_scores_agree, pool.human_label))
    policy = make_policy({"target_agreement": 0.9})
    assert certifiable(pool, c, policy).tolist() == [True, True, False]
    certified = drop_reasons(pool, c, policy, np.full(3, np.nan), np.ones(3, bool))
    assert [REASONS[k - 1] if k else None for k in certified] == [None, None, Dropped.SECOND_ORDER_MISSING]
    plain = drop_reasons(pool, c, make_policy({"min_abs_margin": 0.0, "min_confidence": 0.0}), np.full(3, np.nan))
    assert all(REASONS[k - 1] == Dropped.SECOND_ORDER_MISSING for k in plain)

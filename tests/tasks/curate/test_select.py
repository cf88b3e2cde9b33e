from collections import Counter

from tasks.curate.policy import make_policy
from tasks.curate.select import JudgedPair, content_hash, select_rows, split_of
from tasks.judge.genrm import Verdict, to_a_side


def _pair(i, verdicts, **kw):
    base = dict(pair_id=f"p{i:03d}", source="helpsteer3", source_id=str(i), source_revision="r",
                history=[{"role": "user", "content": f"question {kw.pop('prompt', i)}"}], response_a=f"A{i}",
                response_b=f"B{i}", human_label=None, both_bad=False, domain="general", language="english",
                contaminated=False)
    base.update(kw)
    return JudgedPair(**base, verdicts=[(o, to_a_side(Verdict(*v), o)) for o, v in verdicts])


STRONG_A = [("ab", (5, 1, 1)), ("ba", (1, 5, 6))]
STRONG_B = [("ab", (1, 5, 6)), ("ba", (5, 1, 1))]
FLIP = [("ab", (4, 2, 2)), ("ba", (4, 2, 2))]
SLIGHT = [("ab", (4, 3, 3)), ("ba", (3, 4, 4))]


def test_direction_filters_and_reasons():
    pairs = [_pair(0, STRONG_A), _pair(1, STRONG_B, human_label=1.0), _pair(2, FLIP), _pair(3, SLIGHT),
             _pair(4, STRONG_A, contaminated=True), _pair(5, STRONG_A, both_bad=True), _pair(6, []),
             _pair(7, [("ab", (5, 1, 1))])]
    rows, dropped = select_rows(pairs, make_policy({}))
    assert [r.pair_id for r in rows] == ["p000", "p001"]
    assert (rows[0].chosen, rows[0].rejected, rows[0].chosen_side, rows[0].margin) == ("A0", "B0", "a", 2.5)
    assert (rows[1].chosen, rows[1].chosen_side, rows[1].human_label, rows[1].human_agrees) == ("B1", "b", -1.0, False)
    assert dropped == Counter(judge_tie=1, margin_below_min=1, contaminated=1, both_bad=1, not_judged=1,
                              one_order_only=1)


def test_human_policy_and_caps():
    pairs = [_pair(0, STRONG_A, human_label=-2.0), _pair(1, STRONG_A, prompt=9), _pair(2, STRONG_B, prompt=9),
             _pair(3, STRONG_A, prompt=9)]
    rows, dropped = select_rows(pairs, make_policy({"human_label": "require_agreement", "max_per_prompt": 2}))
    assert [r.pair_id for r in rows] == ["p001", "p002"] and dropped == Counter(human_disagrees=1, cap_per_prompt=1)
    rows, _ = select_rows(pairs, make_policy({"max_per_source": 3, "human_label": "ignore"}))
    assert len(rows) == 3 and all(r.human_agrees is None for r in rows)


def test_split_is_by_prompt_and_hash_is_deterministic():
    pairs = [_pair(i, STRONG_A if i % 2 else STRONG_B, prompt=i // 3) for i in range(300)]
    policy = make_policy({"validation_share": 0.2})
    rows, _ = select_rows(pairs, policy)
    by_prompt = {}
    for r in rows:
        by_prompt.setdefault(r.prompt[0]["content"], set()).add(r.split)
    assert all(len(s) == 1 for s in by_prompt.values())  # no prompt in both splits
    share = sum(r.split == "validation" for r in rows) / len(rows)
    assert 0.08 < share < 0.35
    again, _ = select_rows(list(reversed(pairs)), policy)
    assert content_hash(rows) == content_hash(again)
    fewer, _ = select_rows(pairs[:-1], policy)
    assert content_hash(fewer) != content_hash(rows)
    assert split_of([{"role": "user", "content": "x"}], 0.0) == "train"


def test_adaptive_pairs_judged_in_one_order_on_purpose_are_kept_and_broken_ones_are_not():
    from tasks.curate.confidence import pair_confidence
    from tasks.curate.policy import FilterPolicy
    from tasks.curate.select import JudgedPair, one_order_reason
    from tasks.judge.genrm import SideVerdict

    def pair(adaptive, failed, margin, scores=(5, 1)):
        ranking = int(3.5 - margin)
        p = JudgedPair("p", "s", "1", "r", [{"role": "user", "content": "q"}], "a", "b", None, False, None, None,
                       False, [("ab", SideVerdict(scores[0], scores[1], ranking, margin))], adaptive, failed)
        return p, pair_confidence(p.verdicts)

    policy = FilterPolicy()
    assert one_order_reason(*pair(True, False, 2.5), policy) is None  # decisive, on purpose: kept
    assert one_order_reason(*pair(True, True, 2.5), policy) == "second_order_failed"
    assert one_order_reason(*pair(True, False, 0.5), policy) == "second_order_missing"  # borderline, no ba
    assert one_order_reason(*pair(True, False, 2.5, scores=(1, 5)), policy) == "second_order_missing"
    assert one_order_reason(*pair(False, False, 2.5), policy) == "one_order_only"  # `single`: no bias check
    assert one_order_reason(*pair(True, False, 2.5), FilterPolicy(one_order_decisive="drop")) == "one_order_decisive"

from tasks.curate.diff import diff_versions
from tasks.curate.exports import EXPORTS, dpo_record, export_record, helpsteer3_record, rm_record

ROW = {"pair_id": "p1", "prompt": [{"role": "user", "content": "q?"}], "chosen": "good", "rejected": "bad",
       "chosen_side": "b", "margin": 2.5, "confidence": 0.9, "source": "arena", "domain": "general",
       "language": "en", "split": "train"}


def test_dpo_is_trl_conversational():
    r = dpo_record(ROW)
    assert r["prompt"] == [{"role": "user", "content": "q?"}]
    assert r["chosen"] == [{"role": "assistant", "content": "good"}]
    assert r["rejected"] == [{"role": "assistant", "content": "bad"}]
    assert (r["judge_margin"], r["confidence"]) == (2.5, 0.9)
    assert "margin" not in r


def test_rm_pairs_are_whole_conversations():
    r = rm_record(ROW)
    assert r["chosen"][-1] == {"role": "assistant", "content": "good"} and r["chosen"][:-1] == ROW["prompt"]
    assert r["rejected"][-1]["content"] == "bad"


def test_rm_has_no_trl_margin_column_unless_the_policy_asks():
    # TRL's RewardTrainer subtracts any `margin` column inside its loss: only on purpose
    assert "margin" not in rm_record(ROW) and rm_record(ROW)["judge_margin"] == 2.5
    assert export_record("rm", ROW, {"rm_margin_column": True})["margin"] == 2.5
    assert "margin" not in export_record("rm", ROW, {"rm_margin_column": False})
    assert "margin" not in export_record("dpo", ROW, {"rm_margin_column": True})


def test_helpsteer3_keeps_the_pair_order_and_sign():
    r = helpsteer3_record(ROW)  # chosen is B: response2, positive preference
    assert (r["response1"], r["response2"], r["overall_preference"]) == ("bad", "good", 3)
    weak_a = helpsteer3_record({**ROW, "chosen_side": "a", "margin": 1.0})
    assert (weak_a["response1"], weak_a["overall_preference"]) == ("good", -1)


def test_diff_added_removed_flipped():
    old = [dict(ROW), {**ROW, "pair_id": "p2"}, {**ROW, "pair_id": "p3"}]
    new = [{**ROW, "chosen_side": "a"}, {**ROW, "pair_id": "p3"}, {**ROW, "pair_id": "p4", "margin": 1.0}]
    d = diff_versions(old, new)
    assert (d["added"], d["removed"], d["flipped"]) == (["p4"], ["p2"], ["p1"])
    assert d["before"]["rows"] == d["after"]["rows"] == 3 and d["after"]["mean_margin"] < d["before"]["mean_margin"]


def test_diff_names_the_policy_keys_that_changed_and_why_equal_rows_differ():
    rows = [dict(ROW), {**ROW, "pair_id": "p2"}]
    old = {"policy": {"min_abs_margin": 1.0, "rm_margin_column": False}, "judge_config_id": "jc-1", "content_hash": "a"}
    new = {"policy": {"min_abs_margin": 1.0, "rm_margin_column": True}, "judge_config_id": "jc-1", "content_hash": "b"}
    d = diff_versions(rows, rows, old, new)
    assert (d["added"], d["removed"], d["flipped"], d["changed"]) == ([], [], [], [])
    assert d["policy_changes"] == {"rm_margin_column": [False, True]}
    assert d["note"] == "same pairs on the same sides; the exports differ: rm_margin_column false -> true"
    looser = {**new, "policy": {"min_abs_margin": 0.5, "rm_margin_column": False}}
    moved = diff_versions(rows, [rows[0], {**rows[1], "margin": 0.7}], old, looser)
    assert moved["policy_changes"] == {"min_abs_margin": [1.0, 0.5]} and moved["changed"] == ["p2"]
    assert "1 rows' values moved" in moved["note"]
    assert diff_versions(rows, rows[:1], old, looser)["note"] is None  # pairs differ: the counts say it


def test_kto_gives_each_pair_one_desirable_and_one_undesirable_row():
    chosen, rejected = EXPORTS["kto"].records([ROW])
    assert chosen["prompt"] == rejected["prompt"] == [{"role": "user", "content": "q?"}]
    assert (chosen["completion"], chosen["label"]) == ([{"role": "assistant", "content": "good"}], True)
    assert (rejected["completion"], rejected["label"]) == ([{"role": "assistant", "content": "bad"}], False)
    assert chosen["pair_id"] == rejected["pair_id"] == "p1" and chosen["judge_margin"] == 2.5
    assert not EXPORTS["kto"].default  # a new config in the published layout only when a policy asks

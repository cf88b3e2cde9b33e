import re
from pathlib import Path

import pytest

from tasks.curate.policy import MAX_POLICY_BYTES, FilterPolicy, PolicyError, load_policy


def test_defaults_and_file_with_overrides(tmp_path):
    assert load_policy(None) == FilterPolicy()
    path = tmp_path / "p.toml"
    path.write_text('[policy]\nmin_abs_margin = 1.5\nhuman_label = "require_agreement"\nmax_per_prompt = 2\n')
    p = load_policy(path, {"min_confidence": 0.3, "max_spread": None})
    assert (p.min_abs_margin, p.human_label, p.max_per_prompt, p.min_confidence) == (1.5, "require_agreement", 2, 0.3)


def test_unknown_key_is_named(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text("min_abs_margn = 1.0\n")
    with pytest.raises(PolicyError, match="unknown key 'min_abs_margn'"):
        load_policy(path)


@pytest.mark.parametrize("key,value", [("min_abs_margin", 3.0), ("min_confidence", -0.1), ("max_per_source", 0),
                                       ("human_label", "sometimes"), ("validation_share", 1.0)])
def test_out_of_range_value_is_named(key, value):
    with pytest.raises(PolicyError, match=key):
        load_policy(None, {key: value})


def test_unreadable_file(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text("min_abs_margin = = 1\n")
    with pytest.raises(PolicyError, match="p.toml"):
        load_policy(path)


def test_an_out_of_range_value_says_its_value_and_the_allowed_range():
    with pytest.raises(PolicyError) as caught:
        load_policy(None, {"validation_share": 1.0})
    assert str(caught.value) == ("invalid filter policy: validation_share = 1.0: input should be less than 1 "
                                 "(allowed: 0 <= x < 1)")


def test_every_key_has_a_description_for_its_flag():
    from tasks.curate.policy import FilterPolicy

    assert [k for k, f in FilterPolicy.model_fields.items() if not f.description] == []


# values of another type are never coerced (an integer for a number is fine, below)
NOT_COERCED = [
    ('min_abs_margin = "1.0"\n', "min_abs_margin = '1.0'"),
    ("min_abs_margin = true\n", "min_abs_margin = True"),
    ("max_per_source = 2.0\n", "max_per_source = 2.0"),
    ('exclude_contaminated = "false"\n', "exclude_contaminated = 'false'"),
    ("review_overrides = 0\n", "review_overrides = 0"),
    ('exports = "dpo"\n', "exports = 'dpo'"),
]
# anything but one [policy] table or its keys alone
NOT_ONE_TABLE = [
    ("min_abs_margin = 2.4\n[policy]\nmin_confidence = 0.1\n", "'min_abs_margin' beside the [policy] table"),
    ("[policy]\nmin_confidence = 0.1\n[other]\nx = 1\n", "'other' beside the [policy] table"),
    ("policy = 5\n", "not `policy = 5`"),
    ("policy = 'strict'\n", "not `policy = 'strict'`"),
    ("[[policy]]\nmin_abs_margin = 1.0\n", "not an array of tables [[policy]]"),
    ("[policy.extra]\nx = 1\n", "unknown key 'extra'"),
]


@pytest.mark.parametrize("text,said", NOT_COERCED + NOT_ONE_TABLE)
def test_a_policy_file_of_another_type_or_shape_is_refused_by_name(tmp_path, text, said):
    path = tmp_path / "p.toml"
    path.write_text(text)
    with pytest.raises(PolicyError, match=re.escape(said)):
        load_policy(path)


def test_an_integer_for_a_number_a_byte_order_mark_and_top_level_keys_are_fine(tmp_path):
    path = tmp_path / "p.toml"
    path.write_bytes("\ufeffmin_abs_margin = 2\nexports = ['dpo']\n".encode())
    policy = load_policy(path)
    assert policy.min_abs_margin == 2.0 and isinstance(policy.min_abs_margin, float) and policy.exports == ["dpo"]
    assert load_policy(None, {"min_abs_margin": 1, "require_order_agreement": False}).min_abs_margin == 1.0


def test_only_a_regular_utf8_file_under_the_cap_is_read(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big.toml").write_bytes(b"#" * MAX_POLICY_BYTES + b"\n")
    (tmp_path / "bad.toml").write_bytes(b"min_abs_margin = 1.0 # \xff\n")
    for path, said in ((tmp_path / "fifo", "not a regular file"), (Path("/dev/zero"), "not a regular file"),
                       (tmp_path, "not a regular file"), (tmp_path / "big.toml", f"over {MAX_POLICY_BYTES} bytes"),
                       (tmp_path / "bad.toml", "not UTF-8 text (byte 23)"),
                       (tmp_path / "none.toml", "No such file or directory")):
        with pytest.raises(PolicyError, match=re.escape(f"{path}: cannot read the policy: {said}")):
            load_policy(path)


# -- certified curation's keys ---------------------------------------------------------------------------------

# the keys a policy without a target is stored with: those of every version built before certification existed
STORED_BEFORE_CERTIFICATION = [
    "min_abs_margin", "min_confidence", "min_p_correct", "require_order_agreement", "one_order_decisive",
    "decisive_margin", "require_score_agreement", "max_spread", "human_label", "human_ties", "both_bad",
    "max_per_source", "max_per_domain", "max_per_prompt", "max_chosen_longer_share",
    "max_chosen_more_markdown_share", "exclude_contaminated", "review_overrides", "validation_share",
    "rm_margin_column", "exports"]


def test_a_policy_without_a_target_is_stored_as_before():
    from tasks.curate.policy import promised

    for policy in (load_policy(None), load_policy(None, {"min_abs_margin": 2.0, "max_per_prompt": 1})):
        assert list(policy.model_dump()) == STORED_BEFORE_CERTIFICATION
        assert list(policy.model_dump(mode="json")) == STORED_BEFORE_CERTIFICATION
        assert promised(policy) == {}
    assert load_policy(None).model_dump()["min_abs_margin"] == 1.0


def test_a_target_neutralises_the_heuristic_cut_offs_and_is_stored_with_its_keys(tmp_path):
    from tasks.curate.policy import promised

    path = tmp_path / "p.toml"
    path.write_text("[policy]\ntarget_agreement = 0.9\nrisk = 0.1\nmax_per_prompt = 2\n")
    policy = load_policy(path, {"calibration_share": 0.3})
    assert (policy.min_abs_margin, policy.min_confidence, policy.min_p_correct) == (0.0, 0.0, None)
    assert (policy.target_agreement, policy.risk, policy.calibration_share, policy.min_audit_reviews) == (0.9, 0.1, 0.3, 200)
    stored = policy.model_dump()
    assert list(stored) == [*STORED_BEFORE_CERTIFICATION, "target_agreement", "risk", "calibration_share",
                            "min_audit_reviews"]
    assert promised(policy) == {"target_agreement": 0.9, "risk": 0.1}
    assert load_policy(None, stored) == policy  # a stored certified policy reads back as itself


@pytest.mark.parametrize("file_text,flags,said", [
    ("", {"target_agreement": 0.9, "min_abs_margin": 1.0}, "min_abs_margin = 1.0 cannot be set beside it"),
    ("min_confidence = 0.1\n", {"target_agreement": 0.9}, "min_confidence = 0.1 cannot be set beside it"),
    ("target_agreement = 0.9\nmin_confidence = 0.2\n", {"min_p_correct": 0.8, "min_abs_margin": 0},
     "min_confidence = 0.2, min_p_correct = 0.8 cannot be set beside it (drop them, or the target)"),
    ("", {"risk": 0.1}, "risk only applies with target_agreement"),
    ("min_audit_reviews = 50\n", {"calibration_share": 0.2}, "calibration_share, min_audit_reviews only apply"),
])
def test_a_target_beside_the_heuristic_cut_offs_or_its_keys_without_one_are_refused(tmp_path, file_text, flags, said):
    path = tmp_path / "p.toml"
    path.write_text(file_text)
    with pytest.raises(PolicyError) as caught:
        load_policy(path, flags)
    message = str(caught.value)
    assert message.startswith("invalid filter policy: ") and said in message and "\n" not in message
    assert "{" not in message  # the sentence alone, not the values' dict


@pytest.mark.parametrize("key,value", [("target_agreement", 0.5), ("target_agreement", 1.0), ("risk", 0.0),
                                       ("risk", 0.6), ("calibration_share", 0.0), ("min_audit_reviews", 0)])
def test_the_certification_keys_ranges(key, value):
    with pytest.raises(PolicyError, match=key):
        load_policy(None, {key: value, **({} if key == "target_agreement" else {"target_agreement": 0.9})})


def test_a_version_s_sources_are_checked_against_those_the_pool_holds_in_one_place():
    """`check_sources`: the one refusal of a `sources` or `mixture` key naming a source no judged pair comes from
    (the CLI's before Prefect, a version's selection when it reads the pool)."""
    from common.errors import InvalidInputError

    held = ["arena", "helpsteer3"]
    FilterPolicy().check_sources(held, "jc-1")  # every source: nothing to check
    FilterPolicy(sources=["arena"]).check_sources(held, "jc-1")
    with pytest.raises(InvalidInputError) as caught:
        FilterPolicy(sources=["arena", "nope"]).check_sources(held, "jc-1")
    assert str(caught.value) == "sources 'nope': no pair judged under jc-1 comes from it (judged: arena, helpsteer3)"
    with pytest.raises(InvalidInputError, match=r"^sources 'a', 'b': .* from them \(judged: none\)$"):
        FilterPolicy(mixture={"a": 0.5, "b": 0.5}).check_sources([], "jc-2")


def test_pii_is_a_policy_key_redact_by_default_set_per_kind_in_a_file(tmp_path):
    assert load_policy(None).pii == "redact" and set(load_policy(None).pii_actions().values()) == {"redact"}
    assert "pii" not in load_policy(None).model_dump()  # the default is stored as before the key existed
    f = tmp_path / "p.toml"
    f.write_text('pii = "keep"\npii_kinds = { secret = "drop", email = "redact" }\n', encoding="utf-8")
    actions = load_policy(f).pii_actions()
    assert actions["secret"] == "drop" and actions["email"] == "redact" and actions["phone"] == "keep"
    assert load_policy(f, {"pii": "drop"}).pii_actions()["phone"] == "drop"
    f.write_text('pii_kinds = { secrets = "drop" }\n', encoding="utf-8")
    with pytest.raises(PolicyError, match="unknown kind.*secrets: the kinds are email, phone"):
        load_policy(f)
    with pytest.raises(PolicyError, match="pii"):
        load_policy(None, {"pii": "remove"})

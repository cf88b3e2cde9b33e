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

import pytest

from tasks.curate.policy import FilterPolicy, PolicyError, load_policy


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

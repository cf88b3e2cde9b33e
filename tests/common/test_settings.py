"""Settings: every way a value arrives (the environment, a flag, a flow parameter) is held to the field's bounds."""

from __future__ import annotations

import pytest

from common.errors import InvalidInputError
from common.settings import Settings, get_settings, settings_with


@pytest.fixture(autouse=True)
def fresh_settings():
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.parametrize("field,value,said", [
    ("judge_max_in_flight", 0, "greater than or equal to 1 (allowed: >= 1)"),
    ("batch_size", -5, "greater than or equal to 1 (allowed: >= 1)"),
    ("judge_request_timeout", 0.0, "greater than 0 (allowed: > 0)"),
    ("near_dup_threshold", 1.5, "less than or equal to 1 (allowed: 0 < x <= 1)"),
    ("minhash_perms", 8, "greater than or equal to 16 (allowed: 16 .. 1024)"),
    ("judge_shard_stale_seconds", -1.0, "greater than 0 (allowed: > 0)"),
    ("max_completions_per_row", 1, "greater than or equal to 2 (allowed: >= 2)"),  # one completion pairs nothing
])
def test_an_override_out_of_its_fields_bounds_is_one_line_naming_it_its_value_and_the_range(field, value, said):
    with pytest.raises(InvalidInputError) as caught:
        settings_with(**{field: value})
    line = str(caught.value)
    assert "\n" not in line
    assert line == f"invalid settings: {field} = {value!r}: input should be {said}"


def test_a_value_that_is_no_number_or_no_choice_is_named_too():
    with pytest.raises(InvalidInputError, match=r"vllm_device = 'tpu': string should match pattern"):
        settings_with(vllm_device="tpu")
    with pytest.raises(InvalidInputError, match=r"batch_size = 'many': input should be a valid integer"):
        settings_with(batch_size="many")


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_inf_or_nan_is_no_setting(value, monkeypatch):
    """A budget of inf would print `Infinity` in a summary's JSON (invalid JSON) and a nan one never binds."""
    with pytest.raises(InvalidInputError, match=r"judge_budget_gpu_hours = (inf|nan): input should be a finite number"):
        settings_with(judge_budget_gpu_hours=value)
    monkeypatch.setenv("CURATE_JUDGE_REQUEST_TIMEOUT", str(value))
    get_settings.cache_clear()  # settings_with read the environment once already
    with pytest.raises(InvalidInputError, match=r"CURATE_JUDGE_REQUEST_TIMEOUT = '(inf|nan)': input should be a finite"):
        get_settings()


def test_every_bad_value_of_one_call_is_said_at_once():
    with pytest.raises(InvalidInputError) as caught:
        settings_with(batch_size=0, judge_max_in_flight=0)
    assert "batch_size = 0" in str(caught.value) and "judge_max_in_flight = 0" in str(caught.value)


def test_overrides_are_validated_into_their_types_and_leave_the_rest_as_the_environment_says(monkeypatch, tmp_path):
    monkeypatch.setenv("CURATE_BATCH_SIZE", "7")
    s = settings_with(warehouse=str(tmp_path / "w.duckdb"), judge_max_in_flight=3)
    assert s.warehouse == tmp_path / "w.duckdb" and isinstance(s, Settings)  # a str from a deployment became a Path
    assert (s.judge_max_in_flight, s.batch_size) == (3, 7)
    assert settings_with(warehouse=None, batch_size=None) is get_settings()  # None: not passed


def test_a_misspelt_setting_is_a_bug_not_silently_ignored():
    with pytest.raises(TypeError, match="judge_max_inflight"):
        settings_with(judge_max_inflight=4)


def test_an_environment_value_out_of_bounds_names_its_variable(monkeypatch):
    monkeypatch.setenv("CURATE_JUDGE_MAX_IN_FLIGHT", "0")
    with pytest.raises(InvalidInputError) as caught:
        get_settings()
    assert str(caught.value) == ("invalid settings: CURATE_JUDGE_MAX_IN_FLIGHT = '0': input should be greater than "
                                 "or equal to 1 (allowed: >= 1)")


def test_the_completions_cap_comes_from_the_environment(monkeypatch):
    assert Settings().max_completions_per_row == 16
    monkeypatch.setenv("CURATE_MAX_COMPLETIONS_PER_ROW", "5")
    assert settings_with().max_completions_per_row == 5

"""The preflight against a server over real HTTP (the stand-in, which serves vLLM's /tokenize, /detokenize and
max_model_len): a context too small or a template that drops an answer is refused before anything is sent;
prompts are counted as the server counts them."""

from __future__ import annotations

import pytest

from common.settings import Settings
from tasks.judge.client import ClientOptions
from tasks.judge.config import JudgeConfig
from tasks.judge.endpoints import EndpointCheckError, check_judge
from tasks.judge.preflight import context_problem, is_context_error, server_root
from tasks.judge.run import estimated_prompt_tokens, judge_pairs
from tasks.judge.strategies import parse_strategy
from testing.genrm_standin import StandinConfig, StandinProcess
from warehouse.judging import PairText

MODEL = StandinConfig().model


def _settings(**kw) -> Settings:
    return Settings(judge_model=MODEL, judge_check_timeout=5.0, **kw)


def test_a_context_too_small_is_refused_naming_both_numbers_and_the_flag():
    with StandinProcess(StandinConfig(max_model_len=4096)) as server:
        with pytest.raises(EndpointCheckError) as err:
            check_judge([server.url], _settings())
        assert server.stats()["requests"] == 0
    message = str(err.value)
    assert "4096" in message and "40000" in message and "--max-model-len 40000" in message
    assert "CURATE_JUDGE_MAX_MODEL_LEN" in message


def test_a_template_that_drops_the_answers_is_refused_naming_the_chat_template():
    with StandinProcess(StandinConfig(drop_response_roles=True)) as server:
        with pytest.raises(EndpointCheckError) as err:
            check_judge([server.url], _settings())
        assert server.stats()["requests"] == 0
    assert "chat template drops response_1 and response_2" in str(err.value)
    assert "--chat-template" in err.value.hint


def test_a_good_server_passes_with_its_template_fingerprinted_into_the_configuration():
    with StandinProcess(StandinConfig(max_model_len=40_000)) as server:
        report = check_judge([server.url], _settings())
    assert report.template.startswith("tpl-") and report.untokenized == [] and report.probe_tokens > 10
    assert report.contexts == {server.url: 40_000}
    plain, probed = JudgeConfig(), JudgeConfig(template=report.template)
    assert plain.id != probed.id != JudgeConfig(template="tpl-other").id
    assert plain.id == JudgeConfig(template="").id  # an unprobed configuration keeps the id it always had


def _pairs():
    # Thai text: the ingest's estimate (a token per 3 bytes) counts it about 1.33x what the stand-in's
    # tokenizer (a token per 4 bytes) does, as Qwen's BPE counts Thai about half the estimate.
    thai = "ภาษาไทยเป็นภาษาที่สวยงาม " * 40
    return [PairText("p-fits", [{"role": "user", "content": thai}], thai, "short answer"),
            PairText("p-over", [{"role": "user", "content": thai * 3}], thai, "short answer")]


def test_prompts_are_counted_as_the_server_counts_them_and_only_those_over_the_budget_are_not_sent():
    pairs = _pairs()
    fits = pairs[0]
    written = []
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        estimate = estimated_prompt_tokens([*fits[1], {"content": fits[2]}, {"content": fits[3]}])
        budget = estimate - 200  # the estimate says it does not fit; the server's count says it does
        summary = judge_pairs(pairs, endpoints=[server.url], config=JudgeConfig(), strategy=parse_strategy("swap"),
                              options=ClientOptions(max_in_flight=4, request_timeout=10), states={},
                              write=written.extend, input_budget=budget)
        stats = server.stats()
    by_pair = {}
    for r in written:
        by_pair.setdefault(r.request.pair_id, set()).add((r.status, r.failure_reason))
    assert by_pair["p-fits"] == {("ok", None)}
    assert by_pair["p-over"] == {("failed", "over_budget")}
    over = [r for r in written if r.failure_reason == "over_budget"]
    assert all("tokens, over the judge's input budget" in r.error for r in over)
    assert stats["requests"] == 2 and stats["tokenize_requests"] == 4  # only the pair that fits was sent
    assert summary["over_budget"] == 1 and summary["prompt_tokens"]["counted_by"] == "server"
    assert summary["prompt_tokens"]["requests"] == 4 and summary["prompt_tokens"]["max"] > budget


def test_a_context_length_refusal_that_still_arrives_is_too_long_and_final():
    written = []
    pairs = _pairs()[:1]
    with StandinProcess(StandinConfig(latency_mean=0.005, max_model_len=1024)) as server:
        summary = judge_pairs(pairs, endpoints=[server.url], config=JudgeConfig(max_tokens=900),
                              strategy=parse_strategy("single"),
                              options=ClientOptions(max_in_flight=2, request_timeout=10, max_retries=3), states={},
                              write=written.extend)  # no budget: sent as it is
        stats = server.stats()
    assert [(r.status, r.failure_reason) for r in written] == [("failed", "too_long")]
    assert "maximum context length is 1024" in written[0].error
    assert stats["requests"] == 1 and summary["retries"] == 0


@pytest.mark.parametrize("message,expected", [
    ("This model's maximum context length is 4096 tokens. However, you requested 16500 tokens", True),
    ("max_tokens=16384 cannot be greater than max_model_len=4096", True),
    ("'max_tokens' or 'max_completion_tokens' is too large: 16384", True),
    ("the last message must be a 'user' turn", False),
    ("", False),
])
def test_context_errors_are_recognised_in_vllms_wordings(message, expected):
    assert is_context_error(message) is expected


def test_context_problem_and_server_root():
    assert context_problem("u", None, 40000, 16384) is None and context_problem("u", 40000, 40000, 16384) is None
    assert "23616 for the prompt + 16384" in context_problem("u", 32768, 40000, 16384)
    assert server_root("http://h:5000/v1/") == "http://h:5000" and server_root("http://h:5000") == "http://h:5000"


def test_a_generative_model_given_as_the_reward_model_and_a_pooling_model_given_as_the_genrm_are_refused():
    """Over real HTTP, against both stand-ins: each kind's preflight asks whether the server serves its API (the
    GenRM's chat completions, the reward model's classification) before any request, and refuses the other's."""
    from tasks.judge.endpoints import check_endpoints
    from tasks.judge.kinds import GENRM, REWARD_MODEL
    from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess

    with StandinProcess(StandinConfig()) as genrm, RewardStandinProcess(RewardStandinConfig()) as rm:
        with pytest.raises(EndpointCheckError) as as_rm:
            check_endpoints([genrm.url], "m", kind=REWARD_MODEL, timeout=5)
        with pytest.raises(EndpointCheckError) as as_genrm:
            check_endpoints([rm.url], MODEL, kind=GENRM, timeout=5)
        assert genrm.stats()["requests"] == 0 and rm.stats()["requests"] == 0 == rm.stats()["scored"]
        # each passes its own kind's preflight
        assert check_endpoints([genrm.url], MODEL, kind=GENRM, timeout=5).template.startswith("tpl-")
        assert check_endpoints([rm.url], "m", kind=REWARD_MODEL, timeout=5).template.startswith("tpl-")
        assert genrm.stats()["requests"] == 0 and rm.stats()["scored"] == 0
    said = str(as_rm.value)
    assert (f"{genrm.url} does not serve the reward model's API (GET /classify answered HTTP 404, "
            "GET /v1/chat/completions answered 405)") in said
    assert "cannot be the reward model" in said and "--rm-endpoint" in as_rm.value.hint
    said = str(as_genrm.value)
    assert (f"{rm.url} does not serve the GenRM's API (GET /v1/chat/completions answered HTTP 404, "
            "GET /classify answered 405)") in said
    assert "cannot be the GenRM" in said and "nothing was judged" in as_genrm.value.hint

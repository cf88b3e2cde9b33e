import json

from tasks.ingest.decontam import Decontaminator, prompt_text
from tasks.ingest.sources import EvalPrompt
from tests.conftest import read_jsonl, shared_file


def _prompts(path, field, bench, key):
    return [EvalPrompt(bench, str(key(r)), r[field]) for r in read_jsonl(path)]


def test_real_benchmark_prompts_inside_a_training_prompt_are_flagged():
    rm = _prompts(shared_file("rmbench", "fixtures.jsonl"), "prompt", "rm-bench", lambda r: f"{r['domain']}:{r['id']}")
    jb = _prompts(shared_file("judgebench", "fixtures.jsonl"), "question", "judgebench", lambda r: r["pair_id"])
    d = Decontaminator(rm + jb, n=8, threshold=0.5)
    leaked = jb[5]
    hits = d.check("Please help me with my homework:\n\n" + leaked.prompt + "\n\nThanks!")
    assert hits and hits[0].benchmark == "judgebench" and hits[0].benchmark_id == leaked.benchmark_id
    assert hits[0].overlap == 1.0
    short = next(p for p in rm if len(p.prompt.split()) < 8)  # shorter than n: matched as a whole
    assert any(h.benchmark_id == short.benchmark_id for h in d.check("so, " + short.prompt.lower()))
    assert d.check("Write a haiku about the sea and a lighthouse keeper named Ole.") == []


def test_boilerplate_shared_by_many_prompts_does_not_contaminate():
    boiler = "The following are multiple choice questions with answers about"
    prompts = [EvalPrompt("b", str(i), f"{boiler} topic{i} detail{i} more{i} words{i}") for i in range(100)]
    d = Decontaminator(prompts, n=8, threshold=0.5, max_prompts_per_ngram=50)
    assert d.check(boiler + " something else entirely") == []


def test_prompt_text_is_user_turns_only():
    h = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    assert prompt_text(h) == "a\nc"
    assert json.dumps(prompt_text([])) == '""'

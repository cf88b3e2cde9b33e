"""Every bad value a declared format can meet has its own reason: each format's rows, mutated at random (seeded,
bounded) with hostile JSON values (huge integers, NaN, lone surrogates, wrong types, malformed messages, missing
keys), are read and prepared as an ingest does; every row is quarantined with registered reasons or makes pairs,
and no reason is `adapter_error:*`."""

from __future__ import annotations

import copy
import json
import random
from collections import Counter

import pytest

from common.reasons import AdapterRejection, lookup
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import read_jsonl
from tests.tasks.ingest.declared.formats.helpers import declaration, source_of

MSGS = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "why?"}]
BASE = {
  "trl": ([{"uid": "r1", "prompt": "why is the sky blue?", "chosen": "Rayleigh scattering.", "rejected": "It is not."},
           {"uid": 7, "prompt": MSGS, "chosen": [{"role": "assistant", "content": "because"}], "rejected": [{"role": "assistant", "content": "no"}]}],
          dict(columns={"id": "uid"})),
  "trl-implicit": ([{"chosen": MSGS + [{"role": "assistant", "content": "good"}], "rejected": MSGS + [{"role": "assistant", "content": "bad"}]},
                    {"chosen": "Q: why? A: good", "rejected": "Q: why? A: bad"}], {}),
  "pairwise": ([{"prompt": "why?", "response_a": "a", "response_b": "b", "preference": "1", "model_a": "m1", "model_b": "m2"},
                {"prompt": MSGS, "response_a": "aa", "response_b": "bb", "preference": 2, "model_a": "m1", "model_b": "m2"}],
               dict(label={"a": "1", "b": "2", "tie": ["tie"], "both_bad": ["neither"]}, models={"a": "model_a", "b": "model_b"})),
  "rated": ([{"prompt": "why?", "responses": [{"response": "r1", "score": 9, "model": "m"}, {"response": "r2", "score": 3, "model": "n"},
                                              {"response": "r3", "score": 5.5, "model": "o"}]},
             {"prompt": MSGS, "responses": [{"response": "x", "score": "8"}, {"response": "y", "score": 1}]}],
            dict(label={"scale": [1, 10], "min_gap": 2}, models={"response": "model"})),
  "hh": ([{"chosen": "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: why?\n\nAssistant: good", "rejected": "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: why?\n\nAssistant: bad"}], {}),
  "helpsteer3": ([{"domain": "general", "language": "english", "context": MSGS, "response1": "one", "response2": "two", "overall_preference": -2,
                   "individual_preference": [{"score": -2, "reasoning": "x"}]}], {}),
}

BIG = 10 ** 400
HOSTILE = [None, True, False, 0, -1, 1, 3, 4, 11, BIG, -BIG, 10**20, 2**63, -2**64, 1.5, -0.0, 1e308, 1e-320,
           float("nan"), float("inf"), float("-inf"), "", " ", "\u200b", "\x00", "\ud800", "nan", "inf", "-inf", "1e400",
           "9", "1", "2", "tie", "neither", "NaN", "0x10", "\n\nHuman: x", "\n\nAssistant: y", "Human:", "a" * 3,
           [], [None], [1, 2], ["a"], [[]], [{}], {}, {"role": "user"}, {"role": "assistant", "content": 5},
           {"role": "user", "content": "q"}, {"role": "system", "content": "s"}, {"role": "tool", "content": "t"},
           [{"role": "user", "content": ["part"]}], [{"role": "assistant", "content": None}],
           [{"role": "user", "content": "q"}], [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}],
           [{"response": "r", "score": BIG}], [{"response": "r", "score": "1e999"}], {"a": {"b": {"c": [1]}}},
           {"response": 5, "score": 5}, {"response": "ok", "score": [1]}, {"response": "ok", "score": {"v": 1}},
           {"response": "ok", "score": True}, {"response": "ok", "score": "  7 "}, {"response": "ok"},
           {"response": ["x"], "score": 2}, {"score": 2}, "7.0", 7.0000001, "\u0661", "٣", "1_0", " 1 ", "TRUE"]


def paths(v, prefix=()):
    yield prefix
    if isinstance(v, dict):
        for k, x in v.items():
            yield from paths(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from paths(x, prefix + (i,))


def mutate(row, rng):
    row = copy.deepcopy(row)
    for _ in range(rng.randint(1, 3)):
        ps = [p for p in paths(row) if p]
        if not ps:
            break
        p = rng.choice(ps)
        parent = row
        for k in p[:-1]:
            parent = parent[k]
        r = rng.random()
        if r < 0.12 and isinstance(parent, dict):
            del parent[p[-1]]
        elif r < 0.18 and isinstance(parent, list):
            parent.append(rng.choice(HOSTILE))
        else:
            parent[p[-1]] = copy.deepcopy(rng.choice(HOSTILE))
    return row



@pytest.mark.parametrize("fmt", list(BASE))
def test_fuzzed_rows_of_each_format_get_their_own_reasons(tmp_path, settings, fmt):
    rows, kw = BASE[fmt]
    src = source_of(declaration(fmt, **kw))
    rng = random.Random(39)
    path = tmp_path / "fuzz.jsonl"
    path.write_text("".join(json.dumps(mutate(rng.choice(rows), rng)) + "\n" for _ in range(1500)))
    reasons: Counter = Counter()
    read = 0
    for batch in read_jsonl(path, 500):
        prepared = prepare_batch(batch, src, settings, str(path), first=False)
        reasons.update(r for q in prepared.quarantined for r in q.reasons)
        read += prepared.read
    assert read == 1500 and sum(reasons.values()) > 0
    errors = {r: n for r, n in reasons.items() if AdapterRejection.ADAPTER_ERROR.matches(r)}
    assert not errors, errors
    assert all(lookup(r) is not None for r in reasons), [r for r in reasons if lookup(r) is None]


def test_an_integer_past_a_float_s_range_is_a_score_reason_not_an_error(settings):
    src = source_of(declaration("rated", label={"scale": [1, 10], "min_gap": 2}))
    rows = [{"prompt": "why?", "responses": [{"response": "a", "score": 10**400}, {"response": "b", "score": -10**400},
                                             {"response": "c", "score": 9}]}]
    from tasks.ingest.read import RawBatch

    (q,) = prepare_batch(RawBatch("train", rows, ["t:1"]), src, settings, "t", first=False).quarantined
    assert q.reasons == ["completion_score_invalid:score", "fewer_than_two_completions"]
    from tasks.ingest.declared.formats import FORMATS

    assert FORMATS["rated"].check(declaration("rated", label={"scale": [1, 10**400]})) == \
        [f"label.scale: [1, {10**400!r}] is not two increasing numbers [lo, hi]"]

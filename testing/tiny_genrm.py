"""A tiny GenRM that the real vLLM OpenAI server (CPU build) can serve in tests.

Not a judge of anything real: a random-weight `Qwen3MoeForCausalLM` (hidden 128, 2 layers, 4 experts) with
a byte-level BPE trained here, fine-tuned for one to two minutes (2 cores) on synthetic pairs whose verdict
follows one visible rule, so that a test can tell a verdict about the pair from a verdict about nothing.
Everything is made locally (no Hub): the tokenizer, the weights, the chat templates.

The rule: every synthetic response opens with "A <word> answer", the word one of `QUALITY_WORDS`; a
response's score is its word's level (1-5) and the ranking follows the difference (`expected_verdict`).
The completion is the GenRM's shape: a short trace naming both words, `</think>`, then
`{"score_1": s1, "score_2": s2, "ranking": r}`. Pairs of equal level are never trained on.

Chat templates (`GENRM_TEMPLATE`, the one in the model folder): every turn is
`<|im_start|>{role}\\n{content}<|im_end|>\\n` for the roles system, user, assistant, `response_1` and
`response_2` (a system turn is rendered like any other; the GenRM protocol sends none), and the
generation prompt is an assistant turn that opens `<think>`. `DROP_ROLES_TEMPLATE` is the same but, like
the base Qwen3 thinking template, silently drops the two response roles: a server using it judges
nothing, which is what the refusal tests need to see.

Usage, with the python of a venv that has torch, transformers and tokenizers (the vLLM venv):
    python testing/tiny_genrm.py build [--cache-dir DIR]   # prints the model folder
The folder is cached under a name keyed by a hash of this file (and of the torch, transformers and
tokenizers versions, and of whether the CPU computes bfloat16 natively), so an unchanged builder is built
once. The build is seeded and single-threaded: two builds here gave byte-identical weights.
This module imports only the standard library at the top: the project's tests import its templates and
rule without torch.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Added but not special, as in Qwen3's tokenizer: vLLM skips special tokens when it decodes, and a
# special `</think>` would vanish from the content the parser reads.
THINK_TOKENS = ["<think>", "</think>"]
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"

_TURN = "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}"
_OPEN_THINKING = "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n<think>\\n' -}}{%- endif -%}"
GENRM_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message.role in ['system', 'user', 'assistant', 'response_1', 'response_2'] -%}" + _TURN + "{%- endif -%}"
    "{%- endfor -%}" + _OPEN_THINKING
)
DROP_ROLES_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message.role in ['system', 'user', 'assistant'] -%}" + _TURN + "{%- endif -%}"
    "{%- endfor -%}" + _OPEN_THINKING
)
TEMPLATE_FILES = {"genrm": "chat_template.jinja", "drop_roles": "chat_template_drop_roles.jinja"}

QUALITY_WORDS = {"wrong": 1, "weak": 2, "fair": 3, "good": 4, "great": 5}

# Test-sized: head_dim 64 because the CPU attention kernels refuse 16.
MODEL_CONFIG = dict(
    hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
    intermediate_size=256, moe_intermediate_size=256, num_experts=4, num_experts_per_tok=2, norm_topk_prob=True,
    max_position_embeddings=4096, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    tie_word_embeddings=False, rms_norm_eps=1e-6,
)
VOCAB_SIZE = 1024
SEED = 20240521
TRAIN_PAIRS = 1200
TRAIN_STEPS = 300
BATCH_SIZE = 16
LEARNING_RATE = 3e-3
HELD_OUT_PAIRS = 40
MIN_HELD_OUT_PARSED = 0.9  # the build fails below this: a model that cannot answer is no test fixture

_NOUNS = ("lamp garden river kettle bridge engine letter window ladder basket camera violin recipe budget "
          "server puzzle forest candle bicycle compass").split()
_VERBS = "fix clean paint measure cook plan test store build carry repair sort".split()
_FILLER = (
    "First check the {n} and then {v} it slowly.",
    "You can {v} the {n} with simple tools.",
    "Most people {v} a {n} once a year.",
    "Keep the {n} dry before you {v} it.",
    "It takes about ten minutes to {v} the {n}.",
    "Ask a friend to help you {v} the {n}.",
    "A small {n} is easier to {v}.",
    "Write down each step as you {v} the {n}.",
)
_QUESTIONS = (
    "How do I {v} a {n}?",
    "What is the best way to {v} the {n}?",
    "Can you explain how to {v} my {n}?",
    "Why should I {v} the {n} today?",
)


def expected_verdict(response_1: str, response_2: str) -> tuple[int, int, int] | None:
    """(score_1, score_2, ranking) that the rule gives, or None when a response has no quality word.
    Equal levels (never trained on) rank 3."""
    levels = [_level(response_1), _level(response_2)]
    if None in levels:
        return None
    s1, s2 = levels
    diff = s1 - s2
    ranking = 1 if diff >= 3 else 2 if diff == 2 else 3 if diff >= 0 else 4 if diff == -1 else 5 if diff == -2 else 6
    return s1, s2, ranking


def _level(response: str) -> int | None:
    words = response.split()
    if len(words) >= 3 and words[0] == "A" and words[2] == "answer.":
        return QUALITY_WORDS.get(words[1])
    return None


def synthetic_response(rng: random.Random, word: str) -> str:
    sentences = [rng.choice(_FILLER).format(n=rng.choice(_NOUNS), v=rng.choice(_VERBS)) for _ in range(rng.randint(1, 3))]
    return f"A {word} answer. " + " ".join(sentences)


def synthetic_pair(rng: random.Random) -> tuple[list[dict[str, str]], str, str]:
    """A history ending with a user turn, and two responses of different quality."""
    def question() -> str:
        return rng.choice(_QUESTIONS).format(n=rng.choice(_NOUNS), v=rng.choice(_VERBS))

    history = [{"role": "user", "content": question()}]
    if rng.random() < 0.3:  # some multi-turn histories
        history += [{"role": "assistant", "content": rng.choice(_FILLER).format(n=rng.choice(_NOUNS), v=rng.choice(_VERBS))},
                    {"role": "user", "content": question()}]
    word_1, word_2 = rng.sample(sorted(QUALITY_WORDS), 2)
    return history, synthetic_response(rng, word_1), synthetic_response(rng, word_2)


def completion_for(response_1: str, response_2: str) -> str:
    """What the model is taught to answer: a short trace, `</think>`, the verdict JSON, end of turn."""
    s1, s2, ranking = expected_verdict(response_1, response_2)
    w1, w2 = response_1.split()[1], response_2.split()[1]
    better = "Response 1" if ranking <= 3 else "Response 2"
    # Response 2 first: its word is the nearest one, and response 1's is then "the other one"; a 2-layer
    # model learns that in 300 steps, while naming response 1 first took twice as many.
    trace = f"Response 2 gives a {w2} answer. Response 1 gives a {w1} answer. {better} is better."
    verdict = json.dumps({"score_1": s1, "score_2": s2, "ranking": ranking})
    return f"{trace}\n</think>\n\n{verdict}{EOS_TOKEN}"


def render(messages: list[dict[str, str]], template: str = GENRM_TEMPLATE, add_generation_prompt: bool = True) -> str:
    """The template rendered as transformers and vLLM render it (a sandboxed Jinja, trim and lstrip on)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt)


# A shared history of several KV blocks (128 tokens each on vLLM's CPU build), as real conversations have: the
# tiny model rarely answers such a prompt (it never saw one), but the server's prefix cache serves it.
LONG_CONTEXT = ("Here is the background for my question. " + " ".join(
    f"Item {i}: the lamp in the garden needs care, the bridge needs paint, the kettle needs cleaning." for i in range(30)))


def write_helpsteer3_rows(path: Path, n: int, seed: int, long_every: int = 3) -> None:
    """`n` synthetic pairs as HelpSteer3 rows (JSONL), every `long_every`-th behind LONG_CONTEXT, labelled by
    the rule: what `curate ingest --source helpsteer3` reads, for tests and benchmarks of the real server."""
    rng = random.Random(seed)
    with Path(path).open("w") as f:
        for i in range(n):
            history, a, b = synthetic_pair(rng)
            if long_every and i % long_every == 0:
                history = [{"role": "user", "content": LONG_CONTEXT}, {"role": "assistant", "content": "Noted."},
                           *history]
            s1, s2, _ = expected_verdict(a, b)
            f.write(json.dumps({"domain": "general", "language": "english", "context": history, "response1": a,
                                "response2": b, "overall_preference": 2 if s2 > s1 else -2,
                                "individual_preference": []}) + "\n")


def genrm_messages(history: list[dict[str, str]], response_1: str, response_2: str) -> list[dict[str, str]]:
    return history + [{"role": "response_1", "content": response_1}, {"role": "response_2", "content": response_2}]


@functools.cache
def native_bf16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AMX or AVX512-BF16). Elsewhere torch emulates it, and a
    bf16-autocast fine-tune ran 4.6x slower than in float32 (436 s against 95 s on an AVX2-only 2-core EPYC)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def builder_hash() -> str:
    """Keys the cache: this file's source, the library versions that shape the saved folder, and the precision
    the fine-tune computes in (`native_bf16`: the same seed gives other weights in another)."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(f"bf16={native_bf16()}".encode())
    for module in ("torch", "transformers", "tokenizers"):
        try:
            digest.update(f"{module}={__import__(module).__version__}".encode())
        except ImportError:
            pass
    return digest.hexdigest()[:16]


def default_cache_dir() -> Path:
    return Path(os.environ.get("CURATE_TINY_GENRM_CACHE") or Path.home() / ".cache" / "curator-tiny-genrm")


def ensure_built(cache_dir: Path | None = None, log=print) -> Path:
    """The cached model folder for this builder, built first when missing (into a temporary folder that is
    renamed at the end, so a killed build never leaves a half folder that looks finished)."""
    cache_dir = Path(cache_dir or default_cache_dir())
    target = cache_dir / f"tiny-genrm-{builder_hash()}"
    if (target / "build_report.json").exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=cache_dir))
    try:
        build(staging, log=log)
        try:
            staging.rename(target)
        except OSError:  # another session finished the same build first
            if not (target / "build_report.json").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def build(out: Path, log=print) -> dict:
    """Tokenizer, templates, config, fine-tuned weights and a build report into `out`."""
    import torch

    started = time.monotonic()
    # One thread: on a shared 2-core machine two OpenMP threads spin against the other processes and
    # trained 3-4x slower than one.
    torch.set_num_threads(1)
    rng = random.Random(SEED)
    torch.manual_seed(SEED)
    pairs = [synthetic_pair(rng) for _ in range(TRAIN_PAIRS + HELD_OUT_PAIRS)]
    held_out = pairs[TRAIN_PAIRS:]
    texts = [(render(genrm_messages(*p)), completion_for(p[1], p[2])) for p in pairs]

    tokenizer = _train_tokenizer([prompt + completion for prompt, completion in texts])
    _save_tokenizer(tokenizer, out)
    for name, template in (("genrm", GENRM_TEMPLATE), ("drop_roles", DROP_ROLES_TEMPLATE)):
        (out / TEMPLATE_FILES[name]).write_text(template, encoding="utf-8")
    tokenized = time.monotonic()

    model = _new_model(tokenizer)
    losses = _fine_tune(model, tokenizer, texts[:TRAIN_PAIRS], log)
    trained = time.monotonic()

    model.to(torch.bfloat16)  # what vLLM serves (--dtype bfloat16): check the weights as they will run
    parsed, correct = _check_held_out(model, tokenizer, held_out)
    report = {
        "builder_hash": builder_hash(), "seed": SEED, "vocab_size": tokenizer.get_vocab_size(),
        "parameters": sum(p.numel() for p in model.parameters()), "train_pairs": TRAIN_PAIRS,
        "train_steps": TRAIN_STEPS, "train_precision": "bf16 autocast" if native_bf16() else "float32",
        "final_loss": round(losses[-1], 4),
        "held_out_pairs": len(held_out), "held_out_parsed": parsed, "held_out_correct": correct,
        "seconds": {"tokenizer": round(tokenized - started, 1), "fine_tune": round(trained - tokenized, 1),
                    "total": round(time.monotonic() - started, 1)},
    }
    if parsed < MIN_HELD_OUT_PARSED * len(held_out):
        raise RuntimeError(f"the tiny GenRM did not learn its answer format: {report}")
    model.save_pretrained(out, safe_serialization=True)
    (out / "build_report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    log(f"tiny GenRM built in {report['seconds']['total']} s: {report}")
    return report


def _train_tokenizer(corpus: list[str]):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(corpus, trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK_TOKENS])
    return tokenizer


def _save_tokenizer(tokenizer, out: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN,
                                   additional_special_tokens=SPECIAL_TOKENS[1:])
    fast.chat_template = GENRM_TEMPLATE
    fast.save_pretrained(out)


def _new_model(tokenizer):
    from transformers import GenerationConfig, Qwen3MoeConfig, Qwen3MoeForCausalLM

    eos = tokenizer.token_to_id(EOS_TOKEN)
    pad = tokenizer.token_to_id(PAD_TOKEN)
    config = Qwen3MoeConfig(vocab_size=tokenizer.get_vocab_size(), eos_token_id=eos, pad_token_id=pad,
                            bos_token_id=pad, **MODEL_CONFIG)
    config.architectures = ["Qwen3MoeForCausalLM"]
    model = Qwen3MoeForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=[eos, pad], pad_token_id=pad, bos_token_id=pad)
    return model


def _fine_tune(model, tokenizer, texts: list[tuple[str, str]], log) -> list[float]:
    """Teacher forcing on the completion tokens only (the prompt is context, not a target).

    bf16 autocast where the CPU has AMX or AVX512-BF16 (several times faster there); float32 elsewhere, where
    torch would emulate bf16 (`native_bf16`).
    """
    from contextlib import nullcontext

    import torch

    precision = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if native_bf16() else nullcontext

    pad = tokenizer.token_to_id(PAD_TOKEN)
    examples = []
    for prompt, completion in texts:
        p, c = tokenizer.encode(prompt).ids, tokenizer.encode(completion).ids
        examples.append((p + c, [-100] * len(p) + c))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=LEARNING_RATE, total_steps=TRAIN_STEPS,
                                                   pct_start=0.1)
    order = random.Random(SEED + 1)
    model.train()
    losses = []
    for step in range(TRAIN_STEPS):
        batch = order.sample(examples, BATCH_SIZE)
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch])
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch])
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch])
        with precision():
            loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if step % 50 == 0 or step == TRAIN_STEPS - 1:
            log(f"step {step}: loss {loss.item():.4f}")
    model.eval()
    return losses


def _check_held_out(model, tokenizer, pairs) -> tuple[int, int]:
    """Greedy answers to unseen pairs: how many parse as a GenRM verdict, how many follow the rule."""
    import torch

    eos = tokenizer.token_to_id(EOS_TOKEN)
    parsed = correct = 0
    for history, r1, r2 in pairs:
        ids = torch.tensor([tokenizer.encode(render(genrm_messages(history, r1, r2))).ids])
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=64, do_sample=False, eos_token_id=eos, pad_token_id=eos)
        # decoded as vLLM decodes a completion: special tokens skipped
        text = tokenizer.decode(out[0, ids.shape[1]:].tolist(), skip_special_tokens=True)
        verdict = parse_answer(text)
        parsed += verdict is not None
        correct += verdict == expected_verdict(r1, r2)
    return parsed, correct


def parse_answer(text: str) -> tuple[int, int, int] | None:
    """A minimal reading of the answer for the build's own check (the product's parser lives in
    tasks/judge/genrm.py, which this venv does not import)."""
    if "</think>" not in text:
        return None
    answer = text.rsplit("</think>", 1)[1].replace(EOS_TOKEN, "").strip()
    try:
        obj = json.loads(answer)
        return int(obj["score_1"]), int(obj["score_2"]), int(obj["ranking"])
    except (ValueError, KeyError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="build (or reuse) the model folder and print its path")
    build_cmd.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    path = ensure_built(args.cache_dir, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

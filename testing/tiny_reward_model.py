"""A tiny sequence-classification reward model that the real vLLM server (CPU build) serves with
`--runner pooling`, as a reward model's card serves it (Skywork-Reward-V2: `...ForSequenceClassification`, one
label, the raw score).

Not a judge of anything: a random-weight `Qwen3ForSequenceClassification` (hidden 128, head 64: a head vLLM's CPU attention takes; 2 layers, one label) with
the tiny GenRM's tokenizer (`testing/tiny_genrm.py`, built first), seeded, so that a test can exercise what
depends on the server: the preflight (the pooling routes, no chat routes), exact token counts from its
/tokenize, the /classify request and reply, and a ladder judged through the CLI beside the tiny GenRM. Its
scores are a function of the tokens and nothing else.

The chat template (`RM_TEMPLATE`) renders `<|im_start|>{role}\\n{content}<|im_end|>\\n` per turn (user and
assistant) and no generation prompt, with no BOS of its own: a reward model scores a finished conversation.

Usage, with the python of the vLLM venv (torch, transformers):
    python testing/tiny_reward_model.py build [--cache-dir DIR]   # prints the model folder
The folder is cached under a name keyed by a hash of this file and of the tiny GenRM's folder it copies the
tokenizer from. This module imports only the standard library at the top.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

_TURN = "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}"
RM_TEMPLATE = ("{%- for message in messages -%}{%- if message.role in ['user', 'assistant'] -%}" + _TURN
               + "{%- endif -%}{%- endfor -%}")
MODEL_CONFIG = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=64, max_position_embeddings=4096, rms_norm_eps=1e-6,
                    tie_word_embeddings=False)
SEED = 20261203
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def builder_hash(genrm_dir: Path) -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for name in TOKENIZER_FILES:
        digest.update((genrm_dir / name).read_bytes())
    return digest.hexdigest()[:16]


def ensure_built(genrm_dir: Path, cache_dir: Path | None = None, log=print) -> Path:
    """The model folder, built once per builder and tokenizer (a finished folder holds `config.json`)."""
    cache_dir = cache_dir or Path.home() / ".cache" / "curator-tiny-reward-model"
    out = cache_dir / f"tiny-rm-{builder_hash(genrm_dir)}"
    if (out / "config.json").exists():
        return out
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tiny-rm-", dir=cache_dir))
    build(genrm_dir, work, log)
    try:
        work.rename(out)
    except OSError:  # another build finished first: its folder is as good
        shutil.rmtree(work, ignore_errors=True)
    return out


def build(genrm_dir: Path, out: Path, log=print) -> None:
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForSequenceClassification

    torch.manual_seed(SEED)
    for name in TOKENIZER_FILES:
        shutil.copy(genrm_dir / name, out / name)
    tokenizer = AutoTokenizer.from_pretrained(out)
    tokenizer.chat_template = RM_TEMPLATE
    tokenizer.save_pretrained(out)
    pad = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    config = Qwen3Config(vocab_size=len(tokenizer), num_labels=1, pad_token_id=pad, eos_token_id=eos,
                         bos_token_id=None, **MODEL_CONFIG)
    config.architectures = ["Qwen3ForSequenceClassification"]
    model = Qwen3ForSequenceClassification(config).to(torch.bfloat16)
    model.save_pretrained(out)
    (out / "chat_template.jinja").write_text(RM_TEMPLATE, encoding="utf-8")
    (out / "build_report.json").write_text(json.dumps({"seed": SEED, "from_tokenizer": str(genrm_dir)}),
                                           encoding="utf-8")
    log(f"built a tiny reward model in {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="build (or reuse) the model folder and print its path")
    build_cmd.add_argument("--genrm-dir", type=Path, required=True, help="the tiny GenRM's folder (its tokenizer)")
    build_cmd.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    print(ensure_built(args.genrm_dir, args.cache_dir, log=lambda line: print(line, file=sys.stderr, flush=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Judge configuration: what identifies a verdict, apart from where it is computed.

The id hashes everything that changes a verdict (model, served revision, prompt version, sampling, and the
weights the server loaded where they are not the model's published ones: `tasks/judge/weights.py`); the
endpoints and the strategy do not change a verdict, so they are not part of it: switching from `single`
to `swap` reuses every `ab` verdict already paid for.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from common.settings import JUDGE_MAX_TOKENS, JUDGE_MODEL, JUDGE_TEMPERATURE, JUDGE_TOP_P

DEFAULT_MODEL = JUDGE_MODEL
PROMPT_VERSION = "genrm-pairwise-v1"  # the message layout of tasks.judge.genrm.build_messages


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    model: str = DEFAULT_MODEL
    served_revision: str = "main"
    prompt_version: str = PROMPT_VERSION
    temperature: float = JUDGE_TEMPERATURE
    top_p: float = JUDGE_TOP_P
    max_tokens: int = JUDGE_MAX_TOKENS
    # Verdicts from the SIMULATED stand-in: a configuration of their own, so that they never answer for
    # the real judge from the cache, and everything built on them says so.
    simulated: bool = False
    # The fingerprint of the server's rendering of a probe pair (its chat template and tokenizer, see
    # preflight.py): a server with another template never answers from the cache. Empty: not probed.
    template: str = ""
    # What the server loaded (vLLM's /v1/models `root`) where it is not the model's published weights: a local
    # folder, another id, or unknown (no root given; tasks/judge/weights.py). Empty: the published weights. Such
    # verdicts never answer for the real judge from the cache, and everything built on them says so.
    weights: str = ""
    # The kind of judge (`tasks/judge/kinds`): `genrm`, or `reward_model`, whose id leaves out the GenRM's
    # sampling (a reward model samples nothing). The GenRM's ids stay what they always were.
    kind: str = "genrm"

    @property
    def id(self) -> str:
        from tasks.judge.kinds import kind_of

        fields = {k: v for k, v in asdict(self).items() if k in kind_of(self.kind).identity}
        if not self.simulated:
            del fields["simulated"]  # the ids of real configurations stay what they always were
        if not self.template:
            del fields["template"]
        if not self.weights:
            del fields["weights"]
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return "jc-" + hashlib.blake2b(canonical.encode(), digest_size=8).hexdigest()

    @property
    def is_genrm(self) -> bool:
        return self.kind == "genrm"

    def sampling(self) -> dict[str, float | int]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}


def config_record(config: JudgeConfig) -> dict[str, object]:
    """The configuration as the warehouse records it: its id and every field."""
    from tasks.judge.kinds import kind_of

    fields = asdict(config)
    if not config.is_genrm:  # another kind's fields (the GenRM's sampling) are not this kind's: stored as NULL
        fields = {k: v if k in kind_of(config.kind).identity or k == "kind" else None for k, v in fields.items()}
    return {"judge_config_id": config.id, **fields}

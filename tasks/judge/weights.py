"""Which weights a judge server serves, and whether they are the judge's published model.

vLLM's `GET /v1/models` names each model by `id` (its `--served-model-name`) and says what it loaded in `root`
(its `--model`, as given: a Hub id or a folder). The served name is a label: a server started with
`--model /some/folder --served-model-name ORG/NAME` answers as the judge whatever the folder holds. So a judge
configuration names its weights by the server's root wherever they are not the judge's published model, and
its id changes with them.

The published model of the judge ORG/NAME (CURATE_JUDGE_MODEL) is a root that
- is ORG/NAME (loaded from the Hub, or from its cache, by id), or
- is a path in the Hugging Face cache of that repository (`.../models--ORG--NAME/snapshots/<revision>`), or
- is a path whose last folder is NAME (a local mirror: `hf download ORG/NAME --local-dir /models/NAME`): an
  absolute path, one starting with `.` or `~`, a URL (`s3://...`), three folders or more, or NAME alone.
Case and trailing slashes aside (the Hub resolves ids without regard to case). Anything else is other weights:
another id (`OTHER/NAME` reads as a Hub id, not a folder), another folder, a quantised copy `NAME-FP8`. A server
that gives no root serves unknown weights. The rule reads names only: the files are on the server's host, so a
folder named after the judge is taken at its word.
"""

from __future__ import annotations

UNKNOWN = "unknown: the server named no root"  # nothing says which weights answer


def _parts(text: str) -> list[str]:
    return [p for p in text.strip().lower().split("/") if p]


def _is_path(root: str) -> bool:
    """A root that cannot be a Hub id (ORG/NAME, or a legacy NAME)."""
    text = root.strip()
    return text.startswith(("/", ".", "~")) or "://" in text or len(_parts(text)) >= 3


def is_published_weights(root: str, model: str) -> bool:
    """Whether a server's root is the judge `model`'s published weights (the rule above)."""
    want, got = _parts(model), _parts(root)
    if not want or not got:
        return False
    if got == want or "models--" + "--".join(want) in got:
        return True
    return got[-1] == want[-1] and (_is_path(root) or len(got) == 1)


def served_weights(root: str | None, model: str) -> str:
    """The weights a judge configuration names: "" for `model`'s published weights (so the ids of configurations
    that judged with them stay what they were), else the root as the server gave it, or UNKNOWN without one."""
    if not isinstance(root, str) or not root.strip():
        return UNKNOWN
    return "" if is_published_weights(root, model) else root.strip()


def weights_words(weights: str, model: str | None = None) -> str:
    """The weights a configuration names, as a message says them."""
    if not weights:
        return f"the published weights of {model}"
    if weights == UNKNOWN:
        return "weights it does not name (no root in its /v1/models)"
    return f"the weights {weights}"

"""A version's rows in the formats people train with (pure functions of one stored row).

- `dpo`: TRL's conversational preference format: `prompt` (the history as messages), `chosen` and
  `rejected` (one assistant message each).
- `rm`: reward-model pairs: `chosen` and `rejected` as whole conversations (history + answer).
- `helpsteer3`: HelpSteer3-style rows: `context`, `response1`, `response2` in the pair's own order (so
  position says nothing about the label) and `overall_preference` from the judge (-3..3, negative means
  response1 is better).
Every format carries `judge_margin` (the judge's mean margin for the chosen answer, 0..2.5; negative where
human reviewers overrode the judge), `confidence`
(the heuristic), `p_correct` (calibrated; null when too few labelled pairs), `pair_id`, `source`, `domain` and `language`. None carries a column named `margin` unless asked: TRL's
RewardTrainer adds such a column to its loss (`-logsigmoid(r_chosen - r_rejected - margin)`), so the rm
export writes it only under the policy's `rm_margin_column`.
"""

from __future__ import annotations

from typing import Any

MAX_MARGIN = 2.5


def _common(row: dict[str, Any]) -> dict[str, Any]:
    return {"judge_margin": row["margin"], "confidence": row["confidence"], "p_correct": row.get("p_correct"),
            "pair_id": row["pair_id"],
            "source": row["source"], "domain": row["domain"], "language": row["language"]}


def _messages(prompt: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"role": m["role"], "content": m["content"]} for m in prompt]


def dpo_record(row: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": _messages(row["prompt"]),
            "chosen": [{"role": "assistant", "content": row["chosen"]}],
            "rejected": [{"role": "assistant", "content": row["rejected"]}],
            **_common(row)}


def rm_record(row: dict[str, Any], trl_margin: bool = False) -> dict[str, Any]:
    prompt = _messages(row["prompt"])
    return {"chosen": prompt + [{"role": "assistant", "content": row["chosen"]}],
            "rejected": prompt + [{"role": "assistant", "content": row["rejected"]}],
            # a margin TRL subtracts is never negative (a row whose reviewers overrode the judge has a negative one)
            **_common(row), **({"margin": max(row["margin"], 0.0)} if trl_margin else {})}


def helpsteer3_record(row: dict[str, Any]) -> dict[str, Any]:
    strength = max(1, min(3, round(row["margin"] / MAX_MARGIN * 3)))
    a_chosen = row["chosen_side"] == "a"
    return {"context": _messages(row["prompt"]),
            "response1": row["chosen"] if a_chosen else row["rejected"],
            "response2": row["rejected"] if a_chosen else row["chosen"],
            "overall_preference": -strength if a_chosen else strength,
            **_common(row)}


EXPORTS = {"dpo": dpo_record, "rm": rm_record, "helpsteer3": helpsteer3_record}


def export_record(config: str, row: dict[str, Any], policy: dict[str, Any] | None = None) -> dict[str, Any]:
    """One row in export `config`, as the version's policy asks."""
    if config == "rm":
        return rm_record(row, trl_margin=bool((policy or {}).get("rm_margin_column")))
    return EXPORTS[config](row)

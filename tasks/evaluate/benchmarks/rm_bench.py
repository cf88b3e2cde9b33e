"""RM-Bench as a judge benchmark: its 3x3 style matrix.

Each prompt has three chosen and three rejected answers in three styles (concise, detailed, detailed markdown):
chosen[i] against rejected[j] is one comparison: the diagonal is "normal", chosen plainer than rejected (i < j,
upper triangle) is "hard", the rest "easy" (RM-Bench's own definitions). Which side shows the chosen answer is
drawn from the comparison's id, so a single-order judge gains nothing from position.

Decided as this project curates: the mean A-side margin over the orders judged picks the winner, and a zero mean
(a tie) counts as wrong, as RM-Bench counts an equal reward as not preferring the chosen answer. The overall is
the mean of the domain accuracies present (chat, math, code, safety), as RM-Bench reports it.
"""

from __future__ import annotations

from typing import Any

from tasks.evaluate.benchmarks.base import MEAN_OF_CATEGORIES, Benchmark, Comparison, item_id, mean_margin

NAME = "rm-bench"
STYLES = ("concise", "detailed", "markdown")
DOMAINS = ("chat", "math", "code", "safety")
# Model-card accuracy of nvidia/Qwen3-Nemotron-235B-A22B-GenRM, in percent.
MODEL_CARD = {"overall": 87.3, "chat": 76.5, "math": 96.9, "code": 81.4, "safety": 94.4,
              "easy": 94.0, "normal": 90.5, "hard": 77.4}


def rmbench_domain(domain: str) -> str:
    """safety-refuse and safety-response are one domain, safety, in RM-Bench's averages."""
    return "safety" if domain.startswith("safety") else domain


def difficulty(i: int, j: int) -> str:
    return "normal" if i == j else "hard" if i < j else "easy"


def comparisons(row: dict[str, Any]) -> list[Comparison]:
    chosen, rejected = row["chosen"], row["rejected"]
    if len(chosen) != 3 or len(rejected) != 3:
        raise ValueError(f"RM-Bench row {row.get('domain')}:{row.get('id')} needs 3 chosen and 3 rejected answers")
    out = []
    for i in range(3):
        for j in range(3):
            item = item_id(NAME, row["domain"], row["id"], i, j)
            chosen_first = int(item[:8], 16) % 2 == 0
            a, b = (chosen[i], rejected[j]) if chosen_first else (rejected[j], chosen[i])
            out.append(Comparison(item, NAME, rmbench_domain(row["domain"]), difficulty(i, j),
                                  f"{STYLES[i]}>{STYLES[j]}", row["prompt"], a, b, "A" if chosen_first else "B"))
    return out


BENCHMARK = Benchmark(
    name=NAME,
    comparisons=comparisons,
    decide=mean_margin,
    model_card=MODEL_CARD,
    categories=DOMAINS,
    overall=MEAN_OF_CATEGORIES,
    difficulties=("easy", "normal", "hard"),
    cells=tuple(f"{chosen}>{rejected}" for chosen in STYLES for rejected in STYLES),
)

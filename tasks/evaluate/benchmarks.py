"""Judge benchmarks as comparisons: RM-Bench's 3x3 style matrix, JudgeBench's labelled pairs.

A comparison is a prompt and two answers, A and B, with the one that should win. RM-Bench gives each
prompt three chosen and three rejected answers in three styles (concise, detailed, detailed markdown);
chosen[i] against rejected[j] is one comparison: the diagonal is "normal", chosen plainer than rejected
(i < j, upper triangle) is "hard", the rest "easy" (RM-Bench's own definitions). Which side shows the
chosen answer is drawn from the comparison's id, so a single-order judge gains nothing from position.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from common.errors import InvalidInputError

if TYPE_CHECKING:
    from common.settings import Settings

# Model-card accuracy of nvidia/Qwen3-Nemotron-235B-A22B-GenRM (DESIGN.md §1), in percent.
MODEL_CARD = {
    "rm-bench": {"overall": 87.3, "chat": 76.5, "math": 96.9, "code": 81.4, "safety": 94.4,
                 "easy": 94.0, "normal": 90.5, "hard": 77.4},
    "judgebench": {"overall": 87.4, "knowledge": 78.6, "reasoning": 95.9, "math": 91.1, "coding": 95.2},
}
STYLES = ("concise", "detailed", "markdown")
RM_BENCH_DOMAINS = ("chat", "math", "code", "safety")


@dataclass(frozen=True, slots=True)
class Comparison:
    item_id: str  # stable: the judgment cache key
    benchmark: str
    category: str  # RM-Bench: chat | math | code | safety; JudgeBench: knowledge | reasoning | math | coding
    difficulty: str | None  # RM-Bench: easy | normal | hard
    cell: str | None  # RM-Bench: "chosen_style>rejected_style"
    prompt: str
    response_a: str
    response_b: str
    winner: str  # "A" | "B"

    @property
    def history(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.prompt}]


BENCHMARKS = ("rm-bench", "judgebench")


def scoring_plan(benchmark: str, strategy: str | None, settings: Settings | None = None):
    """The benchmark and the judge strategy it is scored with, refused when either cannot be: a benchmark is scored
    on the same orders for every comparison (a strategy that asks everything up front; never one with follow-ups,
    such as adaptive)."""
    from tasks.judge.strategies import names, parse_strategy, usage

    if benchmark not in BENCHMARKS:
        raise InvalidInputError(f"{benchmark} is not a judge benchmark: use rm-bench or judgebench")
    plan = parse_strategy(strategy or "swap", settings)
    if plan.asks_follow_ups:
        raise InvalidInputError(f"evaluate with {usage(names(follow_ups=False))}, not {plan.label}: a benchmark is "
                                "scored on the same orders for every comparison")
    return plan


def _item_id(*parts: Any) -> str:
    return hashlib.blake2b("\0".join(map(str, parts)).encode(), digest_size=16).hexdigest()


def rmbench_domain(domain: str) -> str:
    """safety-refuse and safety-response are one domain, safety, in RM-Bench's averages."""
    return "safety" if domain.startswith("safety") else domain


def difficulty(i: int, j: int) -> str:
    return "normal" if i == j else "hard" if i < j else "easy"


def rmbench_comparisons(row: dict[str, Any]) -> list[Comparison]:
    chosen, rejected = row["chosen"], row["rejected"]
    if len(chosen) != 3 or len(rejected) != 3:
        raise ValueError(f"RM-Bench row {row.get('domain')}:{row.get('id')} needs 3 chosen and 3 rejected answers")
    out = []
    for i in range(3):
        for j in range(3):
            item = _item_id("rm-bench", row["domain"], row["id"], i, j)
            chosen_first = int(item[:8], 16) % 2 == 0
            a, b = (chosen[i], rejected[j]) if chosen_first else (rejected[j], chosen[i])
            out.append(Comparison(item, "rm-bench", rmbench_domain(row["domain"]), difficulty(i, j),
                                  f"{STYLES[i]}>{STYLES[j]}", row["prompt"], a, b, "A" if chosen_first else "B"))
    return out


def judgebench_family(source: str) -> str:
    if source.startswith("mmlu-pro"):
        return "knowledge"
    return {"livebench-reasoning": "reasoning", "livebench-math": "math", "livecodebench": "coding"}.get(source, source)


def judgebench_comparisons(row: dict[str, Any]) -> list[Comparison]:
    label = row["label"]
    if label not in ("A>B", "B>A"):
        raise ValueError(f"JudgeBench pair {row.get('pair_id')}: label {label!r} is not A>B or B>A")
    return [Comparison(_item_id("judgebench", row["pair_id"]), "judgebench", judgebench_family(row["source"]), None,
                       None, row["question"], row["response_A"], row["response_B"], label[0])]


COMPARISONS = {"rm-bench": rmbench_comparisons, "judgebench": judgebench_comparisons}


def comparisons(benchmark: str, rows: list[dict[str, Any]]) -> list[Comparison]:
    try:
        make = COMPARISONS[benchmark]
    except KeyError:
        raise InvalidInputError(f"unknown benchmark {benchmark!r}: one of {', '.join(COMPARISONS)}") from None
    return [c for row in rows for c in make(row)]


def oracle_rows(items: list[Comparison]) -> list[dict[str, str]]:
    """The labels as a stand-in oracle file: {"prompt", "better", "worse"} per comparison."""
    return [{"prompt": c.prompt, "better": c.response_a if c.winner == "A" else c.response_b,
             "worse": c.response_b if c.winner == "A" else c.response_a} for c in items]

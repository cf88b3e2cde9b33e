"""Decontamination: word n-gram overlap of pair prompts with evaluation prompts.

A pair is contaminated by an evaluation prompt when at least `threshold` of that prompt's distinct word
n-grams occur in the pair's user turns. Prompts shorter than n words count as one n-gram of their own
length; prompts under 3 words are too generic to match. N-grams shared by more than `max_prompts_per_ngram`
evaluation prompts are boilerplate ("The following are multiple choice questions ...") and not counted.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from common.arrays import sorted_unique
from tasks.ingest.sources.base import EvalPrompt

_WORD = re.compile(r"\w+")
_MIN_WORDS = 3
_B = np.uint64(0x100000001B3)


def word_hashes(text: str) -> np.ndarray:
    # Python's str hash is salted per process: fine, since both sides are hashed in this process.
    return np.fromiter(map(hash, _WORD.findall(text.lower())), dtype=np.int64).view(np.uint64)


def ngram_hashes(words: np.ndarray, n: int) -> np.ndarray:
    if len(words) < n:
        return np.empty(0, np.uint64)
    h = words[: len(words) - n + 1].copy()
    for k in range(1, n):
        h = h * _B + words[k : len(words) - n + 1 + k]
    return h


@dataclass(frozen=True, slots=True)
class Contamination:
    benchmark: str
    benchmark_id: str
    overlap: float


class Decontaminator:
    def __init__(self, prompts: list[EvalPrompt], n: int = 8, threshold: float = 0.5, max_prompts_per_ngram: int = 50):
        self.n = n
        self.threshold = threshold
        self.prompts = prompts
        owners: dict[int, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))  # size -> hash -> prompts
        for idx, p in enumerate(prompts):
            words = word_hashes(p.prompt)
            if len(words) < _MIN_WORDS:
                continue
            size = min(n, len(words))
            for h in set(ngram_hashes(words, size).tolist()):
                owners[size][h].add(idx)
        self._owners: dict[int, dict[int, set[int]]] = {}
        self._sorted: dict[int, np.ndarray] = {}
        self._total = np.zeros(len(prompts), dtype=np.int64)
        for size, table in owners.items():
            kept = {h: ps for h, ps in table.items() if len(ps) <= max_prompts_per_ngram}
            for ps in kept.values():
                for idx in ps:
                    self._total[idx] += 1
            self._owners[size] = kept
            self._sorted[size] = np.array(sorted(kept), dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.prompts)

    def check(self, text: str) -> list[Contamination]:
        """The evaluation prompts this text overlaps at or above the threshold, best first."""
        if not self._sorted:
            return []
        words = word_hashes(text)
        hits: dict[int, int] = defaultdict(int)
        for size, table in self._sorted.items():
            grams = sorted_unique(ngram_hashes(words, size))
            found = grams[np.isin(grams, table, assume_unique=True)]
            for h in found.tolist():
                for idx in self._owners[size][h]:
                    hits[idx] += 1
        out = []
        for idx, count in hits.items():
            overlap = count / self._total[idx]
            if overlap >= self.threshold:
                p = self.prompts[idx]
                out.append(Contamination(p.benchmark, p.benchmark_id, round(float(overlap), 4)))
        return sorted(out, key=lambda c: -c.overlap)


def prompt_text(history: list[dict[str, str]]) -> str:
    """What a pair asks: its user turns."""
    return "\n".join(m["content"] for m in history if m.get("role") == "user")

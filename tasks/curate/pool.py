"""The judged pool a version is drawn from, as columns: one entry per pair (sorted by pair id) and its verdicts
flat beside it. Texts stay in the warehouse: selection needs only their lengths, markdown marks and prompt
key, which the warehouse computes (`warehouse.versions`) and `JudgedPool.of` computes here from `JudgedPair`s,
with the same definitions (`tasks.curate.bias.markdown_marks`, `prompt_key`).

A million pairs are a few arrays, not a million Python objects: that is what keeps `build-version` within
a minute at that size (benchmarks/scale.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Set
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from tasks.curate.bias import markdown_marks
from tasks.judge.genrm import SideVerdict, scores_agree

ORDERS = ("ab", "ba")


@dataclass(slots=True)
class JudgedPair:
    """One judged pair, whole: the readable form of one entry of the pool (tests and small tools)."""

    pair_id: str
    source: str
    source_id: str
    source_revision: str
    history: list[dict[str, str]]
    response_a: str
    response_b: str
    human_label: float | None
    both_bad: bool
    domain: str | None
    language: str | None
    contaminated: bool
    verdicts: list[tuple[str, SideVerdict]] = field(default_factory=list)
    one_order_on_purpose: bool = False  # its strategy stops at one order when the first verdict is decisive
    has_failed: bool = False  # a judgment of this pair failed (its second order may be missing for that)
    model_a: str | None = None  # arena-style rows: the models that wrote each answer
    model_b: str | None = None


def prompt_json(history: list[dict[str, str]]) -> str:
    """The canonical text of a conversation: what `prompt_key` hashes (the warehouse writes the same)."""
    return json.dumps([[m["role"], m["content"]] for m in history], ensure_ascii=False, separators=(",", ":"))


def key_of_json(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def prompt_key(history: list[dict[str, str]]) -> str:
    """One prompt's identity: every pair of one conversation shares it (splits and per-prompt caps)."""
    return key_of_json(prompt_json(history))


@dataclass(slots=True)
class JudgedPool:
    """Columns of equal length (one entry per pair, sorted by pair id), and the verdicts: `v_pair` indexes the
    pair each verdict belongs to (ascending), `v_ab` its order, `v_sample` its sample index, `v_margin` its margin
    on A's side,
    `v_scores_agree` whether its scores point the way its ranking does."""

    pair_id: np.ndarray  # object (str)
    source: np.ndarray  # object
    source_id: np.ndarray  # object
    source_revision: np.ndarray  # object
    domain: np.ndarray  # object (str | None)
    language: np.ndarray  # object (str | None)
    model_a: np.ndarray  # object (str | None)
    model_b: np.ndarray  # object (str | None)
    human_label: np.ndarray  # float64, NaN where there is none
    both_bad: np.ndarray  # bool
    contaminated: np.ndarray  # bool
    one_order_on_purpose: np.ndarray  # bool
    has_failed: np.ndarray  # bool
    len_a: np.ndarray  # int64: characters (code points) of response A
    len_b: np.ndarray
    md_a: np.ndarray  # int64: markdown marks of response A
    md_b: np.ndarray
    prompt_key: np.ndarray  # object (str)
    v_pair: np.ndarray  # int64
    v_ab: np.ndarray  # bool
    v_sample: np.ndarray  # int64: its sample index within its order
    v_margin: np.ndarray  # float64
    v_scores_agree: np.ndarray  # bool
    # A judge ladder's reward-model margin per pair (score(A) - score(B), on its own scale; NaN: not scored); None:
    # the configuration has no ladder, and nothing else reads it
    rm_margin: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.pair_id)

    @classmethod
    def of(cls, pairs: list[JudgedPair]) -> JudgedPool:
        pairs = sorted(pairs, key=lambda p: p.pair_id)
        if len({p.pair_id for p in pairs}) != len(pairs):
            raise ValueError("pair ids must be unique")
        verdicts = [(i, order, v) for i, p in enumerate(pairs) for order, v in p.verdicts]
        seen: dict[tuple[int, str], int] = {}
        samples = []  # a pair's verdicts of one order are its samples 0, 1, ... in the order given
        for i, order, _ in verdicts:
            samples.append(seen.get((i, order), 0))
            seen[(i, order)] = samples[-1] + 1

        def obj(values) -> np.ndarray:
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out

        return cls(
            pair_id=obj([p.pair_id for p in pairs]), source=obj([p.source for p in pairs]),
            source_id=obj([p.source_id for p in pairs]), source_revision=obj([p.source_revision for p in pairs]),
            domain=obj([p.domain for p in pairs]), language=obj([p.language for p in pairs]),
            model_a=obj([p.model_a for p in pairs]), model_b=obj([p.model_b for p in pairs]),
            human_label=np.array([np.nan if p.human_label is None else p.human_label for p in pairs], float),
            both_bad=np.array([p.both_bad for p in pairs], bool),
            contaminated=np.array([p.contaminated for p in pairs], bool),
            one_order_on_purpose=np.array([p.one_order_on_purpose for p in pairs], bool),
            has_failed=np.array([p.has_failed for p in pairs], bool),
            len_a=np.array([len(p.response_a) for p in pairs], np.int64),
            len_b=np.array([len(p.response_b) for p in pairs], np.int64),
            md_a=np.array([markdown_marks(p.response_a) for p in pairs], np.int64),
            md_b=np.array([markdown_marks(p.response_b) for p in pairs], np.int64),
            prompt_key=obj([prompt_key(p.history) for p in pairs]),
            v_pair=np.array([i for i, _, _ in verdicts], np.int64),
            v_ab=np.array([order == "ab" for _, order, _ in verdicts], bool),
            v_sample=np.array(samples, np.int64),
            v_margin=np.array([v.margin for _, _, v in verdicts], float),
            v_scores_agree=np.array([scores_agree(v) for _, _, v in verdicts], bool),
        )

    @classmethod
    def from_arrow(cls, pairs: pa.Table, verdicts: pa.Table) -> JudgedPool:
        """From `wh.versions.judged_pool`'s two tables."""

        def obj(name: str) -> np.ndarray:
            return pairs.column(name).to_numpy(zero_copy_only=False).astype(object)

        def num(table: pa.Table, name: str, dtype, null) -> np.ndarray:
            return table.column(name).fill_null(null).to_numpy().astype(dtype)

        keys = np.empty(pairs.num_rows, dtype=object)
        keys[:] = [key_of_json(t) for t in pairs.column("prompt_json").to_pylist()]
        score_a, score_b = num(verdicts, "score_a", float, 0), num(verdicts, "score_b", float, 0)
        margin = num(verdicts, "margin", float, 0)
        return cls(
            pair_id=obj("pair_id"), source=obj("source"), source_id=obj("source_id"),
            source_revision=obj("source_revision"), domain=obj("domain"), language=obj("language"),
            model_a=obj("model_a"), model_b=obj("model_b"),
            human_label=pairs.column("human_label").to_numpy(zero_copy_only=False).astype(float),
            both_bad=num(pairs, "both_bad", bool, False), contaminated=num(pairs, "contaminated", bool, False),
            one_order_on_purpose=num(pairs, "one_order_on_purpose", bool, False),
            has_failed=num(pairs, "has_failed", bool, False),
            len_a=num(pairs, "len_a", np.int64, 0), len_b=num(pairs, "len_b", np.int64, 0),
            md_a=num(pairs, "md_a", np.int64, 0), md_b=num(pairs, "md_b", np.int64, 0), prompt_key=keys,
            v_pair=num(verdicts, "i", np.int64, 0), v_ab=num(verdicts, "ab", bool, False),
            v_sample=num(verdicts, "sample", np.int64, 0), v_margin=margin,
            # genrm.scores_agree, over the whole column at once
            v_scores_agree=(score_a == score_b) | ((score_a > score_b) == (margin > 0)),
            rm_margin=(pairs.column("rm_margin").to_numpy(zero_copy_only=False).astype(float)
                       if "rm_margin" in pairs.column_names else None),
        )


def models_as_stated(pool: JudgedPool, naming: Set[str]) -> JudgedPool:
    """`pool` with the model names of the pairs of the sources in `naming` only (those whose facts say their pairs
    name the models that wrote them): a name under the model keys of another source's pair says nothing the bias
    audit may count."""
    stated = np.isin(pool.source, list(naming)) if len(pool) else np.zeros(0, bool)
    if stated.all():
        return pool
    return replace(pool, model_a=np.where(stated, pool.model_a, None).astype(object),
                   model_b=np.where(stated, pool.model_b, None).astype(object))


def take(pool: JudgedPool, keep: np.ndarray) -> JudgedPool:
    """The pool's pairs where `keep` (bool per pair), with their verdicts (re-indexed), in the same order."""
    if keep.all():
        return pool
    new_index = np.cumsum(keep) - 1
    mine = keep[pool.v_pair]
    columns = {name: None if getattr(pool, name) is None else getattr(pool, name)[keep]
               for name in pool.__slots__ if not name.startswith("v_")}
    verdicts = {name: getattr(pool, name)[mine] for name in pool.__slots__ if name.startswith("v_")}
    verdicts["v_pair"] = new_index[pool.v_pair[mine]]
    return JudgedPool(**columns, **verdicts)


def _unit(pair_id: str) -> float:
    return int.from_bytes(hashlib.blake2b(f"mixture\0{pair_id}".encode(), digest_size=8).digest(), "big") / 2.0**64


def drawn(pool: JudgedPool, shares: dict[str, float] | None) -> np.ndarray:
    """Which pairs a version made of `shares` (source -> the share of its pairs drawn; None: every pair) may hold:
    a source's pairs by a hash of their pair id, so a share's pairs are the same in every build and grow with it."""
    if shares is None:
        return np.ones(len(pool), bool)
    share = np.array([shares.get(s, 0.0) for s in pool.source.tolist()], float)
    whole = share >= 1.0
    out = whole.copy()
    partial = np.flatnonzero(~whole & (share > 0.0))
    out[partial] = np.array([_unit(p) for p in pool.pair_id[partial].tolist()], float) < share[partial]
    return out

"""Exact and near-duplicate detection (pure; the warehouse persists the outcome).

Exact: by pair id, first seen wins. Near: MinHash LSH over history + responses; a new pair whose
estimated Jaccard with an already *kept* pair reaches the threshold is a near duplicate of it, so every
cluster is a star around the one member kept.

The index holds this run's kept pairs in memory; pairs kept by earlier runs stay in the warehouse, which
indexes their band keys: `lookup` returns only the signatures sharing a key with a batch, so an ingest's
memory and time grow with what it reads, not with the warehouse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tasks.ingest import minhash


def near_dup_text(history: list[dict[str, str]], response_a: str, response_b: str) -> str:
    """The text a pair is shingled by: responses in a fixed order, so A/B swaps shingle alike."""
    first, second = sorted([response_a, response_b])
    return "\n".join([m["content"] for m in history] + [first, second])


def first_occurrences(ids: list[str]) -> list[int | None]:
    """For each position, the earlier position with the same id (None for a first occurrence)."""
    seen: dict[str, int] = {}
    out: list[int | None] = []
    for i, key in enumerate(ids):
        out.append(seen.get(key))
        seen.setdefault(key, i)
    return out


@dataclass(slots=True)
class NearDupVerdicts:
    duplicate_of: list[str | None]  # the kept pair's id, or None when this pair is kept
    similarity: list[float | None]


class _Segment:
    """Band keys of a block of indexed docs, sorted per band for searchsorted look-ups."""

    def __init__(self, keys: np.ndarray, first_doc: int):
        # one contiguous sorted row per band: searchsorted copies a strided column on every call
        by_band = np.ascontiguousarray(keys.T)
        order = np.argsort(by_band, axis=1, kind="stable")
        self.keys = np.take_along_axis(by_band, order, axis=1)
        self.docs = order + first_doc

    def candidates(self, query: "SortedQuery", max_bucket: int) -> tuple[np.ndarray, np.ndarray]:
        """(query doc, indexed doc) pairs that share a band key, at most `max_bucket` per key."""
        qs, ds = [], []
        for band in range(query.keys.shape[0]):
            col = self.keys[band]
            lo = np.searchsorted(col, query.keys[band], "left")
            hi = np.searchsorted(col, query.keys[band], "right")
            counts = np.minimum(hi - lo, max_bucket)
            total = int(counts.sum())
            if not total:
                continue
            within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            qs.append(np.repeat(query.docs[band], counts))
            ds.append(self.docs[band, np.repeat(lo, counts) + within])
        if not qs:
            return np.empty(0, np.intp), np.empty(0, np.intp)
        return np.concatenate(qs), np.concatenate(ds)


class SortedQuery:
    """A batch's band keys sorted per band: searchsorted with sorted needles is about 5x faster."""

    def __init__(self, keys: np.ndarray):
        by_band = np.ascontiguousarray(keys.T)
        self.docs = np.argsort(by_band, axis=1, kind="stable")
        self.keys = np.take_along_axis(by_band, self.docs, axis=1)


class NearDupIndex:
    """The kept pairs' MinHash signatures, queried batch by batch."""

    def __init__(self, num_perm: int = 256, threshold: float = 0.8, max_bucket: int = 64,
                 lookup: Callable[[np.ndarray], tuple[list[str], np.ndarray]] | None = None):
        self.lookup = lookup  # stored band keys (flat) -> (ids, signatures) of earlier runs' kept pairs
        self.num_perm = num_perm
        self.threshold = threshold
        self.bands, self.rows = minhash.lsh_params(threshold, num_perm)
        self.max_bucket = max_bucket
        self.ids: list[str] = []
        self._sigs = np.empty((1024, num_perm), np.uint32)  # grown by doubling, filled to len(self.ids)
        self._segments: list[_Segment] = []

    def __len__(self) -> int:
        return len(self.ids)

    def signatures_of(self, texts: list[str], chunk: int = 256) -> np.ndarray:
        # A few hundred docs at a time keep numpy's temporaries small enough to be reused from the heap:
        # whole 5,000-doc batches allocate fresh pages every time and measured 1.5-4x slower.
        parts = [
            minhash.signatures(*minhash.shingle_hashes(texts[i : i + chunk]), self.num_perm)
            for i in range(0, len(texts), chunk)
        ]
        return np.concatenate(parts) if parts else np.empty((0, self.num_perm), np.uint32)

    def stored_keys(self, sigs: np.ndarray) -> np.ndarray:
        """The band keys the warehouse indexes for these signatures, (docs x bands)."""
        return minhash.stored_band_keys(minhash.band_keys(sigs, self.bands, self.rows))

    @property
    def _all_sigs(self) -> np.ndarray:
        return self._sigs[: len(self.ids)]

    def add(self, ids: list[str], sigs: np.ndarray) -> None:
        if not ids:
            return
        start, end = len(self.ids), len(self.ids) + len(ids)
        if end > len(self._sigs):
            grown = np.empty((max(end, 2 * len(self._sigs)), self.num_perm), np.uint32)
            grown[:start] = self._sigs[:start]
            self._sigs = grown
        self._sigs[start:end] = sigs
        keys = minhash.band_keys(sigs, self.bands, self.rows)
        self._segments.append(_Segment(keys, start))
        self.ids.extend(ids)
        if len(self._segments) > 16:  # keep look-ups to a few sorted arrays
            self._segments = [_Segment(minhash.band_keys(self._all_sigs, self.bands, self.rows), 0)]

    def _verified(self, q: np.ndarray, d: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        if len(q) == 0:
            return q, d, np.empty(0)
        pairs = np.unique(np.stack([q, d], axis=1), axis=0)
        q, d = pairs[:, 0], pairs[:, 1]
        sim = np.empty(len(q))
        for s in range(0, len(q), 20_000):  # bounded memory for (candidates x num_perm) comparisons
            sim[s : s + 20_000] = minhash.estimated_jaccard(a[q[s : s + 20_000]], b[d[s : s + 20_000]])
        ok = sim >= self.threshold
        return q[ok], d[ok], sim[ok]

    def assign(self, ids: list[str], sigs: np.ndarray) -> NearDupVerdicts:
        """Decide, in order, which of these new pairs are near duplicates; index the ones kept."""
        n = len(ids)
        keys = minhash.band_keys(sigs, self.bands, self.rows) if n else np.empty((0, self.bands), np.uint64)
        query = SortedQuery(keys)
        best_old: dict[int, tuple[float, str]] = {}

        def consider(q: np.ndarray, d: np.ndarray, against: np.ndarray, names: list[str]) -> None:
            for qi, di, s in zip(*self._verified(q, d, sigs, against)):
                if int(qi) not in best_old or s > best_old[int(qi)][0]:
                    best_old[int(qi)] = (float(s), names[int(di)])

        if self.lookup is not None and n:
            stored_ids, stored_sigs = self.lookup(minhash.stored_band_keys(keys).ravel())
            if stored_ids:
                seg = _Segment(minhash.band_keys(stored_sigs, self.bands, self.rows), 0)
                consider(*seg.candidates(query, self.max_bucket), stored_sigs, stored_ids)
        for seg in self._segments:
            consider(*seg.candidates(query, self.max_bucket), self._all_sigs, self.ids)
        within: dict[int, list[tuple[float, int]]] = {}
        if n > 1:
            q, d = _Segment(keys, 0).candidates(query, self.max_bucket)
            earlier = d < q
            for qi, di, s in zip(*self._verified(q[earlier], d[earlier], sigs, sigs)):
                within.setdefault(int(qi), []).append((float(s), int(di)))

        duplicate_of: list[str | None] = [None] * n
        similarity: list[float | None] = [None] * n
        kept = np.ones(n, dtype=bool)
        for i in sorted(set(best_old) | set(within)):
            if i in best_old:
                s, kept_id = best_old[i]
                duplicate_of[i], similarity[i] = kept_id, s
            else:
                live = [(s, j) for s, j in within[i] if kept[j]]
                if not live:
                    continue
                s, j = max(live)
                duplicate_of[i], similarity[i] = ids[j], s
            kept[i] = False
        keep = np.flatnonzero(kept)
        self.add([ids[i] for i in keep], sigs[keep])
        return NearDupVerdicts(duplicate_of, similarity)

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

from common.arrays import sorted_unique
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
    """Band keys of a block of indexed docs, sorted per band for searchsorted look-ups: per band one
    contiguous array of keys and the doc (int32) of each."""

    def __init__(self, keys: list[np.ndarray], docs: list[np.ndarray]):
        self.keys = keys
        self.docs = docs

    @classmethod
    def of(cls, keys: np.ndarray, first_doc: int) -> _Segment:
        """The segment of docs `first_doc`, `first_doc + 1`, ... with these band keys (docs x bands)."""
        # one contiguous sorted row per band: searchsorted copies a strided column on every call
        by_band = np.ascontiguousarray(keys.T)
        order = np.argsort(by_band, axis=1, kind="stable")
        sorted_keys = np.take_along_axis(by_band, order, axis=1)
        docs = (order + first_doc).astype(np.int32)
        return cls([sorted_keys[b].copy() for b in range(len(by_band))], [docs[b].copy() for b in range(len(by_band))])

    @classmethod
    def merged(cls, segments: list[_Segment]) -> _Segment:
        """One segment of consecutive segments (in doc order), equal to one built from all their docs at once:
        a stable sort keeps equal keys in doc order. Band by band, each freed from its segments as it is
        merged: no copy of the whole index at once, and no band keys computed again from the signatures."""
        keys, docs = [], []
        for band in range(len(segments[0].keys)):
            k = np.concatenate([s.keys[band] for s in segments])
            d = np.concatenate([s.docs[band] for s in segments])
            for s in segments:
                s.keys[band] = s.docs[band] = None
            order = np.argsort(k, kind="stable")  # sorted runs, merged
            keys.append(k[order])
            docs.append(d[order])
        return cls(keys, docs)

    def candidates(self, query: "SortedQuery", max_bucket: int) -> tuple[np.ndarray, np.ndarray]:
        """(query doc, indexed doc) pairs that share a band key, at most `max_bucket` per key."""
        qs, ds = [], []
        for band in range(query.keys.shape[0]):
            col, keys = self.keys[band], query.keys[band]
            lo = np.searchsorted(col, keys, "left")
            # the end of a key's run only for the few keys present (a second search of every key cost as much)
            found = np.flatnonzero(col[np.minimum(lo, len(col) - 1)] == keys) if len(col) else lo[:0]
            hi = lo.copy()
            hi[found] = np.searchsorted(col, keys[found], "right")
            counts = np.minimum(hi - lo, max_bucket)
            total = int(counts.sum())
            if not total:
                continue
            within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            qs.append(np.repeat(query.docs[band], counts))
            ds.append(self.docs[band][np.repeat(lo, counts) + within])
        if not qs:
            return np.empty(0, np.intp), np.empty(0, np.intp)
        return np.concatenate(qs), np.concatenate(ds).astype(np.intp)


class SortedQuery:
    """A batch's band keys sorted per band: searchsorted with sorted needles is about 5x faster."""

    def __init__(self, keys: np.ndarray):
        by_band = np.ascontiguousarray(keys.T)
        self.docs = np.argsort(by_band, axis=1, kind="stable")
        self.keys = np.take_along_axis(by_band, self.docs, axis=1)


# This run's kept signatures live in blocks of this many docs: the index grows without copying them all.
_BLOCK_DOCS = 1 << 15


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
        self._blocks: list[np.ndarray] = []  # signatures of docs [i * _BLOCK_DOCS, (i + 1) * _BLOCK_DOCS)
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

    def _signatures(self, docs: np.ndarray, bins: slice = slice(None)) -> np.ndarray:
        """The signatures of these indexed docs (those bins of them), one row each."""
        out = np.empty((len(docs), len(range(self.num_perm)[bins])), np.uint32)
        block, offset = np.divmod(docs, _BLOCK_DOCS)
        order = np.argsort(block, kind="stable")  # grouped by block: one gather per block
        edges = np.searchsorted(block[order], np.arange(len(self._blocks) + 1))
        for b in np.flatnonzero(np.diff(edges)):
            rows = order[edges[b] : edges[b + 1]]
            out[rows] = self._blocks[b][offset[rows], bins]
        return out

    def add(self, ids: list[str], sigs: np.ndarray) -> None:
        if not ids:
            return
        start = len(self.ids)
        done = 0
        while done < len(ids):
            block, offset = divmod(start + done, _BLOCK_DOCS)
            if block == len(self._blocks):
                self._blocks.append(np.empty((_BLOCK_DOCS, self.num_perm), np.uint32))
            n = min(_BLOCK_DOCS - offset, len(ids) - done)
            self._blocks[block][offset : offset + n] = sigs[done : done + n]
            done += n
        self._segments.append(_Segment.of(minhash.band_keys(sigs, self.bands, self.rows), start))
        self.ids.extend(ids)
        if len(self._segments) > 16:  # keep look-ups to a few sorted arrays
            self._segments = [_Segment.merged(self._segments)]

    def _verified(self, q: np.ndarray, d: np.ndarray, a: np.ndarray,
                  b: Callable[[np.ndarray, slice], np.ndarray]) -> tuple[np.ndarray, ...]:
        """The candidate pairs (a[q], b(d)) whose estimated Jaccard reaches the threshold, with it. `b(docs, bins)`
        gives those bins of those docs' signatures."""
        if len(q) == 0:
            return q, d, np.empty(0)
        # distinct (q, d) pairs in (q, d) order, as one integer each: np.unique(axis=0) sorts rows far slower
        span = int(d.max()) + 1
        pairs = sorted_unique(q.astype(np.int64) * span + d)
        q, d = pairs // span, pairs % span
        # Most candidates share a band by chance and little else. The first `head` bins rule them out: the
        # other bins can add at most k - head equal ones, so a pair short of the threshold even then is not
        # compared further (the similarity of every pair that can reach it is computed from all bins).
        k = self.num_perm
        head = min(k, max(16, int(np.ceil(2 * (1 - self.threshold) * k))))
        sim = np.zeros(len(q))
        for s in range(0, len(q), 20_000):  # bounded memory for (candidates x num_perm) comparisons
            qs, ds = q[s : s + 20_000], d[s : s + 20_000]
            equal = (a[qs, :head] == b(ds, slice(0, head))).sum(axis=1)
            live = np.flatnonzero((equal + (k - head)) / k >= self.threshold)
            sim[s + live] = minhash.estimated_jaccard(a[qs[live]], b(ds[live], slice(None)))
        ok = sim >= self.threshold
        return q[ok], d[ok], sim[ok]

    def assign(self, ids: list[str], sigs: np.ndarray) -> NearDupVerdicts:
        """Decide, in order, which of these new pairs are near duplicates; index the ones kept."""
        n = len(ids)
        keys = minhash.band_keys(sigs, self.bands, self.rows) if n else np.empty((0, self.bands), np.uint64)
        query = SortedQuery(keys)
        best_old: dict[int, tuple[float, str]] = {}

        def consider(q: np.ndarray, d: np.ndarray, against: Callable[[np.ndarray, slice], np.ndarray],
                     names: list[str]) -> None:
            for qi, di, s in zip(*self._verified(q, d, sigs, against)):
                if int(qi) not in best_old or s > best_old[int(qi)][0]:
                    best_old[int(qi)] = (float(s), names[int(di)])

        if self.lookup is not None and n:
            stored_ids, stored_sigs = self.lookup(minhash.stored_band_keys(keys).ravel())
            if stored_ids:
                seg = _Segment.of(minhash.band_keys(stored_sigs, self.bands, self.rows), 0)
                consider(*seg.candidates(query, self.max_bucket), lambda d, bins: stored_sigs[d, bins], stored_ids)
        for seg in self._segments:
            consider(*seg.candidates(query, self.max_bucket), self._signatures, self.ids)
        within: dict[int, list[tuple[float, int]]] = {}
        if n > 1:
            q, d = _Segment.of(keys, 0).candidates(query, self.max_bucket)
            earlier = d < q
            for qi, di, s in zip(*self._verified(q[earlier], d[earlier], sigs, lambda d, bins: sigs[d, bins])):
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

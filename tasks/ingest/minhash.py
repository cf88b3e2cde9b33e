"""Vectorized MinHash over byte shingles: one-permutation hashing (OPH) with densification.

Shingles: after ASCII lower-casing and folding runs of white space, one shingle starts at every word
start (every character in scripts written without spaces) and covers the next 16 bytes. Each shingle is
hashed once to 64 bits; its top bits pick one of `num_perm` bins and its low 32 bits compete for that
bin's minimum. That is O(shingles) instead of O(shingles x num_perm), done for a whole batch at once in
numpy. Empty bins (short texts) borrow from the next non-empty bin, with an offset (Shrivastava & Li's
rotation densification), so the estimator stays unbiased.
"""

from __future__ import annotations

import numpy as np

SHINGLE_BYTES = 16
_PAD = SHINGLE_BYTES
_EMPTY = np.uint32(0xFFFFFFFF)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xC2B2AE3D27D4EB4F)

# Byte tables: lower-case ASCII, every white-space byte becomes one space; and each byte's class.
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A") : ord("Z") + 1] += 32
for _ws in b"\t\n\v\f\r":
    _LOWER[_ws] = ord(" ")
_SEP, _STARTS, _WIDE = np.uint8(1), np.uint8(2), np.uint8(4)
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[[0, 32]] = _SEP  # (after lower-casing) a space or the padding between docs
for _b in range(256):
    if _b not in (0, 32) and not 0x80 <= _b <= 0xBF:  # not a separator, not a UTF-8 continuation byte
        _CLASS[_b] |= _STARTS
        if _b >= 0xE0:  # lead byte of a 3- or 4-byte character: scripts without spaces
            _CLASS[_b] |= _WIDE
_LOWER_TABLE, _CLASS_TABLE = _LOWER.tobytes(), _CLASS.tobytes()  # for bytes.translate


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, in place on a uint64 array."""
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def shingle_hashes(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit hash per shingle, doc offsets): shingles of doc i are hashes[offsets[i]:offsets[i+1]]."""
    pad = b"\0" * _PAD
    # a byte table in C over each whole text (a numpy gather per byte measured slower)
    docs = [text.encode("utf-8", "surrogatepass").translate(_LOWER_TABLE) for text in texts]
    raw = pad.join(docs) + pad
    lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    starts = np.concatenate(([0], np.cumsum(lengths + _PAD)[:-1]))
    space = np.frombuffer(raw, dtype=np.uint8) == 32
    runs = np.flatnonzero(space[1:] & space[:-1])
    if len(runs):  # a run of spaces becomes one: only the few texts that have one are folded and joined again
        for i in np.unique(np.searchsorted(starts, runs, side="right") - 1):
            doc = docs[i]
            while len(folded := doc.replace(b"  ", b" ")) != len(doc):
                doc = folded
            docs[i] = doc
        raw = pad.join(docs) + pad
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        starts = np.concatenate(([0], np.cumsum(lengths + _PAD)[:-1]))

    cls = np.frombuffer(raw.translate(_CLASS_TABLE), dtype=np.uint8)
    # a shingle starts at a character that follows a separator, or at any wide character
    anchor = np.empty(len(cls), dtype=bool)
    anchor[0] = bool(cls[0] & _STARTS)
    anchor[1:] = ((cls[:-1] & _SEP) | (cls[1:] & _WIDE)) != 0
    anchor &= (cls & _STARTS) != 0
    positions = np.flatnonzero(anchor)

    padded = raw + pad
    words = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    h = words[positions] * _K1
    h ^= (words[positions + 8] * _K2) >> np.uint64(7)
    h = _mix64(h)
    offsets = np.searchsorted(positions, np.append(starts, len(raw)))
    return h, offsets


def signatures(hashes: np.ndarray, offsets: np.ndarray, num_perm: int) -> np.ndarray:
    """OPH signatures, one row of `num_perm` uint32 per doc."""
    if num_perm & (num_perm - 1):
        raise ValueError("num_perm must be a power of two")
    n_docs = len(offsets) - 1
    bits = num_perm.bit_length() - 1
    bins = (hashes >> np.uint64(64 - bits)).astype(np.intp)
    values = (hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    doc = np.repeat(np.arange(n_docs, dtype=np.intp), np.diff(offsets))
    sig = np.full(n_docs * num_perm, _EMPTY, dtype=np.uint32)
    np.minimum.at(sig, doc * num_perm + bins, values)
    sig = sig.reshape(n_docs, num_perm)
    _densify(sig)
    return sig


def _densify(sig: np.ndarray) -> None:
    """Fill empty bins from the next non-empty bin to the right (circular), offset by the distance."""
    rows = np.flatnonzero((sig == _EMPTY).any(axis=1))
    if not len(rows):
        return
    part = sig[rows]
    k = sig.shape[1]
    full = part != _EMPTY
    # the next full bin at or after each bin, over the row written twice (circular), for all rows at once
    nxt = np.where(np.concatenate((full, full), axis=1), np.arange(2 * k, dtype=np.int32), np.int32(2 * k))
    nxt = np.minimum.accumulate(nxt[:, ::-1], axis=1)[:, ::-1][:, :k]
    # a row without any shingle has nothing to borrow; such a text is empty and fails validation
    r, empty = np.nonzero(~full & (nxt < 2 * k))
    src = nxt[r, empty]
    dist = (src - empty).astype(np.uint64)
    part[r, empty] = (part[r, src % k].astype(np.uint64) + dist * np.uint64(0x9E3779B1)).astype(np.uint32)
    sig[rows] = part


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Share of equal signature entries, row by row (a and b: (n, num_perm))."""
    return (a == b).mean(axis=-1)


def lsh_params(threshold: float, num_perm: int, margin: float = 0.05, target: float = 0.95) -> tuple[int, int]:
    """(bands, rows per band): the fewest candidates that still make a pair at `threshold - margin` a
    candidate with probability >= `target`. Candidates are verified afterwards, so misses cost more
    than extra candidates."""
    low = max(0.01, threshold - margin)
    for rows in range(num_perm, 0, -1):
        bands = num_perm // rows
        if 1.0 - (1.0 - low**rows) ** bands >= target:
            return bands, rows
    return num_perm, 1


def band_keys(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """One 64-bit key per (doc, band): equal keys mean equal band rows (up to hash collisions)."""
    n = sig.shape[0]
    part = sig[:, : bands * rows].reshape(n, bands, rows).astype(np.uint64)
    key = np.full((n, bands), np.uint64(0x84222325CBF29CE4), dtype=np.uint64)
    for j in range(rows):
        salt = np.uint64((j * int(_K1)) & 0xFFFFFFFFFFFFFFFF)
        key = _mix64(key ^ (part[:, :, j] + salt))
    return key


def stored_band_keys(keys: np.ndarray) -> np.ndarray:
    """Band keys as the warehouse indexes them, one column per band: salted by the band's number, so that
    equal rows in different bands do not meet."""
    salts = _mix64(np.arange(1, keys.shape[1] + 1, dtype=np.uint64) * _K1) if keys.ndim == 2 else None
    return keys ^ salts[None, :] if salts is not None else keys

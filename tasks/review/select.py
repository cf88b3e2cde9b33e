"""Which pairs of a version go to reviewers (pure functions over columns of the version's judged pool: every pair
with a verdict under its judge configuration, those the version dropped included, so that a review can bring a
dropped pair back).

- `borderline`: the pairs the judge is least sure of, by p_correct closest to 0.5 where there is p_correct
  (fitted at the push, over the whole pool); without calibration (or a pair without p_correct, ranked after those
  with one) by the smallest |mean margin|. Ties are broken by a hash of the pair id, not by pair id order.
- `disagreement`: the pairs whose two orders disagree, or where the judge's direction is against the pair's
  own human label (a non-tie label, not both-bad); the most uncertain first, as above.
- `audit`: a uniform sample, in the order of a seeded hash of the pair id. Asking for more extends the same
  sample, so everything audited so far is one uniform sample of the judged pool: the unbiased estimate of how
  often the judge is right on its own data, and what a certification calibrates on.
- `uncertified`: of a certified version (`target_agreement`), the pairs its certification, computed again at
  the push, could have accepted but did not, the nearest the certified threshold first: a reviewer's decision
  keeps such a pair in the next version.

A push takes the first N pairs of a selection's order: a pair already reviewed, or already a task of the
project, is not pushed again but stays a member of the selection (skipping it would bias the audit sample).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from common.errors import InvalidInputError
from tasks.curate.certification import Certified
from tasks.curate.confidence import Confidences
from tasks.curate.pool import JudgedPool

SELECTIONS = ("borderline", "disagreement", "audit", "uncertified")
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Candidates:
    """A version's pairs as columns (the warehouse's `review_candidates`)."""

    pair_id: np.ndarray  # object (str)
    p_correct: np.ndarray  # float64, NaN where there is none
    margin: np.ndarray  # float64: the judge's mean margin on A's side, NaN where there is no verdict
    margin_ab: np.ndarray  # float64: per order, NaN where that order was not judged
    margin_ba: np.ndarray
    human_label: np.ndarray  # float64: the pair's own label on A's side, NaN where there is none
    both_bad: np.ndarray  # bool
    # a certified version's: the certification's score (NaN where a pair could not be certified) and which pairs
    # could be certified but are not; None for any other version
    certification_score: np.ndarray | None = None
    uncertified: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.pair_id)

    @classmethod
    def of_pool(cls, pool: JudgedPool, judge: Confidences, p_correct: np.ndarray,
                certified: Certified | None = None, among: np.ndarray | None = None) -> Candidates:
        """The judged pairs of a pool (`judge`: the judge's own confidences; `p_correct` per pool pair, NaN where
        there is none; `certified`: a certified version's certification, computed again; `among`: bool per pair,
        the pairs a selection may draw from, e.g. one source's for its own audit)."""
        idx = np.flatnonzero((judge.verdicts > 0) & (True if among is None else among))

        def order_mean(ab: bool) -> np.ndarray:
            mine = pool.v_ab == ab
            n = np.bincount(pool.v_pair[mine], minlength=len(pool))
            total = np.bincount(pool.v_pair[mine], weights=pool.v_margin[mine], minlength=len(pool))
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(n > 0, total / np.maximum(n, 1), np.nan)[idx]

        score = uncertified = None
        if certified is not None:
            score = certified.scores.score[idx]
            uncertified = ~np.isnan(score) & ~certified.accepted[idx]
        return cls(pool.pair_id[idx], p_correct[idx], judge.margin[idx], order_mean(True), order_mean(False),
                   pool.human_label[idx], pool.both_bad[idx], score, uncertified)

    @classmethod
    def from_arrow(cls, t: pa.Table) -> Candidates:
        def num(name: str) -> np.ndarray:
            return np.array(t.column(name).to_pylist(), dtype=float)

        ids = np.empty(t.num_rows, dtype=object)
        ids[:] = t.column("pair_id").to_pylist()
        return cls(ids, num("p_correct"), num("margin"), num("margin_ab"), num("margin_ba"), num("human_label"),
                   np.array([bool(x) for x in t.column("both_bad").to_pylist()], bool))

    @property
    def judge_side(self) -> np.ndarray:
        """The judge's direction per pair: "a", "b" or "tie" (also where there is no verdict)."""
        m = np.nan_to_num(self.margin)
        return np.where(m > 0, "a", np.where(m < 0, "b", "tie")).astype(object)


def pair_hash(pair_id: str, seed: int = DEFAULT_SEED) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{pair_id}".encode(), digest_size=8).digest(), "big")


def _hashes(pair_ids: np.ndarray, seed: int) -> np.ndarray:
    return np.array([pair_hash(p, seed) for p in pair_ids], dtype=np.uint64)


def uncertainty_order(c: Candidates, idx: np.ndarray | None = None) -> np.ndarray:
    """Indices (of `idx`, default all) from the least sure to the surest."""
    idx = np.arange(len(c)) if idx is None else np.asarray(idx)
    p = c.p_correct[idx]
    has_p = ~np.isnan(p)
    closeness = np.where(has_p, np.abs(np.nan_to_num(p) - 0.5), np.abs(np.nan_to_num(c.margin[idx], nan=np.inf)))
    return idx[np.lexsort((_hashes(c.pair_id[idx], DEFAULT_SEED), closeness, ~has_p))]


def disagreement_mask(c: Candidates) -> np.ndarray:
    both = ~np.isnan(c.margin_ab) & ~np.isnan(c.margin_ba)
    orders = both & (np.sign(np.nan_to_num(c.margin_ab)) != np.sign(np.nan_to_num(c.margin_ba)))
    label = np.nan_to_num(c.human_label)
    judged = np.sign(np.nan_to_num(c.margin))
    human = ~np.isnan(c.human_label) & (label != 0) & ~c.both_bad & (judged != 0) & (np.sign(label) != judged)
    return orders | human


def audit_order(c: Candidates, seed: int) -> np.ndarray:
    return np.argsort(_hashes(c.pair_id, seed), kind="stable")


class NotCertifiedVersion(InvalidInputError):
    """`uncertified` asks for a certified version."""

    hint = "build one with `curate build-version NAME --target-agreement A`"


def uncertified_order(c: Candidates) -> np.ndarray:
    """The pairs a certification could have accepted but did not, the highest score (nearest the threshold)
    first; ties by a hash of the pair id."""
    if c.uncertified is None or c.certification_score is None:
        raise NotCertifiedVersion("the selection `uncertified` needs a certified version (built with "
                                  "target_agreement)")
    idx = np.flatnonzero(c.uncertified)
    return idx[np.lexsort((_hashes(c.pair_id[idx], DEFAULT_SEED), -c.certification_score[idx]))]


def ranked(c: Candidates, selection: str, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Every eligible pair of `c` for `selection`, in the order they are taken."""
    if selection == "borderline":
        return uncertainty_order(c)
    if selection == "disagreement":
        return uncertainty_order(c, np.flatnonzero(disagreement_mask(c)))
    if selection == "audit":
        return audit_order(c, seed)
    if selection == "uncertified":
        return uncertified_order(c)
    raise ValueError(f"unknown selection {selection!r}: one of {', '.join(SELECTIONS)}")


@dataclass(frozen=True)
class Picked:
    index: np.ndarray  # indices into the candidates: the first `limit` of the selection's order
    needs_task: np.ndarray  # bool: not yet a task of this project and not reviewed anywhere
    in_project: int  # of them, already a task of this project
    reviewed: int  # of them, not a task here but reviewed already (in another project)


def pick(c: Candidates, selection: str, limit: int, in_project: set[str], reviewed: set[str],
         seed: int = DEFAULT_SEED) -> Picked:
    """The first `limit` pairs of `selection`'s order, and which of them need a task. The same call again picks
    the same pairs (so a second push adds nothing), a larger `limit` extends them; a pair already a task of
    the project, or already reviewed, is a member without a new task."""
    if limit < 0:
        raise ValueError("limit must be >= 0")
    index = ranked(c, selection, seed)[:limit]
    ids = c.pair_id[index]
    here = np.array([p in in_project for p in ids], dtype=bool)
    done = np.array([p in reviewed for p in ids], dtype=bool) & ~here
    return Picked(index.astype(np.int64), ~here & ~done, int(here.sum()), int(done.sum()))

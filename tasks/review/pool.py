"""A judge configuration's judged pool as a version and a review push read it: the pairs and their verdicts, the
judge's own confidences, and the reviews aligned with them."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.curate.bias import MARKDOWN_RE2
from tasks.curate.confidence import Confidences, pool_confidences
from tasks.curate.pool import JudgedPool
from tasks.review.overrides import PoolReviews
from warehouse.store import Warehouse


@dataclass(frozen=True)
class ReviewedPool:
    pool: JudgedPool
    judge: Confidences  # the judge's own, before any review decides a pair
    reviews: PoolReviews

    @classmethod
    def read(cls, wh: Warehouse, config_id: str) -> ReviewedPool:
        pool = JudgedPool.from_arrow(*wh.versions.judged_pool(config_id, MARKDOWN_RE2))
        judge = pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree,
                                 pool.human_label)
        return cls(pool, judge, PoolReviews.align(pool.pair_id, wh.reviews.review_outcomes(),
                                                  wh.reviews.review_selections()))

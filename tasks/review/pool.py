"""A judge configuration's judged pool as a version and a review push read it: the pairs and their verdicts, the
judge's own confidences, the reviews aligned with them, and what each source of the pairs says of its labels as
the warehouse stores it (`tasks.ingest.source_facts`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tasks.curate.bias import MARKDOWN_RE2
from tasks.curate.confidence import Confidences, pool_confidences
from tasks.curate.ladder import with_reward_model
from tasks.curate.policy import FilterPolicy
from tasks.curate.pool import JudgedPool, drawn, models_as_stated, take
from tasks.ingest.sources import SourceFacts, warehouse_facts
from tasks.review.overrides import PoolReviews
from warehouse.store import Warehouse


@dataclass(frozen=True)
class ReviewedPool:
    pool: JudgedPool
    judge: Confidences  # the judge's own, before any review decides a pair
    reviews: PoolReviews
    facts: dict[str, SourceFacts] = field(default_factory=dict)  # each source's, as the warehouse stores them

    @classmethod
    def read(cls, wh: Warehouse, config_id: str, policy: FilterPolicy | None = None) -> ReviewedPool:
        """The pool as the warehouse holds it, its model names only where their source's facts say it names them
        (the bias audit's model families); of the sources a `policy`'s version is made of and the share of each
        it draws (`FilterPolicy.version_sources`, each source checked by `FilterPolicy.check_sources`; None:
        every pair)."""
        facts = warehouse_facts(wh.sources)
        pool = models_as_stated(JudgedPool.from_arrow(*wh.versions.judged_pool(config_id, MARKDOWN_RE2)),
                                {name for name, f in facts.items() if f.names_models})
        shares = None if policy is None else policy.version_sources()
        if policy is not None:
            policy.check_sources(pool.source.tolist(), config_id)
        pool = take(pool, drawn(pool, shares))
        judge = with_reward_model(pool, pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin,
                                                         pool.v_scores_agree, pool.human_label))
        return cls(pool, judge, PoolReviews.align(pool.pair_id, wh.reviews.review_outcomes(),
                                                  wh.reviews.review_selections(), wh.reviews.review_voters()), facts)

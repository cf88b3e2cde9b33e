"""The warehouse: the only code that speaks SQL. One DuckDB file, one connection, numbered migrations,
and named queries grouped by bounded context, each in its own module:

- `connection.py`: opening the file (locked, damaged), migrations, transactions, shared helpers;
- `runs.py`: runs of every kind, and marking those whose process is gone as interrupted;
- `ingest.py`: a batch's look-ups and writes, the near-duplicate index, evaluation prompts, source pins;
- `sources.py`: what each source says about its labels and rows, stored beside its pairs;
- `judging.py`: judge configurations, the judgment cache, merging worker results, evaluations, cost;
- `versions.py`: dataset versions, their rows and their publication;
- `reviews.py`: human review in Label Studio: projects, tasks, selections, annotations, outcomes;
- `certification.py`: the labels that trained rounds, their label roles, and certification attempts;
- `pii.py`: personal data and secrets found in the pairs' texts (kind, part, span), and which pairs were scanned;
- `dashboard.py`: the dashboard's queries over its snapshot (a file of its own, never the warehouse).
"""

from __future__ import annotations

from pathlib import Path

from warehouse.certification import CertificationStore
from warehouse.connection import (
    JUDGMENT_TABLES,
    Connection,
    WarehouseLockedError,
    WarehouseUnreadableError,
    migrations,
)
from warehouse.ingest import IngestStore
from warehouse.judging import JudgingStore
from warehouse.pii import PiiStore
from warehouse.reviews import ReviewStore
from warehouse.runs import RunRecords
from warehouse.sources import SourceFactsStore
from warehouse.versions import VersionStore

__all__ = ["JUDGMENT_TABLES", "Warehouse", "WarehouseLockedError", "WarehouseUnreadableError", "migrations"]


class Warehouse(Connection):
    """The warehouse file, open read-write (migrated, interrupted runs marked) or read-only. Its named queries are
    grouped in parts, one per bounded context: `wh.runs`, `wh.ingest`, `wh.sources`, `wh.judging`,
    `wh.versions`, `wh.reviews`, `wh.certification`, `wh.pii`."""

    def __init__(self, path: Path | str, read_only: bool = False):
        self.runs = RunRecords(self)
        self.ingest = IngestStore(self)
        self.sources = SourceFactsStore(self)
        self.judging = JudgingStore(self)
        self.versions = VersionStore(self)
        self.reviews = ReviewStore(self)
        self.certification = CertificationStore(self)
        self.pii = PiiStore(self)
        super().__init__(path, read_only)  # opening a writer marks the runs whose process is gone (self.runs)

    def after_open_for_writing(self) -> None:
        self.runs.mark_interrupted_runs()

    def __enter__(self) -> Warehouse:
        return self

"""Personal data and secrets found in the pairs' texts (migration 026): which pairs were scanned under which
rules, each finding's kind, part and span (never the text), and what a version reads of them."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from warehouse.connection import Part

# The version of the scan's rules (`tasks.ingest.pii`, which reads it from here as `RULES`): a pair scanned under
# another is scanned again by the backfill, not re-ingested. Raise it whenever a rule changes what is found.
PII_RULES = "2"


def scan_rules(detector: str | None) -> str:
    """The rules a pair is scanned under (`pii_scans.rules`): `PII_RULES`, and the detector model's name after a
    `+` where one runs (`tasks.ingest.pii_detector`)."""
    return f"{PII_RULES}+{detector}" if detector else PII_RULES


def current_scan_rules() -> str:
    """The rules the settings scan under now (their `pii_detector`)."""
    from common.settings import get_settings

    return scan_rules(get_settings().pii_detector)


class PiiStore(Part):
    """Named queries over the warehouse's one connection (see `warehouse.store.Warehouse`)."""

    def _migrated(self) -> bool:
        """Whether the scan's tables exist (a warehouse opened read-only before migration 026 has none)."""
        return bool(self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'pii_scans'").fetchall()[0][0])

    def unscanned(self, rules: str, batch: int = 5000) -> Iterator[pa.Table]:
        """The texts of the pairs not scanned under `rules` (never scanned, or under older rules), `batch` pairs
        at a time in pair id order: (pair_id, history, response_a, response_b)."""
        after = ""
        while True:
            table = self.con.sql(
                """SELECT p.pair_id, p.history, p.response_a, p.response_b FROM candidate_pairs p
                   LEFT JOIN pii_scans s USING (pair_id)
                   WHERE (s.rules IS NULL OR s.rules <> $rules) AND p.pair_id > $after
                   ORDER BY p.pair_id LIMIT $batch""",
                params={"rules": rules, "after": after, "batch": batch}).to_arrow_table()
            if not table.num_rows:
                return
            yield table
            after = table.column("pair_id")[-1].as_py()

    def replace(self, scans: pa.Table, findings: pa.Table) -> None:
        """The scan of `scans`' pairs, in one transaction: their earlier findings and scan (older rules) replaced."""
        with self.transaction(), self._registered("rescanned", scans.select(["pair_id"])):
            self.con.execute("DELETE FROM pii_findings WHERE pair_id IN (SELECT pair_id FROM rescanned)")
            self.con.execute("DELETE FROM pii_scans WHERE pair_id IN (SELECT pair_id FROM rescanned)")
            self._insert("pii_scans", scans)
            if findings.num_rows:
                self._insert("pii_findings", findings)

    def findings_of(self, pair_ids: pa.Array | pa.ChunkedArray) -> pa.Table:
        """The findings of these pairs: (pair_id, part, message, kind, span_start, span_end), in pair id, part,
        message and span order."""
        with self._registered("wanted_pairs", pa.table({"pair_id": pair_ids})):
            return self.con.sql(
                """SELECT f.pair_id, f.part, f.message, f.kind, f.span_start, f.span_end FROM pii_findings f
                   JOIN wanted_pairs USING (pair_id) ORDER BY f.pair_id, f.part, f.message, f.span_start""",
            ).to_arrow_table()

    def scanned_of(self, pair_ids: pa.Array | pa.ChunkedArray) -> int:
        """How many of these pairs the scan has read (under any rules)."""
        with self._registered("wanted_pairs", pa.table({"pair_id": pair_ids})):
            return self.con.execute("SELECT count(*) FROM pii_scans JOIN wanted_pairs USING (pair_id)").fetchall()[0][0]

    def texts_of(self, pair_ids: pa.Array | pa.ChunkedArray) -> pa.Table:
        """The texts of these pairs as ingested: (pair_id, history, response_a, response_b)."""
        with self._registered("wanted_pairs", pa.table({"pair_id": pair_ids})):
            return self.con.sql(
                """SELECT p.pair_id, p.history, p.response_a, p.response_b FROM candidate_pairs p
                   JOIN wanted_pairs USING (pair_id) ORDER BY p.pair_id""").to_arrow_table()

    def fingerprint(self) -> str:
        """What a version's redaction and drops are made of, for `version_inputs`: the findings stored, and the
        pairs still to scan under the current rules (`current_scan_rules`), and the detector models that scanned;
        empty when nothing was found, nothing is left to scan and no model ran (a warehouse without findings
        fingerprints as before the scan existed)."""
        if not self._migrated():
            return ""  # a warehouse opened read-only before migration 026: nothing scanned, nothing found
        found, unscanned, models = self.con.execute(
            "SELECT (SELECT count(*) FROM pii_findings), (SELECT count(*) FROM candidate_pairs p "
            "LEFT JOIN pii_scans s USING (pair_id) WHERE s.rules IS NULL OR s.rules <> ?), "
            "(SELECT string_agg(DISTINCT rules, ',' ORDER BY rules) FROM pii_scans WHERE rules LIKE '%+%')",
            [current_scan_rules()]).fetchall()[0]
        return ((f"/pii:{found}" if found else "") + (f"/pii-unscanned:{unscanned}" if unscanned else "")
                + (f"/pii-model:{models}" if models else ""))

    def model_scanned_of(self, pair_ids: pa.Array | pa.ChunkedArray) -> dict[str, int]:
        """Of these pairs, how many a detector model scanned, by the detector (the part of their rules after +)."""
        with self._registered("wanted_pairs", pa.table({"pair_id": pair_ids})):
            return dict(self.con.execute(
                "SELECT split_part(rules, '+', 2) AS model, count(*) FROM pii_scans JOIN wanted_pairs USING (pair_id) "
                "WHERE rules LIKE '%+%' GROUP BY model ORDER BY model").fetchall())

    def totals(self) -> dict:
        """For `curate status`: pairs scanned and not, each kind's findings and the pairs holding them, and the
        pairs each detector model scanned."""
        if not self._migrated():
            pairs = self.con.execute("SELECT count(*) FROM candidate_pairs").fetchall()[0][0]
            return {"pairs_scanned": 0, "pairs_not_scanned": pairs, "kinds": {}, "models": {}}
        scanned, pairs = self.con.execute(
            "SELECT (SELECT count(*) FROM pii_scans), (SELECT count(*) FROM candidate_pairs)").fetchall()[0]
        kinds = {kind: {"findings": n, "pairs": p} for kind, n, p in self.con.execute(
            "SELECT kind, count(*), count(DISTINCT pair_id) FROM pii_findings GROUP BY kind ORDER BY kind").fetchall()}
        models = dict(self.con.execute("SELECT split_part(rules, '+', 2) AS model, count(*) FROM pii_scans "
                                       "WHERE rules LIKE '%+%' GROUP BY model ORDER BY model").fetchall())
        return {"pairs_scanned": scanned, "pairs_not_scanned": max(0, pairs - scanned), "kinds": kinds,
                "models": models}

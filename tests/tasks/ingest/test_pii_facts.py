"""The scan as the warehouse stores it: one scan row per pair, each finding as pair, part, message, kind and span
(never the text), and the texts with chosen kinds replaced by their placeholders."""

from __future__ import annotations

from tasks.ingest.pii import RULES
from tasks.ingest.pii_facts import redacted_pair, scan_tables

HISTORY = [{"role": "user", "content": "mail jane.doe@gmail.com or call +1 415 555 2671"},
           {"role": "assistant", "content": "noted"},
           {"role": "user", "content": "my key is AKIAQ3EGRTWNX7ZP5KLM"}]


def test_each_finding_is_stored_as_its_part_message_kind_and_span() -> None:
    scans, findings = scan_tables(["p1", "p2"], [HISTORY, [{"role": "user", "content": "hello"}]],
                                  ["answer 8.8.8.8", "nothing"], ["nothing here", "fine"])
    assert scans.column("pair_id").to_pylist() == ["p1", "p2"] and set(scans.column("rules").to_pylist()) == {RULES}
    rows = findings.to_pylist()
    assert [(r["pair_id"], r["part"], r["message"], r["kind"]) for r in rows] == [
        ("p1", "history", 0, "email"), ("p1", "history", 0, "phone"), ("p1", "history", 2, "secret"),
        ("p1", "response_a", 0, "ip")]
    first = HISTORY[0]["content"]
    assert first[rows[0]["span_start"]:rows[0]["span_end"]] == "jane.doe@gmail.com"
    assert set(findings.column_names) == {"pair_id", "part", "message", "kind", "span_start", "span_end"}


def test_a_pair_is_redacted_for_the_chosen_kinds_only() -> None:
    _, findings = scan_tables(["p1"], [HISTORY], ["answer 8.8.8.8"], ["b"])
    spans = [(r["part"], r["message"], r["kind"], r["span_start"], r["span_end"]) for r in findings.to_pylist()]
    history, a, b = redacted_pair(HISTORY, "answer 8.8.8.8", "b", spans, {"email", "secret", "ip"})
    assert history[0]["content"] == "mail <EMAIL> or call +1 415 555 2671"  # phone not chosen: left
    assert history[1] == HISTORY[1] and history[2]["content"] == "my key is <SECRET>"
    assert (a, b) == ("answer <IP>", "b") and HISTORY[0]["content"].startswith("mail jane")  # the input unchanged

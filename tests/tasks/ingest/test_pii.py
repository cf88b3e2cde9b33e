"""The personal-data scan: each kind found where planted, look-alikes left alone, spans only."""

from __future__ import annotations

import base64

import pytest

from tasks.ingest.pii import redact, scan


def _kinds(text: str) -> list[str]:
    return [f.kind for f in scan(text)]


JWT = (base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
       + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")


@pytest.mark.parametrize(("text", "kind"), [
    ("mail jane.doe@gmail.com today", "email"),
    ("call +1 415 555 2671 now", "phone"),
    ("call (212) 736-5000 now", "phone"),
    ("card 4539 1488 0343 6467 exp", "card"),
    ("iban DE89 3704 0044 0532 0130 00 ok", "iban"),
    ("server at 8.8.8.8 down", "ip"),
    ("v6 2a00:1450:4001::8a reachable", "ip"),
    ("ssn 123-45-6789 here", "ssn"),
    ("cpf 390.533.447-05 here", "national_id"),
    ("my DNI is 12345678Z", "national_id"),
    ("NIE: X-1234567-L", "national_id"),
    ("codice fiscale RSSMRA85T10A562S", "national_id"),
    ("aadhaar 2345 6789 0124 on file", "national_id"),
    ("numéro de sécurité sociale 2 95 10 99 126 111 93", "national_id"),
    ("key AKIAIOSFODNN7EXAMPL3 set", "secret"),
    ("token ghp_" + "a" * 36 + " set", "secret"),
    ("sk-proj-" + "Ab1" * 10 + " here", "secret"),
    ("xoxb-123456789012-abcdefghijklmnop here", "secret"),
    ("token " + JWT, "secret"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----", "secret"),
])
def test_each_kind_is_found(text: str, kind: str) -> None:
    assert _kinds(text) == [kind]


@pytest.mark.parametrize("text", [
    "version 1.6.88 released", "order 9858210591 shipped", "on 2024-03-05", "write to someone@example.com",
    "test card 4242 4242 4242 4242", "host 192.168.1.20 and 10.0.0.1", "set the sk-short flag",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b", "ssn 000-12-3456", "DE00 0000 0000 0000 0000 00",
    "cpf 390.533.447-06 (check digits wrong)", "invoice 390.533.447 of 12", "aadhaar 2345 6789 0125",
    "ref 12345678-Z shipped",  # a DNI's form and letter, but nothing names it a DNI
    "DNI 12345678A",  # named, but its check letter is wrong
    "codice RSSMRA85T10A562X", "nir 2 95 10 99 126 111 94",
])
def test_look_alikes_are_not_findings(text: str) -> None:
    assert scan(text) == []


def test_a_password_in_a_url_is_the_password_only() -> None:
    text = "postgres://admin:s3cretPw@db.acme.io/app"
    (finding,) = scan(text)
    assert text[finding.start:finding.end] == "s3cretPw"
    assert redact(text, [finding]) == "postgres://admin:<SECRET>@db.acme.io/app"


def test_redact_replaces_each_span_by_its_placeholder() -> None:
    text = "mail jane.doe@gmail.com or call +44 20 7946 0958 from 8.8.4.4"
    assert redact(text, scan(text)) == "mail <EMAIL> or call <PHONE> from <IP>"


def test_a_batch_scan_finds_what_one_scan_a_text_finds_skipping_texts_with_nothing_to_start_from() -> None:
    from tasks.ingest.pii import scan_texts

    texts = ["plain prose without a digit", "mail jane.doe@gmail.com", "call +1 415 555 2671 now", "",
             "v6 2a00:1450:4001::8a", "key AKIAIOSFODNN7EXAMPL3", JWT, "postgres://bob:hunter2pass@db.acme.io/app",
             "card 4539 1488 0343 6467", "lone \ud800 surrogate and 8.8.8.8"]
    assert scan_texts(texts) == [scan(t) for t in texts]
    assert scan_texts(texts)[0] == [] and scan_texts(texts)[-1][0].kind == "ip"

"""Personal data and secrets in a text: where they are and of what kind, never what they say.

`scan(text)` returns findings as (kind, start, end) character spans, sorted and never overlapping; `redact(text,
findings)` replaces each span by its kind's placeholder (`<EMAIL>`, `<PHONE>`, ...). Each kind is a pattern
that proposes a candidate and a check that must accept it:

- email: an address whose domain has a dot and a known-length top-level label; the reserved example domains
  (example.com/.org/.net, *.example, *.test, *.invalid, localhost) are not findings.
- phone: libphonenumber's matcher (`phonenumbers`, leniency VALID), in international form or for the
  default regions `PHONE_REGIONS`.
- card: 13 to 19 digits (spaces or dashes between groups) passing Luhn with a known issuer prefix; the
  documented test numbers (`TEST_CARDS`) are not findings.
- iban: a country code, two check digits and the account, passing the mod 97 checksum.
- ip: an IPv4 or IPv6 address that is global (private, loopback, link-local, documentation ranges are not).
- ssn: a US social security number written ddd-dd-dddd obeying the SSA's rules (no 000/666/9xx area, no 00
  group, no 0000 serial).
- national_id: the national id numbers whose written form and checksum tell them from other numbers, each
  checked by `python-stdnum`: Brazil's CPF (ddd.ddd.ddd-dd), Spain's DNI and NIE (check letter; only after a
  word naming it, DNI, NIE, NIF or documento, within 40 characters before), Italy's codice
  fiscale (check character), India's Aadhaar (dddd dddd dddd, Verhoeff) and France's NIR (15 digits, key).
- secret: cloud keys (AKIA/ASIA), GitHub (ghp_, github_pat_), Slack (xoxb-/xoxp-), Google (AIza), OpenAI-style
  (sk-), GitLab (glpat-) tokens, PEM private key blocks, JWTs (three base64url parts, the first decoding to
  JSON with "alg") and passwords in URLs (scheme://user:pass@host: only the password is the finding).

`scan_texts(texts)` scans many texts at once: one RE2 pass over all of them (pyarrow) finds the texts holding
anything a kind could start from (two digits close together, an `@`, two colons, a secret's prefix, `://`), and
only those are scanned; most prose holds none of them.

Names and street addresses (`MODEL_KINDS`) are found only by a detector model, where one is configured
(`tasks.ingest.pii_detector`).
"""

from __future__ import annotations

import base64
import ipaddress
import re
from typing import NamedTuple

import numpy as np
import orjson
import phonenumbers
import pyarrow as pa
import pyarrow.compute as pc
from stdnum.br import cpf
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale

from warehouse.pii import PII_RULES as RULES  # noqa: F401  (re-exported: findings under other rules are scanned again)

KINDS: tuple[str, ...] = ("email", "phone", "card", "iban", "ip", "ssn", "national_id", "secret")
# found only by a detector model where one is configured (`tasks.ingest.pii_detector`)
MODEL_KINDS: tuple[str, ...] = ("name", "address")
ALL_KINDS: tuple[str, ...] = KINDS + MODEL_KINDS
PLACEHOLDERS: dict[str, str] = {"email": "<EMAIL>", "phone": "<PHONE>", "card": "<CARD>", "iban": "<IBAN>",
                                "ip": "<IP>", "ssn": "<SSN>", "national_id": "<NATIONAL_ID>", "secret": "<SECRET>",
                                "name": "<NAME>", "address": "<ADDRESS>"}
PHONE_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR")
# Card numbers the card networks and payment processors document as test numbers.
TEST_CARDS: frozenset[str] = frozenset({
    "4111111111111111", "4242424242424242", "4012888888881881", "4000056655665556", "5555555555554444",
    "5105105105105100", "2223003122003222", "378282246310005", "371449635398431", "6011111111111117",
    "6011000990139424", "3056930009020004", "36227206271667", "3566002020360505", "6200000000000005",
})
EXAMPLE_DOMAINS = re.compile(r"(^|\.)(example\.(com|org|net)|example|test|invalid|localhost|local)$", re.I)


class Finding(NamedTuple):
    kind: str
    start: int
    end: int


_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
                    r"[A-Za-z0-9])?\.)+[A-Za-z]{2,24})(?![\w-])")
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_IPV6 = re.compile(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])")
_SSN = re.compile(r"(?<![\d-])(\d{3})-(\d{2})-(\d{4})(?![\d-])")
_DNI_LETTERS = "[A-HJ-NP-TV-Z]"  # the letters a DNI or NIE ends in (never I, O, U, Ñ)
# (written form, the library's check): a form a number takes only as that id, so the checksum decides
_NATIONAL_IDS: tuple[tuple[re.Pattern[str], object], ...] = (
    (re.compile(r"(?<![\d.-])\d{3}\.\d{3}\.\d{3}-\d{2}(?![\d.-]|\.\d)"), cpf.is_valid),
    (re.compile(r"(?<![A-Za-z0-9])[A-Z]{6}\d{2}[ABCDEHLMPRST]\d{2}[A-Z]\d{3}[A-Z](?![A-Za-z0-9])"),
     codicefiscale.is_valid),
    (re.compile(r"(?<![\d-])(?<!\d )[2-9]\d{3} \d{4} \d{4}(?! ?\d)"), aadhaar.is_valid),
    (re.compile(r"(?<![\d-])(?<!\d )[12] ?\d{2} ?(?:0[1-9]|1[0-2]) ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}(?! ?\d)"),
     nir.is_valid),
)
# A DNI or NIE: its check letter alone (1 in 23) would take a product reference (12345678-K) for an id, so one
# counts only after a word naming it, within _NAMED_WITHIN characters before it.
_SPANISH_ID = re.compile(rf"(?<![A-Za-z0-9-])(?:\d{{8}}|[XYZ]-?\d{{7}})-?{_DNI_LETTERS}(?![A-Za-z0-9-])")
_SPANISH_ID_NAMED = re.compile(r"\b(?:DNI|NIE|NIF|D\.N\.I\.|documento)\b", re.I)
_NAMED_WITHIN = 40
_SECRETS = re.compile("|".join([
    r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])",
    r"(?<![A-Za-z0-9_])ghp_[A-Za-z0-9]{36}(?![A-Za-z0-9])",
    r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{40,}",
    r"(?<![A-Za-z0-9-])xox[bp]-[A-Za-z0-9-]{10,}",
    r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])",
    r"(?<![A-Za-z0-9-])sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",
    r"(?<![A-Za-z0-9-])glpat-[A-Za-z0-9_-]{20,}",
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
]))
_JWT = re.compile(r"(?<![A-Za-z0-9_-])(eyJ[A-Za-z0-9_-]{5,})\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}(?![A-Za-z0-9_-])")
_URL_PASSWORD = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^\s:/@]+:([^\s/@]+)@[A-Za-z0-9.-]+")
# A phone number as people write one: international (+), or grouped by spaces, dashes or brackets; a bare run of
# digits (an order id) or one grouped by dots (a version) is not taken for one.
_PHONE_WRITTEN = re.compile(r"^\+|[ ()-]")
# Cheap gates before libphonenumber runs: a run of 7+ digits with a separator, and a national trunk prefix (0)
# for the regions past the first (an international number is found from any region).
_PHONE_GATE = re.compile(r"\d[ ()-]{0,2}\d{2,}[ ()-]{1,2}\d{2,}[ ()-]?\d")
_PHONE_MARGIN = 24  # characters either side of a phone-like run: a number's longest written form fits
_NATIONAL_TRUNK = re.compile(r"(?<![\d.])\(?0\d")
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[068]|6(?:011|5|4[4-9]|22)|35|62)")


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban_ok(compact: str) -> bool:
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _global_ip(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return address.is_global and not address.is_multicast


def _jwt_ok(header: str) -> bool:
    try:
        decoded = orjson.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return False
    return isinstance(decoded, dict) and "alg" in decoded


_SECRET_PREFIXES = ("AKIA", "ASIA", "ghp_", "github_pat_", "xox", "AIza", "sk-", "glpat-", "PRIVATE KEY")
_DIGIT_PAIR = re.compile(r"\d[ .()-]{0,2}\d")


def _candidates(text: str) -> list[Finding]:
    found: list[Finding] = []
    # each kind only where its pattern could start (a substring test is far cheaper than a regex pass)
    if any(prefix in text for prefix in _SECRET_PREFIXES):
        for m in _SECRETS.finditer(text):
            found.append(Finding("secret", m.start(), m.end()))
    if "eyJ" in text:
        for m in _JWT.finditer(text):
            if _jwt_ok(m.group(1)):
                found.append(Finding("secret", m.start(), m.end()))
    if "://" in text:
        for m in _URL_PASSWORD.finditer(text):
            found.append(Finding("secret", m.start(1), m.end(1)))
    if "@" in text:
        for m in _EMAIL.finditer(text):
            if not EXAMPLE_DOMAINS.search(m.group(1)):
                found.append(Finding("email", m.start(), m.end()))
    if "::" in text or text.count(":") >= 5:
        for m in _IPV6.finditer(text):
            if m.group().count(":") >= 2 and _global_ip(m.group()):
                found.append(Finding("ip", m.start(), m.end()))
    if not _DIGIT_PAIR.search(text):
        return found
    for m in _IBAN.finditer(text):
        if _iban_ok(m.group().replace(" ", "")):
            found.append(Finding("iban", m.start(), m.end()))
    for m in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", m.group())
        if _luhn(digits) and _CARD_PREFIX.match(digits) and digits not in TEST_CARDS:
            found.append(Finding("card", m.start(), m.end()))
    for m in _SSN.finditer(text):
        area, group, serial = m.groups()
        if area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000":
            found.append(Finding("ssn", m.start(), m.end()))
    for pattern, valid in _NATIONAL_IDS:
        for m in pattern.finditer(text):
            if valid(m.group()):
                found.append(Finding("national_id", m.start(), m.end()))
    for m in _SPANISH_ID.finditer(text):
        if _SPANISH_ID_NAMED.search(text, max(0, m.start() - _NAMED_WITHIN), m.start()) and (
                dni.is_valid(m.group()) or nie.is_valid(m.group())):
            found.append(Finding("national_id", m.start(), m.end()))
    for m in _IPV4.finditer(text):
        if _global_ip(m.group()):
            found.append(Finding("ip", m.start(), m.end()))
    found.extend(_phones(text))
    return found


def _phone_windows(text: str) -> list[tuple[int, int]]:
    """The stretches of `text` around its phone-like runs (merged where they touch): libphonenumber reads these
    only, not the whole text."""
    windows: list[tuple[int, int]] = []
    for m in _PHONE_GATE.finditer(text):
        start, end = max(0, m.start() - _PHONE_MARGIN), min(len(text), m.end() + _PHONE_MARGIN)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    return windows


def _phones(text: str) -> list[Finding]:
    found: dict[tuple[int, int], Finding] = {}
    for start, end in _phone_windows(text):
        window = text[start:end]
        regions = PHONE_REGIONS if _NATIONAL_TRUNK.search(window) else PHONE_REGIONS[:1]
        for region in regions:
            for m in phonenumbers.PhoneNumberMatcher(window, region, leniency=phonenumbers.Leniency.VALID):
                if _PHONE_WRITTEN.search(m.raw_string):
                    found[(start + m.start, start + m.end)] = Finding("phone", start + m.start, start + m.end)
    return list(found.values())


# A span claimed by an earlier kind here wins an overlap: a secret over anything, a card over a phone.
# A national id's checksum (1 in 97 for a NIR) is stronger evidence than a card's Luhn (1 in 10).
_PRIORITY = {kind: i for i, kind in enumerate(("secret", "email", "iban", "national_id", "card", "ssn", "ip",
                                                "phone"))}


def scan(text: str) -> list[Finding]:
    """The findings of `text`, sorted by start, none overlapping another."""
    if not text:
        return []
    kept: list[Finding] = []
    for f in sorted(_candidates(text), key=lambda f: (_PRIORITY[f.kind], f.start, -f.end)):
        if all(f.end <= k.start or f.start >= k.end for k in kept):
            kept.append(f)
    return sorted(kept, key=lambda f: f.start)


# What any kind's pattern starts from: a text without any of these holds no finding. Two digits at most two
# separators apart (phone, card, IBAN, SSN, IPv4), an `@` (e-mail), two colons a hex group apart (IPv6), a
# secret's fixed prefix, a JWT's header, `://` (a password in a URL).
_GATE = (r"\d[ .()-]{0,2}\d|@|:[0-9A-Fa-f]{0,4}:|AKIA|ASIA|ghp_|github_pat_|xox[bp]-|AIza|sk-|glpat-|PRIVATE KEY|"
         r"eyJ|://")


def gated(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Per text of an Arrow string array, whether it holds anything a kind starts from (one RE2 pass; a null
    holds nothing): the only texts `scan` can find anything in."""
    return pc.fill_null(pc.match_substring_regex(texts, _GATE), False).to_numpy(zero_copy_only=False)


def scan_texts(texts: list[str]) -> list[list[Finding]]:
    """`scan` of each text, the texts with nothing a kind starts from left out at once (`gated`)."""
    try:
        hits = gated(pa.array(texts, pa.string()))
    except (pa.ArrowException, UnicodeError):  # a text Arrow cannot hold (a lone surrogate): scan each
        hits = np.ones(len(texts), bool)
    return [scan(text) if hit else [] for text, hit in zip(texts, hits, strict=True)]


def redact(text: str, findings: list[Finding]) -> str:
    """`text` with each finding's span replaced by its kind's placeholder."""
    out: list[str] = []
    at = 0
    for f in sorted(findings, key=lambda f: f.start):
        out.append(text[at:f.start])
        out.append(PLACEHOLDERS[f.kind])
        at = f.end
    out.append(text[at:])
    return "".join(out)

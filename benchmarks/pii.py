"""The personal-data scan (tasks/ingest/pii.py), measured on a generated corpus.

Each conversation (a prompt and two answers) plants findings of every kind in realistic contexts (prose, code
blocks, a number split across a line break inside a code block, config files) beside look-alikes that are not
findings (version numbers, order ids, dates, commit hashes, example.com addresses, documented test card
numbers, private IPs, UUIDs, a `sk-` that is too short). Prints per kind precision and recall (a finding counts
as found when a scan span of its kind covers it), and the scan's cost per 1,000 pairs beside a baseline in
the same process: the ingest's text normalization plus a sha256 of the same texts.

Run: `python benchmarks/pii.py [--pairs 2000] [--seed 0]`.
Targets: recall >= 0.99 on email, card, iban and key formats, >= 0.95 on phones and generic secrets;
precision >= 0.95 each.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import random
import re
import string
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.ingest.normalize import normalize_text
from tasks.ingest.pii import KINDS, scan_texts

WORDS = ("the deploy failed again after we bumped the config so I am pasting what I have here please take a "
         "look and tell me what is wrong with it thanks in advance").split()


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    for check in string.digits:
        digits = body + check
        total = 0
        for i, c in enumerate(reversed(digits)):
            d = int(c)
            if i % 2:
                d = d * 2 - 9 if d > 4 else d * 2
            total += d
        if total % 10 == 0:
            return digits
    raise AssertionError


def _iban(rng: random.Random) -> str:
    country, length = rng.choice((("DE", 18), ("GB", 18), ("FR", 23), ("NL", 14), ("ES", 20)))
    if country in ("GB", "NL"):
        bban = "".join(rng.choice(string.ascii_uppercase) for _ in range(4)) + "".join(
            rng.choice(string.digits) for _ in range(length - 4))
    else:
        bban = "".join(rng.choice(string.digits) for _ in range(length))
    moved = bban + country + "00"
    check = 98 - int("".join(str(int(c, 36)) for c in moved)) % 97
    iban = f"{country}{check:02d}{bban}"
    if rng.random() < 0.5:
        iban = " ".join(iban[i:i + 4] for i in range(0, len(iban), 4))
    return iban


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits


def _planted(kind: str, rng: random.Random) -> str:
    if kind == "email":
        user = rng.choice(("jane.doe", "m.keller", "ops-team", "a_nguyen+billing", "r2d2"))
        return f"{user}{rng.randint(1, 999)}@{rng.choice(('gmail.com', 'acme-corp.de', 'mail.uni-bonn.de', 'proton.me'))}"
    if kind == "phone":
        return rng.choice((
            f"+1 415 {rng.randint(200, 999)} {rng.randint(1000, 9999)}",
            f"(212) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
            f"+44 20 7946 {rng.randint(1000, 9999)}",
            f"+49 30 {rng.randint(2000000, 8999999)}",
            f"+33 1 {rng.randint(40, 49)} {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)}",
        ))
    if kind == "card":
        number = rng.choice((_luhn_complete("4", 16, rng), _luhn_complete(str(rng.randint(51, 55)), 16, rng),
                             _luhn_complete(rng.choice(("34", "37")), 15, rng)))
        if rng.random() < 0.5 and len(number) == 16:
            number = " ".join(number[i:i + 4] for i in range(0, 16, 4))
        return number
    if kind == "iban":
        return _iban(rng)
    if kind == "ip":
        if rng.random() < 0.7:
            return f"{rng.randint(11, 99)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        return f"2a00:{rng.randint(0x1000, 0xffff):x}:{rng.randint(0x100, 0xfff):x}::{rng.randint(1, 0xff):x}"
    if kind == "ssn":
        return f"{rng.randint(100, 665)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}"
    # secret: one of each format in turn
    form = rng.randrange(10)
    if form == 0:
        return rng.choice(("AKIA", "ASIA")) + _rand(rng, string.ascii_uppercase + string.digits, 16)
    if form == 1:
        return "ghp_" + _rand(rng, ALNUM, 36)
    if form == 2:
        return "github_pat_" + _rand(rng, ALNUM + "_", 82)
    if form == 3:
        return rng.choice(("xoxb-", "xoxp-")) + f"{rng.randint(10**11, 10**12)}-{_rand(rng, ALNUM, 24)}"
    if form == 4:
        return "AIza" + _rand(rng, ALNUM + "_-", 35)
    if form == 5:
        return "sk-" + rng.choice(("", "proj-")) + _rand(rng, ALNUM, 48)
    if form == 6:
        return "glpat-" + _rand(rng, ALNUM + "_-", 20)
    if form == 7:
        body = "\n".join(_rand(rng, ALNUM + "+/", 64) for _ in range(4))
        label = rng.choice(("RSA ", "EC ", "OPENSSH ", ""))
        return f"-----BEGIN {label}PRIVATE KEY-----\n{body}\n-----END {label}PRIVATE KEY-----"
    if form == 8:
        header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
        return f"{header}.{_b64url(_rand(rng, ALNUM, 40).encode())}.{_b64url(rng.randbytes(32))}"
    return "PASSWORD_IN_URL"  # handled by the context: only the password is the finding


def _national_id(rng: random.Random) -> tuple[str, str]:
    """(the words naming it, a valid id of one of the formats scanned), its check digits computed as python-stdnum
    does; only a Spanish id is named (the scan needs the name before it), the others stand alone."""
    from stdnum import verhoeff
    from stdnum.br import cpf
    from stdnum.es import dni, nie
    from stdnum.fr import nir
    from stdnum.it import codicefiscale

    form = rng.randrange(6)
    if form == 0:
        base = f"{rng.randint(100000000, 999999999)}"
        n = base
        for weight in (10, 11):  # the CPF's two mod-11 check digits (stdnum keeps its own private)
            n += str(sum((weight - i) * int(d) for i, d in enumerate(n)) * 10 % 11 % 10)
        assert cpf.is_valid(n)
        return "", f"{n[:3]}.{n[3:6]}.{n[6:9]}-{n[9:]}"
    if form == 1:
        base = f"{rng.randint(10000000, 99999999)}"
        return rng.choice(("my DNI is ", "DNI: ", "NIF ")), base + rng.choice(("", "-")) + dni.calc_check_digit(base)
    if form == 2:
        base = rng.choice("XYZ") + f"{rng.randint(1000000, 9999999)}"
        return rng.choice(("NIE ", "documento: ")), base + nie.calc_check_digit(base)
    if form == 3:
        letters = string.ascii_uppercase
        base = (_rand(rng, letters, 6) + f"{rng.randint(40, 99)}" + rng.choice("ABCDEHLMPRST")
                + f"{rng.randint(1, 28) + rng.choice((0, 40)):02d}" + rng.choice(letters) + f"{rng.randint(100, 999)}")
        return "", base + codicefiscale.calc_check_digit(base)
    if form == 4:
        base = f"{rng.randint(2, 9)}{rng.randint(0, 10**10 - 1):010d}"
        n = base + verhoeff.calc_check_digit(base)
        return "", f"{n[:4]} {n[4:8]} {n[8:]}"
    base = (f"{rng.randint(1, 2)}{rng.randint(40, 99)}{rng.randint(1, 12):02d}{rng.randint(1, 95):02d}"
            f"{rng.randint(1, 990):03d}{rng.randint(1, 999):03d}")
    n = base + nir.calc_check_digits(base)
    return "", n if rng.random() < 0.5 else f"{n[0]} {n[1:3]} {n[3:5]} {n[5:7]} {n[7:10]} {n[10:13]} {n[13:]}"


def _lookalikes(rng: random.Random) -> list[str]:
    return [
        f"version {rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 99)}",
        f"order id {rng.randint(10**9, 10**10)}",
        f"on {rng.randint(2001, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        f"commit {rng.randbytes(20).hex()}",
        "write to someone@example.com",
        f"use the test card {rng.choice(('4242 4242 4242 4242', '4111111111111111', '5555555555554444'))}",
        f"the host is 192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)} or 10.0.0.{rng.randint(1, 254)}",
        f"uuid {rng.randbytes(4).hex()}-{rng.randbytes(2).hex()}-{rng.randbytes(2).hex()}-{rng.randbytes(2).hex()}",
        "set the sk-short flag",
        f"ticket #{rng.randint(100000, 999999)} at 12:30:45",
        f"git sha {rng.randbytes(6).hex()}, build 1.{rng.randint(0, 99)}.{rng.randint(0, 999)}.{rng.randint(0, 9999)}",
        f"invoice {rng.randint(100, 999)}.{rng.randint(100, 999)}.{rng.randint(100, 999)} of {rng.randint(10, 99)} items",
        f"part {rng.randint(10000000, 99999999)} in stock",
        f"ref {rng.randint(10000000, 99999999)}-{rng.choice(string.ascii_uppercase)} shipped",
        f"at {rng.randint(1_500_000_000_000, 1_900_000_000_000)} ms since the epoch",
    ]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _conversation(rng: random.Random) -> tuple[list[str], list[tuple[int, str, int, int]]]:
    """Three texts and the planted findings (text index, kind, start, end)."""
    texts = ["", "", ""]
    planted: list[tuple[int, str, int, int]] = []
    kinds = rng.sample(KINDS, rng.randint(1, 3))
    for kind in kinds:
        part = rng.randrange(3)
        named, value = _national_id(rng) if kind == "national_id" else ("", _planted(kind, rng))
        ctx = rng.randrange(4)
        prefix = texts[part] + _sentence(rng, rng.randint(3, 12)) + " "
        if value == "PASSWORD_IN_URL":
            password = _rand(rng, ALNUM, rng.randint(8, 16))
            head = f"{rng.choice(('postgres', 'https', 'redis', 'mysql'))}://{rng.choice(('admin', 'svc', 'bob'))}:"
            prefix += "```\nDATABASE_URL=" + head
            start = len(prefix)
            texts[part] = prefix + password + f"@db{rng.randint(1, 9)}.internal.acme.io:5432/app\n```\n"
            planted.append((part, kind, start, start + len(password)))
            continue
        if ctx == 0:
            prefix += "```\n" + rng.choice(("export KEY=", "config = {'value': '", "curl -H 'X: ", ""))
            suffix = "'\n```\n" if "'" in prefix[-20:] else "\n```\n"
        elif ctx == 1:
            prefix += "(" + rng.choice(("reach me at ", "mine is ", "it says ", ""))
            suffix = "), " + _sentence(rng, 4) + "\n"
        elif ctx == 2:
            prefix += rng.choice(("Contact: ", "value: ", "> ", ""))
            suffix = "\n"
        else:
            prefix += '{"field": "'
            suffix = '"}\n'
        prefix += named
        start = len(prefix)
        texts[part] = prefix + value + suffix
        planted.append((part, kind, start, start + len(value)))
    for part in range(3):
        for look in rng.sample(_lookalikes(rng), 3):
            texts[part] += _sentence(rng, rng.randint(2, 8)) + " " + look + ". "
    return texts, planted


# the regex a phone scan would use without libphonenumber, measured beside it on the same corpus
PHONE_REGEX = re.compile(r"(?<![\w.])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)|\d{2,4})(?:[ .-]?\d{2,4}){2,4}(?![\w.])")


def _phone_regex_scores(corpus, scans) -> tuple[int, int, int]:
    """(found, false, planted) of PHONE_REGEX over the corpus, the other kinds' findings not counted against it."""
    found = false = planted_n = 0
    for (texts, planted), spans in zip(corpus, scans, strict=True):
        phones = [(part, start, end) for part, kind, start, end in planted if kind == "phone"]
        planted_n += len(phones)
        for part, text in enumerate(texts):
            others = [(f.start, f.end) for f in spans[part] if f.kind != "phone"]
            for m in PHONE_REGEX.finditer(text):
                if any(p == part and m.start() <= s and m.end() >= e for p, s, e in phones):
                    found += 1
                elif not any(m.start() < e and m.end() > s for s, e in others):
                    false += 1
    return found, false, planted_n


# detect-secrets' plugins for the formats the scan looks for (Google's AIza keys have none); `high_entropy_strings`
# and `keyword` are left out: they flag any random-looking string or any assignment to a word like "password"
DETECT_SECRETS_PLUGINS = ("aws:AWSKeyDetector", "github_token:GitHubTokenDetector", "gitlab_token:GitLabTokenDetector",
                          "slack:SlackDetector", "private_key:PrivateKeyDetector", "jwt:JwtTokenDetector",
                          "basic_auth:BasicAuthDetector", "openai:OpenAIDetector")


def _detect_secrets_scores(corpus) -> tuple[int, int, int, int] | None:
    """(fully covered, touched, false, planted) of detect-secrets (Yelp's library) over the corpus' secrets, line by
    line as it scans files: a planted secret is covered when one of its matches spans all of it (what redaction
    needs), touched when a match overlaps it at all. None when the library is not installed."""
    import importlib

    try:
        plugins = [getattr(importlib.import_module(f"detect_secrets.plugins.{m}"), c)()
                   for m, c in (p.split(":") for p in DETECT_SECRETS_PLUGINS)]
    except ImportError:
        return None
    covered = touched = false = planted_n = 0
    for texts, planted in corpus:
        secrets = [(part, start, end) for part, kind, start, end in planted if kind == "secret"]
        planted_n += len(secrets)
        spans: list[tuple[int, int, int]] = []
        for part, text in enumerate(texts):
            at = 0
            for line in text.split("\n"):
                for plugin in plugins:
                    for value in set(plugin.analyze_string(line)):
                        i = line.find(value)
                        while i >= 0:
                            spans.append((part, at + i, at + i + len(value)))
                            i = line.find(value, i + 1)
                at += len(line) + 1
        for p, s0, e0 in secrets:
            hits = [(s, e) for q, s, e in spans if q == p and s < e0 and e > s0]
            touched += bool(hits)
            covered += any(s <= s0 and e >= e0 for s, e in hits)
        false += sum(1 for q, s, e in spans if not any(q == p and s < e0 and e > s0 for p, s0, e0 in secrets))
    return covered, touched, false, planted_n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-v", action="store_true", help="print each false finding")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    corpus = [_conversation(rng) for _ in range(args.pairs)]

    tp = dict.fromkeys(KINDS, 0)
    fn = dict.fromkeys(KINDS, 0)
    fp = dict.fromkeys(KINDS, 0)
    t0 = time.perf_counter()
    flat = scan_texts([text for texts, _ in corpus for text in texts])  # as the ingest scans a batch
    scan_seconds = time.perf_counter() - t0
    scans = [flat[3 * i:3 * i + 3] for i in range(len(corpus))]
    t0 = time.perf_counter()
    for texts, _ in corpus:
        for text in texts:
            hashlib.sha256(normalize_text(text).encode()).hexdigest()
    base_seconds = time.perf_counter() - t0

    for (texts, planted), found in zip(corpus, scans, strict=True):
        matched: set[tuple[int, int]] = set()
        for part, kind, start, end in planted:
            hit = [i for i, f in enumerate(found[part]) if f.kind == kind and f.start <= start and f.end >= end]
            if hit:
                tp[kind] += 1
                matched.update((part, i) for i in hit)
            else:
                fn[kind] += 1
                if args.v:
                    print("FN", kind, repr(texts[part][max(0, start - 20):end + 20]))
        for part, spans in enumerate(found):
            for i, f in enumerate(spans):
                if (part, i) not in matched:
                    fp[f.kind] += 1
                    if args.v:
                        print("FP", f.kind, repr(texts[part][f.start:f.end]))
    print(f"{args.pairs} pairs, seed {args.seed}")
    print(f"{'kind':11} {'planted':>8} {'found':>6} {'false':>6} {'precision':>10} {'recall':>7}")
    for kind in KINDS:
        planted_n = tp[kind] + fn[kind]
        precision = tp[kind] / (tp[kind] + fp[kind]) if tp[kind] + fp[kind] else float("nan")
        recall = tp[kind] / planted_n if planted_n else float("nan")
        print(f"{kind:11} {planted_n:8d} {tp[kind]:6d} {fp[kind]:6d} {precision:10.3f} {recall:7.3f}")
    found, false, planted_n = _phone_regex_scores(corpus, scans)
    print(f"{'phone re':11} {planted_n:8d} {found:6d} {false:6d} {found / max(1, found + false):10.3f} "
          f"{found / max(1, planted_n):7.3f}   (a plain regex, for comparison; not used)")
    compared = _detect_secrets_scores(corpus)
    if compared is None:
        print("detect-secrets is not installed: its comparison is not printed (pip install detect-secrets)")
    else:
        covered, touched, false, planted_n = compared
        print(f"{'secret ds':11} {planted_n:8d} {covered:6d} {false:6d} {covered / max(1, covered + false):10.3f} "
              f"{covered / max(1, planted_n):7.3f}   (detect-secrets {len(DETECT_SECRETS_PLUGINS)} plugins, for "
              f"comparison; not used: {touched} touched, {covered} covered whole)")
    per_k = 1000 / args.pairs
    print(f"scan: {scan_seconds * per_k:.3f} s per 1,000 pairs; baseline (normalize + sha256 of the same texts): "
          f"{base_seconds * per_k:.3f} s per 1,000 pairs")


if __name__ == "__main__":
    main()

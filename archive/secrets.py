"""Secrets: find them while ingesting, mask them on the way out, forget them on request.

Invariants:

* **A maintained rule set.** Detection is Yelp's ``detect-secrets`` (its plugins: AWS,
  GitHub, GitLab, Slack, Stripe, OpenAI, JWT, private keys, basic-auth URLs, keywords,
  high-entropy strings ...; its heuristic filters), plus the few AI-vendor key formats it
  lacks (``VENDOR_RULES``: one table). ``RULES_VERSION`` changes with either, and
  ``rescan`` derives every finding again.
* **Never the value.** ``secret_findings`` holds the rule, where (thread, message, block,
  the scanned field, a character span inside it) and the sha256 of the value. The value is
  read back from the archive through the span when something must be masked.
* **Scanned once, incrementally.** ``scan_new`` scans the blocks (and text blobs: companion
  files) above a watermark, like the full-text index; ingest, rebuild and the store call it
  before they commit, so findings commit with the rows they describe.
* **The archive is untouched by masking.** ``Redactor`` replaces known values (and their
  JSON-escaped form) in text or bytes on the way out (emit, show, search, restore, serve,
  push) with ``[REDACTED <rule>]``; only ``forget`` (archive/forget.py) changes stored bytes.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import orjson
from detect_secrets.filters import heuristic
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import (
    Base64HighEntropyString,
    HexHighEntropyString,
)
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from .vendors.base import file_chunks

# Bump when VENDOR_RULES, the plugin list, their settings or the span rules change:
# ``sesh-archive secrets --rescan`` then derives every finding again.
RULES_VERSION = 1

# AI-vendor keys detect-secrets 1.5 has no plugin for (its OpenAI plugin knows only keys
# carrying the ``T3BlbkFJ`` marker). Formats from the vendors' documentation; a rule named
# here wins over a detect-secrets finding on the same characters.
VENDOR_RULES: tuple[tuple[str, str], ...] = (
    ("anthropic-api-key", r"\bsk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{32,}"),
    ("openai-api-key", r"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{32,}"),
    ("openai-api-key", r"\bsk-[A-Za-z0-9]{48}\b"),  # legacy user keys
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{34,40}\b"),
    ("groq-api-key", r"\bgsk_[A-Za-z0-9]{52}\b"),
    ("xai-api-key", r"\bxai-[A-Za-z0-9]{80}\b"),
    ("perplexity-api-key", r"\bpplx-[A-Za-z0-9]{48}\b"),
    ("replicate-api-token", r"\br8_[A-Za-z0-9]{37}\b"),
    ("github-fine-grained-token", r"\bgithub_pat_[A-Za-z0-9_]{82}\b"),
)

# detect-secrets' plugins, with its default settings (``detect-secrets scan``'s defaults:
# base64 entropy above 4.5, hex above 3.0). IPPublicDetector is left out: an IP address is
# not a credential, and coding sessions are full of them.
_PLUGINS = (
    ArtifactoryDetector(), AWSKeyDetector(), AzureStorageKeyDetector(), BasicAuthDetector(),
    CloudantDetector(), DiscordBotTokenDetector(), GitHubTokenDetector(), GitLabTokenDetector(),
    IbmCloudIamDetector(), IbmCosHmacDetector(), JwtTokenDetector(), MailchimpDetector(), NpmDetector(),
    OpenAIDetector(), PrivateKeyDetector(), PypiTokenDetector(), SendGridDetector(), SlackDetector(),
    SoftlayerDetector(), SquareOAuthDetector(), StripeDetector(), TelegramBotTokenDetector(), TwilioKeyDetector(),
)  # fmt: skip
_KEYWORD = KeywordDetector()
_ENTROPY = (Base64HighEntropyString(limit=4.5), HexHighEntropyString(limit=3.0))
# High-entropy findings only for quoted strings at least this long, and never a bare
# 40- or 64-digit hex string: git commits and sha256 digests fill coding sessions.
MIN_ENTROPY_LENGTH = 20
_DIGEST = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64}|[0-9A-F]{40}|[0-9A-F]{64})")

# rule priority when two findings overlap: vendor rules, then the specific plugins, then
# keywords, then entropy
_PRIORITY = {"keyword": 2, "entropy": 3}


def rule_name(secret_type: str) -> str:
    """detect-secrets' ``secret_type`` as a rule name: ``AWS Access Key`` -> ``aws-access-key``."""
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


_VENDOR = [(name, re.compile(rx)) for name, rx in VENDOR_RULES]
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-.+/=]*")
_PRIVATE_END = re.compile(r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----")

# The reference scan runs every plugin on every line (``find_reference``, which the tests
# compare with ``find``). ``find`` is the same scan made cheap enough for ingest: a rule
# family runs only on the lines holding a literal (or a shape) that every match of it must
# contain, found for a whole batch of blocks at once (one Aho-Corasick pass, a few regexes
# that open with a literal), and the line-based plugins (keywords, entropy) only on the
# lines holding a keyword in an assignment shape or a quoted string long enough. Measured
# on the 100 MB corpus in docs/benchmarks.md.
# the entropy plugins look only inside quotes, at strings of their charsets (base64, hex)
_QUOTED = r"""["'][A-Za-z0-9+/=_\-]{%d,}["']""" % MIN_ENTROPY_LENGTH
_QUOTED_RX = re.compile(_QUOTED)
# the same strings found twice, once per opening quote: a pattern opening with a literal
# character lets the regex engine skip ahead in C (0.4 s instead of 1.5 s on the corpus's
# 46 M characters); the lines holding a match are the same (no match crosses a line)
_QUOTED_BY_OPENING = [re.compile(q + _QUOTED[4:]) for q in "\"'"]
# per plugin: literals one of which every match of its patterns contains ("~": in the
# lower-cased text, and every literal of a plugin whose patterns ignore case is looked for
# there; None: keyword-gated, below; ALL: no literal, ``_SHAPES`` below)
ALL = ("*",)
_GATES: dict[type, tuple[str, ...] | None] = {
    ArtifactoryDetector: ALL,
    AWSKeyDetector: ("AKIA", "ASIA", "ABIA", "ACCA", "A3T", "~aws"),
    AzureStorageKeyDetector: ("AccountKey",),
    BasicAuthDetector: ("://",),
    CloudantDetector: None,  # keyword-gated below
    # a bot token has no literal of its own: detect-secrets runs its pattern on every line,
    # and so do we, on the lines holding its shape (_SHAPES)
    DiscordBotTokenDetector: ALL,
    GitHubTokenDetector: ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    GitLabTokenDetector: ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-", "glimt-", "glptt-",
                          "glagent-", "gloas-"),  # fmt: skip
    IbmCloudIamDetector: None,
    IbmCosHmacDetector: None,
    JwtTokenDetector: ("eyJ",),
    MailchimpDetector: ("-us",),
    NpmDetector: ("_authToken",),
    OpenAIDetector: ("T3BlbkFJ",),
    PrivateKeyDetector: ("PRIVATE KEY", "PuTTY-User-Key"),
    PypiTokenDetector: ("pypi-",),
    SendGridDetector: ("SG.",),
    SlackDetector: ("xox", "hooks.slack.com"),
    SoftlayerDetector: None,
    SquareOAuthDetector: ("sq0",),
    StripeDetector: ("k_live_",),
    TelegramBotTokenDetector: ALL,
    TwilioKeyDetector: ALL,
}
# For a plugin without a literal of its own, or whose literals are common two-letter
# prefixes (AC, SK, AP: inside "ACTION", "ASK", "APPLY" once lower-cased): patterns every
# match of its own contains that open with literal characters (the regex engine then skips
# to them in C); the lines holding one get the plugin's patterns. Measured on the 100 MB
# corpus's 46 M characters: Discord's own pattern over everything 0.4-2 s (it opens with
# [MNO] and backtracks through every base64 run), its shape 0.07 s; Telegram's 1.2 s, its
# shape 0.06 s.
_SHAPES: dict[type, tuple[re.Pattern[str], ...]] = {
    DiscordBotTokenDetector: (re.compile(r"\.[a-zA-Z0-9_-]{6}\."),),  # ...{23,25}.XXXXXX.{27}
    TelegramBotTokenDetector: (re.compile(r":[0-9A-Za-z_-]{35}"),),  # \d{8,10}:{35}
    TwilioKeyDetector: (re.compile(r"AC[a-z0-9]{32}"), re.compile(r"SK[a-z0-9]{32}")),
    ArtifactoryDetector: (re.compile(r"AKC[a-zA-Z0-9]{10}"), re.compile(r"AP[0-9A-F][a-zA-Z0-9]{8}")),
}
# assignment-style patterns (a keyword, then a value): run on keyword lines only
_ASSIGNMENT = (CloudantDetector, IbmCloudIamDetector, IbmCosHmacDetector, SoftlayerDetector)
_VENDOR_GATES = {
    "anthropic-api-key": ("sk-ant-",), "openai-api-key": ("sk-",), "google-api-key": ("AIza",),
    "huggingface-token": ("hf_",), "groq-api-key": ("gsk_",), "xai-api-key": ("xai-",),
    "perplexity-api-key": ("pplx-",), "replicate-api-token": ("r8_",), "github-fine-grained-token": ("github_pat_",),
}  # fmt: skip


_ASSIGN_PLUGINS = [(rule_name(p.secret_type), p) for p in _PLUGINS if isinstance(p, _ASSIGNMENT)]
# The IBM, Cloudant and SoftLayer assignment patterns run on lines naming their service:
# their service prefix may be empty, which makes them match any ``key = <40-odd
# characters>`` (and cost a regex with look-behinds per line holding "key" or "token").
_SERVICE_WORDS = ("ibm", "iam", "cos_", "cos-", "hmac", "cloudant", "clou", "cl_", "cl-", "softlayer", "sl_", "sl-")


def _gate(plugin: Any) -> tuple[str, ...]:
    """A plugin's gate literals, looked for in the lower-cased text when one of its
    patterns ignores case (Slack's ``XOXB-...`` is a finding to detect-secrets too)."""
    gate = _GATES[type(plugin)] or ()
    if gate != ALL and any(rx.flags & re.IGNORECASE for rx in plugin.denylist):
        gate = tuple(dict.fromkeys(lit if lit.startswith("~") else "~" + lit.lower() for lit in gate))
    return gate


# (rule, priority, plugin or None, gate literals, patterns over the whole text)
_WHOLE: list[tuple[str, int, Any, tuple[str, ...], list[re.Pattern[str]]]] = [
    (name, 0, None, _VENDOR_GATES[name], [rx]) for name, rx in _VENDOR
] + [
    (rule_name(p.secret_type), 1, p, _gate(p), list(p.denylist))
    for p in _PLUGINS if type(p) not in _ASSIGNMENT
]  # fmt: skip


@dataclass(frozen=True)
class Hit:
    rule: str
    start: int  # character offsets in the scanned text
    end: int
    priority: int = 1


def _filtered(secret: str, line: str, plugin: Any) -> bool:
    """detect-secrets' heuristic filters (its defaults for an ad-hoc scan)."""
    return (
        heuristic.is_sequential_string(secret)
        or heuristic.is_potential_uuid(secret)
        or heuristic.is_likely_id_string(secret, line, plugin)
        or heuristic.is_templated_secret(secret)
        or heuristic.is_prefixed_with_dollar_sign(secret)
        or heuristic.is_indirect_reference(line)
        or heuristic.is_not_alphanumeric_string(secret)
    )


def _occurrences(line: str, value: str) -> Iterator[int]:
    i = line.find(value)
    while i >= 0:
        yield i
        i = line.find(value, i + 1)


def _regex_hit(rule: str, prio: int, plugin: Any, rx: re.Pattern[str], m: re.Match[str], text: str) -> Hit | None:
    """A regex match as a finding, or None when detect-secrets' filters drop it. ``text``
    is the line, or the whole text (the line around the match is then cut out for the
    filters, which look at the line)."""
    # the capture group is the value when it is one (an AWS secret in quotes, a basic-auth
    # password); GitHub's group is only the prefix (ghp|gho|...)
    g = 1 if rx.groups and m.group(1) and len(m.group(1)) >= 8 else 0
    if plugin is None or isinstance(plugin, PrivateKeyDetector):
        return Hit(rule, m.start(g), m.end(g), prio)
    value, end = m.group(g), m.end(g)
    if isinstance(plugin, JwtTokenDetector):  # its pattern ends lazily, before the signature
        end += len(_TOKEN_TAIL.match(text, end).group(0))
    lo = max(text.rfind("\n", 0, m.start()) + 1, m.start() - WINDOW)
    hi = text.find("\n", m.end())
    hi = min(len(text) if hi < 0 else hi, m.end() + WINDOW)
    return None if _filtered(value, text[lo:hi], plugin) else Hit(rule, m.start(g), end, prio)


# A line longer than LONG_LINE characters (a minified file, a base64 image in a tool
# output) is read by the line-based plugins in windows of WINDOW characters around each
# candidate (a keyword, a quoted string), and the filters see WINDOW characters around a
# match: the keyword and filter regexes cost time in the length of the whole line.
LONG_LINE = 4000
WINDOW = 400
_KW_RX = re.compile("|".join(re.escape(w) for w in ("key", "pass", "pwd", "secret", "contrase", "token") ), re.IGNORECASE)


def _line_plugins(line: str, assignment: bool = True, keyword: bool = True, entropy: bool = True) -> list[Hit]:
    if len(line) > LONG_LINE:
        spans = []
        if keyword or assignment:
            spans += [(m.start(), m.end()) for m in _KW_RX.finditer(line)]
        if entropy:
            spans += [(m.start(), m.end()) for m in _QUOTED_RX.finditer(line)]
        out: list[Hit] = []
        for a, b in sorted(spans):
            lo, hi = max(0, a - WINDOW), min(len(line), b + WINDOW)
            out += [Hit(h.rule, h.start + lo, h.end + lo, h.priority)
                    for h in _line_plugins_on(line[lo:hi], assignment, keyword, entropy)]  # fmt: skip
        return out
    return _line_plugins_on(line, assignment, keyword, entropy)


# The keyword detector's patterns for a session's text (detect-secrets' "quotes required"
# set, for a file type it does not know) each need a quote on the line, and: after a keyword,
# its \w* suffix, up to two closing characters and spaces, one of ``: = !`` (its COLON,
# EQUAL_SIGNS and ARROW patterns); or two of ``!=`` in a row (PRECEDED_BY_EQUAL_COMPARISON);
# or a ``;`` (QUOTES_AND_SEMICOLON). A line without any of these cannot match, and costs
# no run of its five case-insensitive patterns (2.5 s of the scan's 6 s on the 100 MB
# corpus, whose keyword lines are mostly prose: "secret" in a sentence).
_KW_OPERATOR = re.compile(r"""\w*[\]'"]{0,2}\s*[:=!]""")


def _keyword_shape(line: str) -> bool:
    if "'" not in line and '"' not in line and "`" not in line:
        return False
    if ";" in line or "==" in line or "!=" in line or "=!" in line or "!!" in line:
        return True
    low = line.lower()
    if len(low) != len(line):  # a character whose lower case is longer: just run the plugin
        return True
    for w in _KW_DENY:
        i = low.find(w)
        while i >= 0:
            if _KW_OPERATOR.match(line, i + len(w)):
                return True
            i = low.find(w, i + 1)
    return False


def _line_plugins_on(line: str, assignment: bool, keyword: bool, entropy: bool) -> list[Hit]:
    hits: list[Hit] = []
    keyword = keyword and _keyword_shape(line)
    if assignment:
        for rule, plugin in _ASSIGN_PLUGINS:
            for rx in plugin.denylist:
                hits += [h for m in rx.finditer(line) if (h := _regex_hit(rule, 1, plugin, rx, m, line))]
    plugins = ([(_KEYWORD, 2)] if keyword else []) + ([(p, 3) for p in _ENTROPY] if entropy else [])
    for plugin, prio in plugins:
        rule = rule_name(plugin.secret_type)
        for found in plugin.analyze_line(filename="session.txt", line=line, line_number=0):
            value = found.secret_value or ""
            if prio == 3 and (len(value) < MIN_ENTROPY_LENGTH or _DIGEST.fullmatch(value)):
                continue
            if not value or _filtered(value, line, plugin):
                continue
            hits += [Hit(rule, i, i + len(value), prio) for i in _occurrences(line, value)]
    return hits


def _scan_line(line: str) -> list[Hit]:
    """Every rule on one line: the reference scan."""
    hits: list[Hit] = []
    for rule, prio, plugin, _gate, patterns in _WHOLE:
        for rx in patterns:
            hits += [h for m in rx.finditer(line) if (h := _regex_hit(rule, prio, plugin, rx, m, line))]
    low = line.lower()
    return hits + _line_plugins(line, assignment=any(w in low for w in _SERVICE_WORDS))


def _line_starts(text: str, literals: Iterable[str]) -> set[int]:
    """Start offsets of the lines holding one of ``literals``."""
    out: set[int] = set()
    for lit in literals:
        i = text.find(lit)
        while i >= 0:
            lo = text.rfind("\n", 0, i) + 1
            out.add(lo)
            hi = text.find("\n", i)
            if hi < 0:
                break
            i = text.find(lit, hi)
    return out


def _line_at(text: str, lo: int) -> str:
    hi = text.find("\n", lo)
    return text[lo:] if hi < 0 else text[lo:hi]


_ALL_LITS = tuple(sorted({lit for _r, _p, _pl, gate, _x in _WHOLE if gate != ALL for lit in gate}))
_GATE_SETS = [(rule, prio, plugin, _SHAPES[type(plugin)] if gate == ALL else frozenset(gate), patterns)
              for rule, prio, plugin, gate, patterns in _WHOLE]  # fmt: skip
# the keyword detector's own words (its DENYLIST, lowercased) and the words the assignment
# patterns need: a keyword line holds one of them, in any case
_KW_DENY = ("api_key", "apikey", "auth_key", "authkey", "service_key", "servicekey", "account_key", "accountkey",
            "db_key", "dbkey", "database_key", "databasekey", "priv_key", "privkey", "private_key", "privatekey",
            "client_key", "clientkey", "db_pass", "dbpass", "database_pass", "databasepass", "key_pass", "keypass",
            "password", "passwd", "pwd", "secret", "contraseña", "contrasena")  # fmt: skip


def find(text: str) -> list[Hit]:
    """Every secret in ``text``, spans as offsets into ``text``, overlapping findings
    resolved to the most specific rule; a private key's span runs to its END line. The
    same findings as ``find_reference`` (every plugin on every line), cheaply."""
    return find_many([text])[0] if text else []


def find_many(texts: list[str]) -> list[list[Hit]]:
    """``find`` of each text, scanned together: the texts are joined by newlines (the scan
    is line by line, so no match crosses from one to the next) and every literal test and
    regex runs once over the batch instead of once per block."""
    starts, pos = [], 0
    for t in texts:
        starts.append(pos)
        pos += len(t) + 1
    joined = "\n".join(texts)
    per: list[list[Hit]] = [[] for _ in texts]
    for h in _scan(joined):
        i = bisect.bisect_right(starts, h.start) - 1
        base, size = starts[i], len(texts[i])
        per[i].append(Hit(h.rule, h.start - base, min(h.end - base, size), h.priority))
    return [_resolve(t, hs) if hs else [] for t, hs in zip(texts, per)]


_CASE_LITS = tuple(lit for lit in _ALL_LITS if not lit.startswith("~"))
_LOW_LITS = tuple((lit, lit[1:]) for lit in _ALL_LITS if lit.startswith("~"))


def _automaton(words: Iterable[str]) -> Any:
    import ahocorasick

    a = ahocorasick.Automaton()
    for w in set(words):
        a.add_word(w, w)
    a.make_automaton()
    return a


# Every literal of every gate, found in one pass (Aho-Corasick) over the lower-cased text
# instead of one str.find pass each (60-odd passes over a batch were most of the scan's
# time), and one pass rather than two (the case-sensitive literals and the lower-cased
# ones: the automaton costs time per character, 1.7 s a pass over the corpus's 46 M): a
# case-sensitive literal's match is then checked against the text itself.
_CASE_BY_WORD: dict[str, tuple[str, ...]] = {}
for _lit in _CASE_LITS:
    _CASE_BY_WORD[_lit.lower()] = (*_CASE_BY_WORD.get(_lit.lower(), ()), _lit)
_LOW_WORDS = frozenset([w for _l, w in _LOW_LITS] + list(_KW_DENY) + list(_SERVICE_WORDS))
_AC = _automaton(set(_CASE_BY_WORD) | _LOW_WORDS)


def _occurrences_by_line(text: str, low: str) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """(case-sensitive literal -> start offsets of the lines holding it, lower-cased word ->
    the same); ``low`` is ``text`` lower-cased, of the same length."""
    case: dict[str, set[int]] = {}
    lower: dict[str, set[int]] = {}
    last_lo, last_hi = -1, -1
    for end, word in _AC.iter(low):
        found = []
        if word in _LOW_WORDS:
            found.append((lower, word))
        for lit in _CASE_BY_WORD.get(word, ()):
            if text.startswith(lit, end - len(lit) + 1):
                found.append((case, lit))
        if not found:
            continue
        if not (last_lo <= end < last_hi):
            last_lo = text.rfind("\n", 0, end) + 1
            nl = text.find("\n", end)
            last_hi = len(text) if nl < 0 else nl
        for out, key in found:
            out.setdefault(key, set()).add(last_lo)
    return case, lower


def _scan(text: str) -> list[Hit]:
    low = text.lower()
    if len(low) != len(text):  # a character whose lower case is longer: offsets would move
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    case_lines, low_lines = _occurrences_by_line(text, low)
    hits: list[Hit] = []
    for rule, prio, plugin, gate, patterns in _GATE_SETS:
        starts: set[int] = set()
        if isinstance(gate, tuple):  # shapes, not literals
            starts = {text.rfind("\n", 0, m.start()) + 1 for rx in gate for m in rx.finditer(text)}
        for lit in () if isinstance(gate, tuple) else gate:
            starts |= low_lines.get(lit[1:], set()) if lit.startswith("~") else case_lines.get(lit, set())
        for lo in sorted(starts):
            line = _line_at(text, lo)
            for rx in patterns:
                hits += [Hit(h.rule, h.start + lo, h.end + lo, h.priority)
                         for m in rx.finditer(line) if (h := _regex_hit(rule, prio, plugin, rx, m, line))]  # fmt: skip
    kw: set[int] = set()
    for w in _KW_DENY:
        kw |= low_lines.get(w, set())
    assign: set[int] = set()
    for w in _SERVICE_WORDS:
        assign |= low_lines.get(w, set())
    quoted = {text.rfind("\n", 0, m.start()) + 1 for rx in _QUOTED_BY_OPENING for m in rx.finditer(text)}
    for lo in sorted(kw | assign | quoted):
        line = _line_at(text, lo)
        hits += [Hit(h.rule, h.start + lo, h.end + lo, h.priority)
                 for h in _line_plugins(line, assignment=lo in assign, keyword=lo in kw, entropy=lo in quoted)]  # fmt: skip
    return hits


def find_reference(text: str) -> list[Hit]:
    """Every plugin on every line of ``text``: what ``find`` must equal (slow)."""
    hits: list[Hit] = []
    pos = 0
    for line in text.split("\n"):
        hits += [Hit(h.rule, h.start + pos, h.end + pos, h.priority) for h in _scan_line(line)]
        pos += len(line) + 1
    return _resolve(text, hits)


def _resolve(text: str, hits: list[Hit]) -> list[Hit]:
    if not hits:
        return []
    out: list[Hit] = []
    for h in sorted(set(hits), key=lambda h: (h.priority, -(h.end - h.start), h.start, h.rule)):
        if h.rule == "private-key":  # the whole PEM block, from its -----BEGIN to its -----END line
            start = h.start - 5 if text[max(0, h.start - 5):h.start] == "-----" else h.start
            end = _PRIVATE_END.search(text, h.end)
            stop = end.end() if end else (text.find("\n", h.end) if "\n" in text[h.end:] else len(text))
            h = Hit(h.rule, start, stop, h.priority)
        if all(h.end <= o.start or h.start >= o.end for o in out):
            out.append(h)
    return sorted(out, key=lambda h: h.start)


def sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- the scan, in the writer's transaction

SCAN_BATCH = 2000  # blocks read per query


def scan_new(conn: sqlite3.Connection) -> int:
    """Scan the blocks and text blobs written since the last call; returns the findings
    added. Called by every writer of ``blocks`` before it commits (beside ``index_text``)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'secret_scan_progress'").fetchone():
        return 0  # an archive opened without its migrations (an old schema being upgraded)
    mark_version_if_empty(conn)
    upto, blobs_upto = conn.execute("SELECT blocks_upto, blobs_upto FROM secret_scan_progress").fetchone()
    now = _now()
    added = 0
    top = conn.execute("SELECT coalesce(max(id), 0) FROM blocks").fetchone()[0]
    if top > upto:
        conn.execute("DELETE FROM secret_findings WHERE block_id > ?", (upto,))  # never twice
        last = upto
        while last < top:
            rows = conn.execute(
                "SELECT b.id, b.message_id, b.position, b.text, b.patch, m.thread_id FROM blocks b "
                "LEFT JOIN messages m ON m.id = b.message_id WHERE b.id > ? AND b.id <= ? ORDER BY b.id LIMIT ?",
                (last, top, SCAN_BATCH),
            ).fetchall()
            if not rows:
                break
            found = []
            items = [(row, field, value) for row in rows
                     for field, value in (("text", row[3]), ("patch", row[4])) if isinstance(value, str) and value]  # fmt: skip
            for ((bid, mid, position, _t, _p, tid), field, value), hits in zip(items, find_many([v for _r, _f, v in items])):
                for h in hits:
                    found.append((h.rule, tid, mid, bid, position, field, None, h.start, h.end, sha(value[h.start:h.end])))
            added += _insert(conn, found, now)
            last = rows[-1][0]
        conn.execute("UPDATE secret_scan_progress SET blocks_upto = ?", (top,))
    btop = conn.execute("SELECT coalesce(max(rowid), 0) FROM blobs").fetchone()[0]
    if btop > blobs_upto:
        conn.execute(
            "DELETE FROM secret_findings WHERE blob_sha256 IN (SELECT sha256 FROM blobs WHERE rowid > ?)", (blobs_upto,)
        )
        found = []
        for bsha, data in conn.execute(
            "SELECT sha256, data FROM blobs WHERE rowid > ? AND rowid <= ? AND media_type LIKE 'text/%'", (blobs_upto, btop)
        ):
            text = bytes(data).decode("utf-8", "replace")
            for h in find(text):
                found.append((h.rule, None, None, None, None, "blob", bsha, h.start, h.end, sha(text[h.start:h.end])))
        added += _insert(conn, found, now)
        conn.execute("UPDATE secret_scan_progress SET blobs_upto = ?", (btop,))
    return added


def _insert(conn: sqlite3.Connection, found: list[tuple[Any, ...]], now: str) -> int:
    if not found:
        return 0
    conn.executemany(
        "INSERT OR IGNORE INTO secret_values (sha256, rule, first_seen) VALUES (?, ?, ?)",
        [(f[-1], f[0], now) for f in found],
    )
    conn.executemany(
        "INSERT INTO secret_findings (rule, thread_id, message_id, block_id, position, field, blob_sha256, start, end, "
        "value_sha256, first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT first_seen FROM secret_values WHERE sha256 = ?))",
        [(*f, f[-1]) for f in found],
    )
    return len(found)


def rescan(conn: sqlite3.Connection) -> int:
    """Derive every finding again with the current rules (in one transaction)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM secret_findings")
        conn.execute("UPDATE secret_scan_progress SET blocks_upto = 0, blobs_upto = 0, rules_version = ?", (RULES_VERSION,))
        n = scan_new(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return n


def stored_rules_version(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT rules_version FROM secret_scan_progress").fetchone()[0]


def mark_version_if_empty(conn: sqlite3.Connection) -> None:
    """A fresh archive's findings come from the current rules."""
    conn.execute(
        "UPDATE secret_scan_progress SET rules_version = ? WHERE blocks_upto = 0 AND blobs_upto = 0", (RULES_VERSION,)
    )


# ---------------------------------------------------------------- masking on the way out


def _masked(rule: str) -> str:
    return f"[REDACTED {rule}]"


class Redactor:
    """Replaces known secret values in text, bytes and JSON-like values."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values  # value -> rule
        forms: dict[str, str] = {}
        for v, rule in values.items():
            forms[v] = _masked(rule)
            escaped = orjson.dumps(v).decode()[1:-1]  # the value inside a JSON string (a key's newlines)
            forms.setdefault(escaped, _masked(rule))
        self._forms = forms
        keys = sorted(forms, key=len, reverse=True)
        self._rx = re.compile("|".join(re.escape(k) for k in keys)) if keys else None
        self._brx = re.compile(b"|".join(re.escape(k.encode("utf-8", "surrogatepass")) for k in keys)) if keys else None

    def __bool__(self) -> bool:
        return bool(self.values)

    def text(self, s: str) -> str:
        if self._rx is None or not s:
            return s
        return self._rx.sub(lambda m: self._forms[m.group(0)], s)

    def bytes(self, b: bytes) -> bytes:
        if self._brx is None or not b:
            return b
        return self._brx.sub(lambda m: self._forms[m.group(0).decode("utf-8", "surrogatepass")].encode(), b)

    def value(self, v: Any) -> Any:
        """A JSON-like value (dicts, lists, strings) with every string masked."""
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(self.value(x) for x in v)
        return v

    def message(self, msg: Any) -> Any:
        """A model ``Message`` with its blocks' strings (and its extra) masked."""
        from .model import Message

        if self._rx is None:
            return msg
        return Message.from_dict(self.value(msg.to_dict()))


def _values_of(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> dict[str, str]:
    """The values of the findings matching ``where``, read back through their spans (a
    span whose characters no longer hash to the finding's value is skipped)."""
    out: dict[str, str] = {}
    rows = conn.execute(
        "SELECT f.rule, f.field, f.start, f.end, f.value_sha256, b.text, b.patch, bl.data FROM secret_findings f "
        "LEFT JOIN blocks b ON b.id = f.block_id LEFT JOIN blobs bl ON bl.sha256 = f.blob_sha256 "
        f"WHERE {where}",
        params,
    ).fetchall()
    for rule, field, start, end, vsha, text, patch, data in rows:
        src = {"text": text, "patch": patch}.get(field) if field != "blob" else (
            bytes(data).decode("utf-8", "replace") if data is not None else None)  # fmt: skip
        if not isinstance(src, str):
            continue
        value = src[start:end]
        if value and sha(value) == vsha:
            out.setdefault(value, rule)
    return out


def redactor_for_threads(conn: sqlite3.Connection, thread_ids: Iterable[str]) -> Redactor:
    """Masks the findings of these threads and of every text companion (few, and a thread's
    companion is not linked to it by id)."""
    ids = orjson.dumps(sorted(set(thread_ids))).decode()
    return Redactor(_values_of(conn, "f.thread_id IN (SELECT value FROM json_each(?)) OR f.field = 'blob'", (ids,)))


def redactor_for_blocks(conn: sqlite3.Connection, block_ids: Iterable[int]) -> Redactor:
    ids = orjson.dumps(sorted(set(block_ids))).decode()
    return Redactor(_values_of(conn, "f.block_id IN (SELECT value FROM json_each(?))", (ids,)))


def redactor_all(conn: sqlite3.Connection) -> Redactor:
    """Every finding of the archive (``restore --redact``, ``push --redact``)."""
    return Redactor(_values_of(conn, "1", ()))


def redactor_for_sources(conn: sqlite3.Connection, source_ids: Iterable[int]) -> Redactor:
    """Findings in the messages owned by these sources, and every text companion."""
    ids = orjson.dumps(sorted(set(source_ids))).decode()
    return Redactor(_values_of(
        conn,
        "f.message_id IN (SELECT m.id FROM messages m WHERE m.source_id IN (SELECT value FROM json_each(?))) "
        "OR f.message_id IN (SELECT o.message_id FROM message_occurrences o WHERE o.source_id IN (SELECT value FROM json_each(?))) "
        "OR f.field = 'blob'",
        (ids, ids),
    ))  # fmt: skip


# ---------------------------------------------------------------- listing


def summary(conn: sqlite3.Connection, thread: str | None = None, since: str | None = None) -> dict[str, Any]:
    where, params = _filter(thread, since)
    counts = dict(conn.execute(f"SELECT rule, count(*) FROM secret_findings f WHERE {where} GROUP BY rule ORDER BY count(*) DESC, rule", params).fetchall())
    distinct = conn.execute(f"SELECT count(DISTINCT value_sha256) FROM secret_findings f WHERE {where}", params).fetchone()[0]
    return {"findings": sum(counts.values()), "distinct_values": distinct, "by_rule": counts,
            "rules_version": RULES_VERSION, "findings_rules_version": stored_rules_version(conn)}  # fmt: skip


def list_findings(conn: sqlite3.Connection, thread: str | None = None, since: str | None = None) -> list[dict[str, Any]]:
    where, params = _filter(thread, since)
    cur = conn.execute(
        "SELECT f.id, f.rule, f.thread_id, t.title AS thread_title, f.message_id, f.block_id, f.position, f.field, "
        "f.blob_sha256, f.start, f.end, f.value_sha256, f.first_seen, m.ts AS message_ts FROM secret_findings f "
        f"LEFT JOIN threads t ON t.id = f.thread_id LEFT JOIN messages m ON m.id = f.message_id WHERE {where} ORDER BY f.id",
        params,
    )
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _filter(thread: str | None, since: str | None) -> tuple[str, tuple[Any, ...]]:
    where, params = ["1"], []
    if thread:
        where.append("(f.thread_id = ? OR f.thread_id LIKE ?)")
        params += [thread, thread + "%"]
    if since:
        where.append("f.first_seen >= ?")
        params.append(since)
    return " AND ".join(where), tuple(params)


# ---------------------------------------------------------------- the ways out

_PARTIAL = re.compile(r"[^\s\"'`…\\,;:()\[\]{}<>]{8,}")


def redact_spans(red: Redactor, text: str, marks: list[list[int]]) -> tuple[str, list[list[int]]]:
    """``text`` masked, with the ``[start, end)`` ``marks`` (search highlights) moved to
    match; a mark inside a masked value goes. Snippets cut values anywhere, so a run of 8 or
    more characters that is part of a known value is masked too."""
    if not red or not text:
        return text, marks
    spans: list[tuple[int, int, str]] = []
    if red._rx is not None:
        spans += [(m.start(), m.end(), red._forms[m.group(0)]) for m in red._rx.finditer(text)]
    for m in _PARTIAL.finditer(text):
        if any(m.start() < e and s < m.end() for s, e, _r in spans):
            continue
        rule = next((r for v, r in red.values.items() if m.group(0) in v), None)
        if rule is not None:
            spans.append((m.start(), m.end(), _masked(rule)))
    if not spans:
        return text, marks
    spans.sort()
    out, pos, shifts = [], 0, []  # shifts: (old end, delta after it)
    delta = 0
    for s, e, r in spans:
        out += [text[pos:s], r]
        delta += len(r) - (e - s)
        shifts.append((s, e, delta))
        pos = e
    out.append(text[pos:])
    moved = []
    for a, b in marks:
        if any(a < e and s < b for s, e, _d in shifts):
            continue
        d = next((d for s, e, d in reversed(shifts) if e <= a), 0)
        moved.append([a + d, b + d])
    return "".join(out), moved


def redact_marked(red: Redactor, marked: str, open_mark: str, close_mark: str) -> str:
    """A snippet with highlight markers (FTS5 ``snippet()``), masked, markers kept."""
    if not red or not marked:
        return marked
    text, marks, start, n = [], [], None, 0
    for ch in marked:
        if ch == open_mark:
            start = n
        elif ch == close_mark:
            if start is not None:
                marks.append([start, n])
            start = None
        else:
            text.append(ch)
            n += 1
    masked, marks = redact_spans(red, "".join(text), marks)
    out, pos = [], 0
    for a, b in marks:
        out += [masked[pos:a], open_mark, masked[a:b], close_mark]
        pos = b
    out.append(masked[pos:])
    return "".join(out)


def thread_scope(conn: sqlite3.Connection, thread_id: str) -> list[str]:
    """A thread, its ancestors (a fork's emit carries its parent's history) and its
    descendants (child threads travel with it)."""
    ids = [thread_id]
    parent = conn.execute("SELECT parent_thread_id FROM threads WHERE id = ?", (thread_id,)).fetchone()
    while parent and parent[0] and parent[0] not in ids:
        ids.append(parent[0])
        parent = conn.execute("SELECT parent_thread_id FROM threads WHERE id = ?", (parent[0],)).fetchone()
    frontier = [thread_id]
    while frontier:
        children = [r[0] for r in conn.execute(
            "SELECT id FROM threads WHERE parent_thread_id IN (SELECT value FROM json_each(?))", (orjson.dumps(frontier).decode(),)
        ) if r[0] not in ids]  # fmt: skip
        ids += children
        frontier = children
    return ids


def _lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    rest = b""
    for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest


def redact_outcome(conn: sqlite3.Connection, outcome: Any) -> int:
    """Mask every file of an ``emit`` outcome in place (any target: a byte-exact copy's
    JSON lines hold values JSON-escaped, which the redactor knows); returns the files changed."""
    red = redactor_for_threads(conn, thread_scope(conn, outcome.thread_id))
    changed = 0
    if not red:
        return 0
    files = outcome.files
    # a value without a raw newline (every value, as JSON lines escape newlines) is masked
    # line by line as the file is copied out, never read whole (a session can be 600 MB);
    # a multi-line one (a private key in Markdown) needs the whole file
    multiline = any("\n" in v for v in red.values)
    for rel in list(files):
        if multiline:
            data = files[rel]
            masked = red.bytes(data)
            if masked != data:
                files[rel] = masked
                changed += 1
        elif any(red.bytes(line) != line for line in _lines(file_chunks(files, rel))):
            files.map_lines(rel, red.bytes)
            changed += 1
    if changed:
        outcome.exact = False
        outcome.notes.append(f"secrets masked in {changed} file(s) (--redact): not byte-exact")
    return changed


def redact_view(conn: sqlite3.Connection, view: Any) -> Any:
    """A ``queries.ThreadView`` whose messages (read lazily, page by page) and summary are masked."""
    red = redactor_for_threads(conn, thread_scope(conn, view.thread.id))
    if not red:
        return view

    class Masked:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __iter__(self) -> Iterator[Any]:
            return (red.message(m) for m in self.inner)

        def __len__(self) -> int:
            return len(self.inner)

    from dataclasses import replace

    from .model import Thread

    return replace(view, thread=Thread.from_dict(red.value(view.thread.to_dict())), summary=red.value(view.summary),
                   messages=Masked(view.messages), children=red.value(view.children))  # fmt: skip


def redact_hits(conn: sqlite3.Connection, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``queries.search`` hits with their snippets (and labels) masked."""
    threads = {h["thread_id"] for h in hits if h.get("thread_id")}
    red = redactor_for_threads(conn, threads)
    for h in hits:
        h["snippet"], h["matches"] = redact_spans(red, h.get("snippet") or "", h.get("matches") or [])
        if isinstance(h.get("thread_title"), str):
            h["thread_title"] = red.text(h["thread_title"])
    return hits


def mask_page(conn: sqlite3.Connection, data: dict[str, Any]) -> dict[str, Any]:
    """The conversation page's data (``web.conversation.load_page``) with every string masked:
    blocks, the table of contents, labels of the thread and its relatives."""
    ids = [data["thread"]["id"], *(r["id"] for r in data.get("relatives", []))]
    red = redactor_for_threads(conn, ids)
    return red.value(data) if red else data


def mask_search_rows(conn: sqlite3.Connection, rows: list[Any], labels: dict[str, str],
                     open_mark: str, close_mark: str) -> list[dict[str, Any]]:  # fmt: skip
    """The search page's rows with snippets (highlights kept) and labels masked."""
    out = [dict(r) for r in rows]
    red = redactor_for_threads(conn, {r["thread_id"] for r in out if r.get("thread_id")})
    if not red:
        return out
    for r in out:
        r["snippet"] = redact_marked(red, r.get("snippet") or "", open_mark, close_mark)
        if isinstance(r.get("title"), str):
            r["title"] = red.text(r["title"])
    for k, v in labels.items():
        labels[k] = red.text(v)
    return out


def forgotten_note(conn: sqlite3.Connection, files: Iterable[Any]) -> str | None:
    """What ``restore`` says when ``forget`` rewrote lines of the files it gave back (restore's
    ``RestoredFile``s): which files, which generation replaced which. A source something was
    forgotten from also has the values masked in the lines ingest read from it later."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'forget_generations'").fetchone():
        return None
    said = []
    for f in files:
        sid = conn.execute("SELECT id FROM sources WHERE uid = ?", (f.source_uid,)).fetchone()
        if sid is None or not conn.execute("SELECT 1 FROM forgotten_values WHERE source_id = ?", sid).fetchone():
            continue
        gens = conn.execute(
            "SELECT replaced_generation, lines_rewritten FROM forget_generations WHERE source_id = ? AND generation = ?",
            (sid[0], f.generation),
        ).fetchall()
        how = "; ".join(f"generation {f.generation} replaced generation {old} ({_plural_lines(n)} rewritten)" for old, n in gens)
        said.append(f"  {f.path}: source {f.source_uid[:12]}, " + (how or f"generation {f.generation}, lines masked as read"))
    if not said:
        return None
    return (f"note: {len(said)} restored file(s) hold lines rewritten by `forget` (secrets replaced by "
            "[REDACTED ...]): these are not the original bytes\n" + "\n".join(said))  # fmt: skip


def _plural_lines(n: int) -> str:
    return f"{n} line" + ("" if n == 1 else "s")


def sql_masker(conn: sqlite3.Connection, show: bool = False) -> Any:
    """``mask_secrets(text)`` for SQL (serve's canned search query): ``text`` with every
    finding of the archive masked (snippet highlights kept), unless ``show``. The values are
    read again when another connection has committed (``PRAGMA data_version``)."""
    cache: dict[str, Any] = {"version": None, "red": None}

    def mask(text: Any) -> Any:
        if show or not isinstance(text, str) or not text:
            return text
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if cache["version"] != version:
            has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'secret_findings'").fetchone()
            cache["red"], cache["version"] = (redactor_all(conn) if has else Redactor({})), version
        red = cache["red"]
        return redact_marked(red, text, "\u27e6", "\u27e7") if red else text

    return mask

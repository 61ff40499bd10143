"""Finding secrets in text: the rule set and the matcher (``secrets.py`` stores, masks and
forgets what this finds, and re-exports it).

Detection is Yelp's ``detect-secrets`` (its plugins and heuristic filters) plus the few
AI-vendor key formats it lacks (``VENDOR_RULES``). ``secrets.RULES_VERSION`` changes with either,
and ``secrets --rescan`` derives every finding again. ``find`` is the reference matcher
(``find_reference``: every plugin on every line) made fast: literal gates found with one
automaton pass decide which plugins run on which lines; the two agree on every input
(tests/test_secrets.py, tests/test_secrets_rules.py)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

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


# Bump secrets.RULES_VERSION when VENDOR_RULES, the plugin list, their settings or the span
# rules change: ``sesh-archive secrets --rescan`` then derives every finding again.

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


def _automaton(words: Iterable[str]) -> tuple[tuple[str, ...], Any]:
    """The words (sorted: the pattern index of a match names one) and their automaton over
    UTF-8 bytes."""
    import ahocorasick_rs

    ordered = tuple(sorted(set(words)))
    return ordered, ahocorasick_rs.BytesAhoCorasick(
        [w.encode("utf-8") for w in ordered], implementation=ahocorasick_rs.Implementation.DFA
    )


# Every literal of every gate, found in one pass (Aho-Corasick) over the lower-cased text
# instead of one str.find pass each (60-odd passes over a batch were most of the scan's
# time), and one pass rather than two (the case-sensitive literals and the lower-cased
# ones: the automaton costs time per character): a case-sensitive literal's match is then
# checked against the text itself. The automaton is Rust's aho-corasick DFA (ahocorasick-rs,
# issue 37), run over the UTF-8 bytes: every match, overlapping ones included, in one list,
# 0.16 s for the 100 MB corpus's 48 M characters against 1.04 s for pyahocorasick's
# iterator. Bytes, not the str: given a str, ahocorasick-rs maps every byte offset to a
# character offset (about 8 bytes of memory per character: +32 MB peak on a 3.4 M-character
# batch); the few matches are mapped here instead.
_CASE_BY_WORD: dict[str, tuple[str, ...]] = {}
for _lit in _CASE_LITS:
    _CASE_BY_WORD[_lit.lower()] = (*_CASE_BY_WORD.get(_lit.lower(), ()), _lit)
_LOW_WORDS = frozenset([w for _l, w in _LOW_LITS] + list(_KW_DENY) + list(_SERVICE_WORDS))
_AC_WORDS, _AC = _automaton(set(_CASE_BY_WORD) | _LOW_WORDS)
# per pattern index: the word if it is looked for lower-cased (else None), and the
# case-sensitive literals it stands for
_AC_MEANING = tuple((w if w in _LOW_WORDS else None, _CASE_BY_WORD.get(w, ())) for w in _AC_WORDS)


# The characters whose lower case (str.lower) the automaton would see differently from the
# ASCII-only lowering of the UTF-8 bytes (bytes.lower): their lower case is ASCII or holds a
# non-ASCII character of a word (the ñ of contraseña). A text without any is lowered as
# bytes (C, no Unicode tables: 0.15 s instead of 0.42 s for the 100 MB corpus's text); the
# same bytes match at the same places. tests/test_secrets_rules.py checks this list against
# the running Python's Unicode tables.
_LOWER_SPECIAL = ("\u00d1", "\u0130", "\u212a")  # Ñ, İ (lowers to two characters), the Kelvin sign


def _lowered_utf8(text: str) -> bytes:
    """``text`` lower-cased as UTF-8 (lone surrogates kept), the same length in characters
    as ``text``: the haystack of the literal pass."""
    if text.isascii() or not any(c in text for c in _LOWER_SPECIAL):
        return text.encode("utf-8", "surrogatepass").lower()
    low = text.lower()
    if len(low) != len(text):  # a character whose lower case is longer: offsets would move
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return low.encode("utf-8", "surrogatepass")


def _match_starts(data: bytes, length: int) -> list[tuple[int, int]]:
    """(character offset, pattern index) of every match of the automaton in ``data``, the
    UTF-8 of ``length`` characters, by offset."""
    found = sorted((start, index) for index, start, _end in _AC.find_matches_as_indexes(data, overlapping=True))
    if len(data) == length:  # ASCII: byte offsets are character offsets
        return found
    out = []
    byte = char = 0
    for start, index in found:  # characters before each match, decoding only the gaps
        char += len(data[byte:start].decode("utf-8", "surrogatepass"))
        byte = start
        out.append((char, index))
    return out


def _occurrences_by_line(text: str, low: bytes) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """(case-sensitive literal -> start offsets of the lines holding it, lower-cased word ->
    the same); ``low`` is ``_lowered_utf8(text)``."""
    case: dict[str, set[int]] = {}
    lower: dict[str, set[int]] = {}
    last_lo, last_hi = -1, -1
    for start, index in _match_starts(low, len(text)):
        word, lits = _AC_MEANING[index]
        found = [] if word is None else [(lower, word)]
        for lit in lits:
            if text.startswith(lit, start):
                found.append((case, lit))
        if not found:
            continue
        if not (last_lo <= start < last_hi):
            last_lo = text.rfind("\n", 0, start) + 1
            nl = text.find("\n", start)
            last_hi = len(text) if nl < 0 else nl
        for out, key in found:
            out.setdefault(key, set()).add(last_lo)
    return case, lower


def _scan(text: str) -> list[Hit]:
    case_lines, low_lines = _occurrences_by_line(text, _lowered_utf8(text))
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


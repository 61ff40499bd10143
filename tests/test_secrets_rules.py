"""Secret rules (issue 23): the fast scan (``secrets.find``) finds what detect-secrets'
plugins find, with test vectors from detect-secrets' own tests and the vendors' docs:
bot tokens by their shape alone, as detect-secrets does (no keyword needed near them),
keywords and case-insensitive patterns in any case, and no finding for near misses."""

from __future__ import annotations

import pytest

from archive import secrets

# detect-secrets' tests (tests/plugins/discord_test.py: Discord's docs, GitGuardian's
# examples, detect-secrets issue 627)
DISCORD = [
    "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
    "Nzk5MjgxNDk0NDc2NDU1OTg3.YABS5g.2lmzECVlZv3vv6miVnUaKPQi2wI",
    "MZ1yGvKTjE0rY0cV8i47CjAa.uRHQPq.Xb1Mk2nEhe-4iUcrGOuegj57zMC",
    "OTUyNED5MDk2MTMxNzc2MkEz.YjESug.UNf-1GhsIG8zWT409q2C7Bh_zWQ",
]
DISCORD_NOT = [
    "MZ1yGvKTj0rY0cV8i47CjAa.uHQPq.Xb1Mk2nEhe-4icrGOuegj57zMC",  # segments too short
    "PZ1yGvKTjE0rY0cV8i47CjAa.uRHQPq.Xb1Mk2nEhe-4iUcrGOuegj57zMC",  # invalid first character
]
# detect-secrets' tests (tests/plugins/telegram_token_test.py; Telegram's Bot API docs)
TELEGRAM = ["110201543:AAHdqTcvCH1vGWJxfSe1ofSAs0K5PALDsaw", "7213808860:AAH1bjqpKKW3maRSPAxzIU-0v6xNuq2-NjM"]
TELEGRAM_NOT = [
    "foo:AAH1bjqpKKW3maRSPAxzIU-0v6xNuq2-NjM",  # no bot id
    "1102015:AAHdqTcvCH1vGWJxfSe1ofSAs0K5PALDsaw",  # a 7-digit id
    "110201543:AAHdqTcvCH1vGWJxfSe1ofSAs0K5PA",  # a short secret
]
# the keyword detector's own words, written the ways people write them
KEYWORDS = [
    'Password="q8Zr2mLx9vBn4"', "API_Key: 'q8Zr2mLx9vBn4'", 'DB_PASS = "q8Zr2mLx9vBn4"', 'My_Secret: "q8Zr2mLx9vBn4"',
    'PRIVATE_KEY="q8Zr2mLx9vBn4"', 'ApiKey = "q8Zr2mLx9vBn4"', 'Passwd: "q8Zr2mLx9vBn4"',
]  # fmt: skip
# Slack's patterns ignore case in detect-secrets, so must the prefilter
SLACK_UPPER = "XOXB-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"

CONTEXTS = ["{}", "the bot logs in with {} on start", 'config = {{"x": "{}"}}', "a\nb {} c\nd"]


@pytest.mark.parametrize("value", DISCORD)
@pytest.mark.parametrize("context", CONTEXTS)
def test_discord_tokens_are_found_by_shape(value: str, context: str) -> None:
    text = context.format(value)
    hits = secrets.find(text)
    assert [(h.rule, text[h.start:h.end]) for h in hits] == [("discord-bot-token", value)]
    assert hits == secrets.find_reference(text)


@pytest.mark.parametrize("value", TELEGRAM)
@pytest.mark.parametrize("context", CONTEXTS)
def test_telegram_tokens_are_found_by_shape(value: str, context: str) -> None:
    text = context.format(value)
    hits = secrets.find(text)
    assert [(h.rule, text[h.start:h.end]) for h in hits] == [("telegram-bot-token", value)]
    assert hits == secrets.find_reference(text)


@pytest.mark.parametrize("value", DISCORD_NOT + TELEGRAM_NOT)
def test_bot_token_near_misses_are_not_found(value: str) -> None:
    for context in CONTEXTS:
        text = context.format(value)
        assert not [h for h in secrets.find(text) if h.rule in ("discord-bot-token", "telegram-bot-token")], text
        assert secrets.find(text) == secrets.find_reference(text)


@pytest.mark.parametrize("line", KEYWORDS)
def test_keywords_in_any_case(line: str) -> None:
    hits = secrets.find(line)
    assert [(h.rule, line[h.start:h.end]) for h in hits] == [("secret-keyword", "q8Zr2mLx9vBn4")], line
    assert hits == secrets.find_reference(line)
    # and in a batch of other texts, where the prefilter works on the joined lower-cased text
    batch = secrets.find_many(["nothing here", line.upper().replace("Q8ZR2MLX9VBN4", "q8Zr2mLx9vBn4"), "x"])
    assert [h.rule for h in batch[1]] == ["secret-keyword"]


def test_case_insensitive_patterns_are_gated_case_insensitively() -> None:
    text = f"token {SLACK_UPPER} here"
    assert [(h.rule, text[h.start:h.end]) for h in secrets.find(text)] == [("slack-token", SLACK_UPPER)]
    assert secrets.find(text) == secrets.find_reference(text)
    aws = "AWS_Secret_Access_Key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'"
    assert "aws-access-key" in {h.rule for h in secrets.find(aws)}
    assert secrets.find(aws) == secrets.find_reference(aws)


# detect-secrets' tests (twilio_test.py, artifactory_test.py) and near misses: these plugins
# are gated on shapes (AC/SK + 32, AKC/APx + 8-10) rather than two-letter literals
SHAPED = [
    ("twilio-api-key", "ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", True),
    ("twilio-api-key", "AC1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e", True),
    ("twilio-api-key", "SK1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e", True),
    ("twilio-api-key", "AC1F3A5C7E9B2D4F6A8C0E1B3D5F7A9C2E", False),  # upper case: not a Twilio SID
    ("artifactory-credentials", "AKCp8jQ7n2cWzRaQ5mL3xZ9kT4vB6yH1", True),
    ("artifactory-credentials", "AP6xxxxxxxxxxxxxxx", True),
    ("artifactory-credentials", "APZxxxxxxxxxxxxxxx", False),  # APx: x a hex digit
]


@pytest.mark.parametrize("rule, value, found", SHAPED)
def test_shape_gated_plugins_equal_every_plugin_on_every_line(rule: str, value: str, found: bool) -> None:
    for context in ["{}", 'key = "{}"', "token: {} end", "x\n{}\ny"]:
        text = context.format(value)
        hits = secrets.find(text)
        assert hits == secrets.find_reference(text), text
        # (Artifactory's span holds the quote or space its pattern opens and closes with)
        assert any(value in text[h.start:h.end] for h in hits if h.rule == rule) == found, (text, hits)


# Issue 37: the literal pass runs over the UTF-8 bytes, lowered as bytes (ASCII only) unless
# the text holds a character whose Unicode lower case differs where it matters; a match's
# byte offset is mapped back to characters. Non-ASCII text before, between and after
# secrets (two- three- and four-byte characters, a lone surrogate) keeps every span exact.
NON_ASCII = ["é", "→", "😀", "\ud83d", "Ñ", "İ", "\u212a", "ß"]
SECRETS_IN_TEXT = [
    'Password="q8Zr2mLx9vBn4"',
    "token " + SLACK_UPPER,
    "CONTRASEÑA = 'q8Zr2mLx9vBn4x'",
    "contraseña: \"q8Zr2mLx9vBn4\"",
    "API_\u212aEY = 'q8Zr2mLx9vBn4'",  # the Kelvin sign lowers to k: a keyword to detect-secrets' (?i) too
    "AKIAIOSFODNN7EXAMPLE and TELEGRAM 110201543:AAHdqTcvCH1vGWJxfSe1ofSAs0K5PALDsaw",
    "gh token 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",  # case-sensitive literals: checked at the mapped offset
    "key sk-ant-api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2,
]


@pytest.mark.parametrize("char", NON_ASCII)
def test_spans_exact_after_non_ascii_characters(char: str) -> None:
    for secret in SECRETS_IN_TEXT:
        for text in (f"{char * 3} {secret}", f"{secret} {char}\n{char}{secret}", f"x{char}\n{secret}{char}",
                     f"{char * 40}\nab\n{secret}\n{char * 40}{secret}"):
            hits = secrets.find(text)
            assert hits == secrets.find_reference(text), (text, hits)
        batch = [f"{char} a", f"{char}{secret}", secret, f"{char * 5}\n{secret}"]
        assert secrets.find_many(batch) == [secrets.find_reference(t) for t in batch], batch


def test_lower_special_characters_match_the_unicode_tables() -> None:
    """``_LOWER_SPECIAL`` is every character whose lower case is not itself and holds an
    ASCII character or a non-ASCII character of a literal (with this Python's Unicode)."""
    from archive.secret_rules import _AC_WORDS, _LOWER_SPECIAL

    word_chars = {c for w in _AC_WORDS for c in w if ord(c) > 127}
    special = {
        c for c in map(chr, range(128, 0x110000))
        if (low := c.lower()) != c and (any(ord(x) < 128 for x in low) or set(low) & word_chars)
    }  # fmt: skip
    assert special == set(_LOWER_SPECIAL)

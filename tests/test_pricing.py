"""Price table: bundled file shape, name matching, overrides, cost arithmetic."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from archive.pricing import PricesError, bundled, cost, load_prices


def test_bundled_table_is_dated_and_complete() -> None:
    t = bundled()
    assert t.source and t.as_of and len(t.as_of) == 10
    for name, p in t.models.items():
        assert name == name.lower()
        assert p.input > 0 and p.output > 0 and 0 < p.cache_read <= p.input and p.cache_write >= p.input * 0.99, name


@pytest.mark.parametrize(
    ("model", "entry"),
    [
        ("claude-sonnet-4-5", "claude-sonnet-4-5"),  # exact
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),  # dated snapshot
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),  # Vertex spelling
        ("Claude-Opus-4-6[1m]", "claude-opus-4-6"),  # case, Claude Code's 1M-context suffix
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("gpt-5.1-codex-max", "gpt-5.1-codex-max"),  # exact beats the shorter prefix
        ("gpt-5-2025-08-07", "gpt-5"),
        ("claude-opus-4-8", None),  # not claude-opus-4-*: no guess
        ("claude-opus-4-10", None),
        ("gpt-5.3-codex", None),  # "gpt-5" must not price a different version
        ("gpt-5x", None),
        ("", None),
        (None, None),
    ],
)
def test_lookup(model: str | None, entry: str | None) -> None:
    hit = bundled().lookup(model)
    assert (hit[0] if hit else None) == entry


def test_override_file_and_env(tmp_path: Path) -> None:
    f = tmp_path / "prices.json"
    f.write_bytes(orjson.dumps({"source": "mine", "models": {"My-Model": {"input": 2, "output": 4}}}))
    t = load_prices(f, env={})
    assert t.lookup("my-model-v2")[0] == "my-model" and t.source == "mine" and t.as_of == bundled().as_of
    assert t.lookup("my-model")[1].cache_read == 0  # missing fields cost nothing
    assert t.lookup("gpt-5") is not None  # bundled entries remain
    assert load_prices(env={"SESH_ARCHIVE_PRICES": str(f)}).overrides == str(f)
    assert load_prices(env={}).overrides is None
    f.write_bytes(b'{"models": {"x": {"input": "cheap"}}}')
    with pytest.raises(PricesError, match="'x'"):
        load_prices(f, env={})


def test_cost_prices_each_bucket_once() -> None:
    p = bundled().lookup("gpt-5.1-codex")[1]
    # 1M fresh input, 1M cached, 1M output: 1.25 + 0.125 + 10
    assert cost(p, 1_000_000, 1_000_000, 1_000_000, 0) == pytest.approx(11.375)

"""Model prices and the cost of one model response.

Prices come from the maintained price database ``genai-prices`` (its data ships inside the
package: no network at run time; we never start its ``UpdatePrices`` fetcher), with two
tables laid over it. The bundled table is ``archive/data/prices.json``: ``{"source", "as_of", "models": {name:
{"input", "output", "cache_read", "cache_write"}}}``, USD per million tokens. A user file of
the same shape (``stats --prices FILE`` or ``$SESH_ARCHIVE_PRICES``) is laid over it: its
models replace or add to the bundled ones, and its ``source``/``as_of`` are reported.

Invariants:

* **Matching.** A model name (compared case-insensitively) takes the entry with exactly its
  name; otherwise the entry whose name is the longest prefix of it that is followed by a
  separator (``-``, ``@``, ``:``, ``/``, ``[``, ``_`` or a space): ``claude-sonnet-4-5``
  prices ``claude-sonnet-4-5-20250929``, ``claude-sonnet-4-5@20250929`` and
  ``claude-opus-4-6[1m]`` is priced by ``claude-opus-4-6``; but ``gpt-5`` never prices
  ``gpt-5.3-codex`` and ``claude-opus-4-1`` never prices ``claude-opus-4-10``. No match (or
  no model) means no price: the cost is ``None``, never a guess.
* **Order.** The user file, then the bundled table, then genai-prices: a model either
  table names is priced by it; any other model by genai-prices' own matching (its price in
  force today; the base rate of a tiered price, since a group of responses has no single
  prompt size). genai-prices leaving the cache-write price empty (OpenAI: no separate
  charge) means cache writes cost the input price, as in the bundled table.
* **Tokens are priced once.** :func:`cost` takes the *normalised* counts of
  ``archive.queries`` (``input`` = input neither read from nor written to the cache), so
  every token is in exactly one of input, cache_read, cache_write, output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from .errors import ArchiveError

ENV_VAR = "SESH_ARCHIVE_PRICES"
FIELDS = ("input", "output", "cache_read", "cache_write")
_SEPARATORS = ("-", "@", ":", "/", "[", "_", " ")


class PricesError(ArchiveError):
    """A price file that cannot be read or has the wrong shape."""


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float
    cache_write: float

    def to_dict(self) -> dict[str, float]:
        return {f: getattr(self, f) for f in FIELDS}


@dataclass(frozen=True)
class PriceTable:
    models: Mapping[str, Price]
    source: str | None
    as_of: str | None
    overrides: str | None = None  # the user file laid over the bundled table, if any
    database: bool = False  # fall back to genai-prices for models the tables do not name

    def lookup(self, model: str | None) -> tuple[str, Price] | None:
        """The entry pricing ``model``: exact name, else longest prefix at a separator, else
        (with ``database``) genai-prices' match, named ``genai-prices:<provider>/<model>``."""
        if not model:
            return None
        name = model.lower()
        if name in self.models:
            return name, self.models[name]
        best: str | None = None
        for key in self.models:
            if name.startswith(key) and name[len(key)] in _SEPARATORS and (best is None or len(key) > len(best)):
                best = key
        if best:
            return best, self.models[best]
        return _database_lookup(name) if self.database else None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "as_of": self.as_of, "overrides": self.overrides}
        if self.database:
            out["database"] = database_info()
        return out


_DB_CACHE: dict[str, tuple[str, Price] | None] = {}


def _database_lookup(name: str) -> tuple[str, Price] | None:
    if name in _DB_CACHE:
        return _DB_CACHE[name]
    hit: tuple[str, Price] | None = None
    try:
        import datetime as dt

        from genai_prices import data_snapshot
    except ImportError:  # the package is a dependency; a broken install prices from the tables only
        return None
    try:
        provider, info = data_snapshot.get_snapshot().find_provider_model(name, None, None, None)
    except LookupError:  # an unknown model
        provider = info = None
    mid = str(getattr(info, "id", "")).lower()
    if info is not None and name != mid and name.startswith(mid) and name[len(mid)] not in _SEPARATORS:
        # genai-prices matches by substring: claude-opus-4-1 would price claude-opus-4-10.
        # Our rule holds for its matches too: a version is never priced as another.
        info = None
    if info is not None:
        mp = info.get_prices(dt.datetime.now(dt.timezone.utc))

        def rate(v: Any) -> float | None:
            if v is None:
                return None
            return float(getattr(v, "base", v))  # TieredPrices: the base tier

        inp, out = rate(mp.input_mtok), rate(mp.output_mtok)
        if inp is not None and out is not None:
            read = rate(mp.cache_read_mtok)
            write = rate(mp.cache_write_mtok)
            hit = (f"genai-prices:{provider.id}/{info.id}",
                   Price(inp, out, inp if read is None else read, inp if write is None else write))  # fmt: skip
    _DB_CACHE[name] = hit
    return hit


def database_info() -> dict[str, Any] | None:
    """Which genai-prices data prices the models the tables do not name: its version and the
    latest price change it records (``as_of``), or None when it is not installed."""
    try:
        from importlib.metadata import version

        from genai_prices import data_snapshot, types
    except ImportError:
        return None
    import datetime as dt

    today = dt.date.today()
    latest: dt.date | None = None
    for provider in data_snapshot.get_snapshot().providers:
        for m in provider.models:
            for cp in m.prices if isinstance(m.prices, list) else ():
                c = cp.constraint
                d = getattr(c, "start_date", None) if isinstance(c, types.StartDateConstraint) else None
                if isinstance(d, dt.date) and d <= today and (latest is None or d > latest):
                    latest = d
    return {"name": "genai-prices", "version": version("genai-prices"), "as_of": latest.isoformat() if latest else None}


def _parse(doc: Any, where: str) -> tuple[dict[str, Price], str | None, str | None]:
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict):
        raise PricesError(f"{where}: expected an object with a \"models\" object")
    out: dict[str, Price] = {}
    for name, p in doc["models"].items():
        if not isinstance(p, dict):
            raise PricesError(f"{where}: model {name!r}: expected an object")
        try:
            out[str(name).lower()] = Price(**{f: float(p.get(f, 0) or 0) for f in FIELDS})
        except (TypeError, ValueError) as e:
            raise PricesError(f"{where}: model {name!r}: {e}") from None
    return out, doc.get("source"), doc.get("as_of")


def bundled() -> PriceTable:
    doc = orjson.loads(resources.files("archive.data").joinpath("prices.json").read_bytes())
    models, source, as_of = _parse(doc, "prices.json")
    return PriceTable(models, source, as_of)


def load_prices(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
                database: bool = True) -> PriceTable:  # fmt: skip
    """genai-prices (unless ``database`` is False), the bundled table laid over it, and
    ``path`` (or ``$SESH_ARCHIVE_PRICES``) laid over both."""
    env = os.environ if env is None else env
    base = bundled()
    base = PriceTable(base.models, base.source, base.as_of, None, database)
    path = path or env.get(ENV_VAR) or None
    if path is None:
        return base
    p = Path(os.path.expanduser(str(path)))
    try:
        doc = orjson.loads(p.read_bytes())
    except OSError as e:
        raise PricesError(f"cannot read price file {p}: {e.strerror}") from None
    except orjson.JSONDecodeError as e:
        raise PricesError(f"price file {p} is not JSON: {e}") from None
    models, source, as_of = _parse(doc, str(p))
    return PriceTable({**base.models, **models}, source or base.source, as_of or base.as_of, str(p), database)


def cost(price: Price, input: int, output: int, cache_read: int, cache_write: int) -> float:
    """USD for normalised token counts (each token in exactly one of the four)."""
    return (
        input * price.input + output * price.output + cache_read * price.cache_read + cache_write * price.cache_write
    ) / 1_000_000


def money(v: float | None, tokens: int | None = None) -> str:
    """A cost as the pages and exports show it: "no price" for tokens no price counts;
    "no usage recorded" when ``tokens`` is given and 0 (nothing to price: a prompt log, a
    release that logged no token counts)."""
    if tokens == 0:
        return "no usage recorded"
    if v is None:
        return "no price"
    return f"${v:,.2f}" if v >= 0.01 or v == 0 else f"${v:.4f}"

"""Shared pytest setup: an isolated HOME for every test, and the --update-golden flag."""

from __future__ import annotations

import functools
import os
import pwd
import re
import shutil
import site
import sys
import tempfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/ files from the current output (review the diff!)",
    )


# -- isolation: tests never touch the real home (issue 32, defect 2)
#
# Three layers, none of which a test can undo:
# 1. at start-up (pytest_configure) the process environment itself points HOME, XDG_* and every
#    variable any adapter reads at a throwaway home, so ``monkeypatch.undo()`` in a test returns
#    to that home, never to the real one;
# 2. each test gets a home of its own on top (the autouse fixture below);
# 3. an audit hook (sys.addaudithook: permanent once added) fails any open, folder listing or
#    SQLite connection under the real home (or under a real XDG_*/vendor folder set in the
#    caller's environment) that is not Python's own installation or this checkout.

_XDG = (
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_STATE_HOME", ".local/state"),
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_CACHE_HOME", ".cache"),
)
# where the fixtures expect a vendor's variable to point inside a test home; every other
# variable an adapter reads is removed, so the adapter falls back to its default under HOME
_VENDOR_HOMES = {
    "CLAUDE_CONFIG_DIR": ".claude",
    "CODEX_HOME": ".codex",
    "GEMINI_CLI_HOME": "",
    "QWEN_HOME": ".qwen",
    "VIBE_HOME": ".vibe",
    "KIMI_SHARE_DIR": ".kimi",
}
# the archive's own variables: a caller's value would send a test to the caller's archive
_ARCHIVE_VARS = ("SESH_ARCHIVE_DB", "SESH_ARCHIVE_PRICES", "SESH_ARCHIVE_MAX_LINE")


def _adapter_vars() -> set[str]:
    """Every variable an adapter reads, and those of the layouts the archive knows but does not
    read yet (archive/vendors/layouts.py: ingest names their folders)."""
    from archive.vendors import VENDORS
    from archive.vendors.layouts import LAYOUTS

    return {v for a in VENDORS for v in a.env_vars} | {v for layout in LAYOUTS for v in layout.env_vars}


def isolation_env(home: Path) -> dict[str, str | None]:
    """The environment of a test home: value None means the variable is removed."""
    env: dict[str, str | None] = {"HOME": str(home)}
    for var, sub in _XDG:
        env[var] = str(home / sub)
    for var in _adapter_vars() | set(_ARCHIVE_VARS):
        env.setdefault(var, None)
    for var, sub in _VENDOR_HOMES.items():
        env[var] = str(home / sub) if sub else str(home)
    return env


_REAL_PLACES: tuple[str, ...] = ()
_ALLOWED: tuple[str, ...] = ()
_SESSION_HOME: Path | None = None


def _norm(p: str) -> str:
    return os.path.normpath(os.path.abspath(p))


def _under(path: str, places: tuple[str, ...]) -> bool:
    return any(path == d or path.startswith(d + os.sep) for d in places)


def _guard(event: str, args: tuple) -> None:
    if event not in ("open", "os.listdir", "os.scandir", "sqlite3.connect") or not args:
        return
    target = args[0]
    if isinstance(target, bytes):
        target = os.fsdecode(target)
    if not isinstance(target, str) or not target or target == ":memory:":
        return
    if target.startswith("file:"):  # an SQLite URI: file:/path?mode=ro
        target = target[5:].split("?", 1)[0]
    path = _norm(target)
    if _under(path, _REAL_PLACES) and not _under(path, _ALLOWED):
        raise RuntimeError(f"a test touched the real home: {event} {path} (tests/conftest.py isolation)")


def _places(*paths: str | None) -> tuple[str, ...]:
    out: set[str] = set()
    for p in paths:
        if p:
            out |= {_norm(p), _norm(os.path.realpath(p))}
    return tuple(sorted(out))


def pytest_configure(config: pytest.Config) -> None:
    global _REAL_PLACES, _ALLOWED, _SESSION_HOME
    if _SESSION_HOME is not None:
        return
    real_home = os.path.expanduser("~")
    try:
        passwd_home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        passwd_home = None
    watched = [real_home, passwd_home] + [os.environ.get(v) for v in (*dict(_XDG), *_adapter_vars())]
    # pytest-xdist's workers start from this process's environment, which points at the throwaway
    # home by then: the first process hands them the real places it watches
    inherited = os.environ.get("SESH_TESTS_REAL_PLACES")
    _REAL_PLACES = tuple(inherited.split(os.pathsep)) if inherited else _places(*watched)
    os.environ["SESH_TESTS_REAL_PLACES"] = os.pathsep.join(_REAL_PLACES)
    _SESSION_HOME = Path(tempfile.mkdtemp(prefix="sesh-test-home-"))
    _ALLOWED = _places(
        sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages(), site.getusersitepackages(),
        *(p for p in sys.path if p), str(Path(__file__).resolve().parents[1]), tempfile.gettempdir(), str(_SESSION_HOME),
    )
    for var, value in isolation_env(_SESSION_HOME).items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    sys.addaudithook(_guard)


# -- pytest-xdist (`pytest -n auto`; `--dist loadscope` in pyproject.toml): a module of real
# clients, a browser or a server (its `pytestmark`) with a fixture of module (or wider) scope
# keeps its tests on one worker, so a client's recording or a browser starts once; every other
# test goes wherever a worker is free (a cheap module fixture may then run on both). (Through
# xdist's scheduler hook: its `xdist_group` marks are lost under pytest 9.2, which no longer
# reads the node id xdist rewrites.)
_SHARED_SCOPE = re.compile(r"""scope\s*=\s*["'](module|package|session|class)["']""")
_HEAVY_MODULE = re.compile(r"^pytestmark\s*=.*\bmark\.(clients|browser|postgres|slow)\b", re.M)


@functools.cache
def _keeps_together(module: str) -> bool:
    try:
        text = (Path(__file__).parent.parent / module).read_text()
    except OSError:
        return True
    return bool(_SHARED_SCOPE.search(text) and _HEAVY_MODULE.search(text))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201 (xdist's types)
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if _keeps_together(module) else nodeid

    return ModuleScheduling(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SESSION_HOME is not None:
        shutil.rmtree(_SESSION_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: HOME, XDG_* and the vendors' variables point into a temp dir."""
    home = tmp_path_factory.mktemp("home")
    for var, value in isolation_env(home).items():
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    return home


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(scope="session")
def pg_server():
    """A throwaway PostgreSQL server for the session (tests/pg_server.py); skipped, with the
    reason, where the binaries or psycopg are missing."""
    from tests.pg_server import PgServer, missing

    why = missing()
    if why:
        pytest.skip(why)
    server = PgServer().start()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """The URL of a fresh, empty database on the session's server."""
    return pg_server.new_database()


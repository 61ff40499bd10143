"""The archive imports ``sqlite_utils`` without its optional companions (archive/hidden_imports.py):
not ``pysqlite3`` (its errors are not those of the standard library's connections the archive
opens), not ``numpy`` or ``pandas`` (memory and start-up time for a type mapping the archive
never uses), and each stays importable afterwards. Stand-ins for the three, importable in a
child process, record when they are imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STAND_IN = """import os
with open(os.environ["STAND_IN_LOG"], "a") as f:
    f.write(__name__ + "\\n")
STAND_IN = True
def __getattr__(name):  # numpy.int8, pandas.Timestamp...: a class of its own each
    return type(name, (), {})
"""


def test_sqlite_utils_is_imported_without_pysqlite3_numpy_or_pandas(tmp_path: Path):
    site = tmp_path / "site"
    for name in ("numpy", "pandas", "pysqlite3"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(STAND_IN)
    # a pysqlite3 whose errors are classes of their own, as the real module's are
    (site / "pysqlite3" / "dbapi2.py").write_text("class OperationalError(Exception):\n    pass\n")
    log = tmp_path / "imported.txt"
    child = (
        "import sys, sqlite3\n"
        "import archive.cli, archive.ingest.engine  # what a command imports\n"
        "import sqlite_utils.db as d, sqlite_utils.utils as u\n"
        "print(d.np is None, d.pd is None, u.sqlite3 is sqlite3, u.OperationalError is sqlite3.OperationalError)\n"
        "print(sorted(m for m in ('numpy', 'pandas', 'pysqlite3') if sys.modules.get(m) is not None))\n"
        "import numpy  # the semantic extra's, later: importable as ever\n"
        "print(numpy.STAND_IN)\n"
    )
    env = {**os.environ, "STAND_IN_LOG": str(log),
           "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == ["True True True True", "[]", "True"]
    assert log.read_text().split() == ["numpy"]  # the stand-ins: only numpy, when asked for


def test_hidden_gives_back_what_was_there():
    from archive.hidden_imports import hidden

    before = sys.modules.get("json")
    with hidden("json", "surely_not_a_module_name"):
        assert sys.modules["json"] is None
        try:
            import surely_not_a_module_name  # noqa: F401
        except ImportError:
            pass
        else:
            raise AssertionError("imported a hidden module")
    assert sys.modules.get("json") is before and "surely_not_a_module_name" not in sys.modules

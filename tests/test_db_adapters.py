"""The identity adapters ``archive.db`` registers for None and bytes (a first ingest binds
tens of thousands of each; without an adapter CPython 3.11's sqlite3 raises and clears an
AttributeError for every one): registered, and binding stores exactly what it did without."""

import sqlite3

from archive.db import open_db


def test_none_and_bytes_have_identity_adapters():
    for value in (None, b"", b"\x00raw\xff"):
        adapter = sqlite3.adapters.get((type(value), sqlite3.PrepareProtocol))
        assert adapter is not None, type(value)
        assert adapter(value) is value


def test_values_bound_through_them_are_stored_unchanged(tmp_path):
    db = open_db(tmp_path / "a.db")
    conn = db.conn
    conn.execute("CREATE TABLE t (v)")
    values = [None, b"", b"\x00raw\xff", 0, 1.5, "text", True, bytearray(b"ba")]
    conn.executemany("INSERT INTO t (v) VALUES (?)", [(v,) for v in values])
    conn.execute("INSERT INTO t (v) VALUES (?)", (None,))
    got = conn.execute("SELECT typeof(v), v FROM t ORDER BY rowid").fetchall()
    assert got == [
        ("null", None), ("blob", b""), ("blob", b"\x00raw\xff"), ("integer", 0), ("real", 1.5),
        ("text", "text"), ("integer", 1), ("blob", b"ba"), ("null", None),
    ]  # fmt: skip

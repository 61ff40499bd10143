"""The archive's one ``Migrations`` set (sqlite-utils): ``migrations_1.py`` and
``migrations_2.py`` register their steps on it, in order; ``migrations.py`` imports them."""

from __future__ import annotations

from sqlite_utils.migrations import Migrations

migrations = Migrations("sesh-archive")

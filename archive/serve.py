"""Datasette on the archive: ``make_datasette`` (used by ``serve`` and the tests) and ``run_server``.

Invariants:

* Requests never write: Datasette opens a mutable (not ``immutable``) file, so an ingest may
  write while it serves (WAL), but its read connections are ``mode=ro``, no write plugin is
  loaded, and our plugin only reads. The one writer in the process is the watcher
  (``archive.watch``, issue 41; off with ``watch=False``, ``serve --no-watch``): a daemon
  thread with its own connection that ingests what changed in the vendors' folders under
  the same lock as ``ingest``, never inside a request.
* The server binds 127.0.0.1 unless told otherwise (the archive holds pasted secrets), and
  answers only requests whose Host header names the address it serves on (loopback names,
  ``host``, and ``allow_hosts``): 403 otherwise, so a DNS-rebinding page cannot read it
  (``archive.web.hosts``). ``exposed`` says when a host reaches beyond loopback, which
  the CLI warns about: there is no authentication.
* The metadata ships inside the package, so ``serve`` works after a plain ``pip install``;
  it is written for a database called ``archive`` and renamed to the file's stem, which
  is the name Datasette gives the database.
* The project's plugin (``archive.datasette_plugin``) is registered here explicitly, so
  the conversation page works whether or not the package's entry point is installed.
* Datasette reads the archive with Python's own ``sqlite3`` module, the one the archive is
  written with, even where ``pysqlite3`` is installed (Datasette prefers it when it can import
  it): the pages' rows and errors are that module's (``archive.web.datasette_import``).
"""

from __future__ import annotations

import json
import threading
import webbrowser
from importlib import resources
from pathlib import Path
from typing import Any

from .web.datasette_import import standard_sqlite

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8001
METADATA_DB_NAME = "archive"

SETTINGS = {
    "sql_time_limit_ms": 5000,
    # Facets over the views are computed per request; give them a little more than the default.
    "facet_time_limit_ms": 500,
    # Blocks can be whole files; keep tables readable (the full value is one click away).
    "truncate_cells_html": 400,
}


def load_metadata(db_name: str = METADATA_DB_NAME, allowed_hosts: list[str] | None = None,
                  show_secrets: bool = False) -> dict[str, Any]:  # fmt: skip
    """The packaged metadata, with its database renamed to ``db_name`` (and the Host names
    the plugin lets through, when given)."""
    meta = json.loads(resources.files("archive.data").joinpath("datasette-metadata.json").read_text("utf-8"))
    dbs = meta.get("databases", {})
    if METADATA_DB_NAME in dbs and db_name != METADATA_DB_NAME:
        dbs[db_name] = dbs.pop(METADATA_DB_NAME)
    config = meta.setdefault("plugins", {}).setdefault("sesh-archive", {})
    config["database"] = db_name
    if allowed_hosts is not None:
        config["allowed_hosts"] = allowed_hosts
    if show_secrets:  # the conversation and search pages mask found secrets unless told
        config["show_secrets"] = True
    return meta


def exposed(host: str) -> bool:
    """Whether listening on ``host`` reaches beyond this machine."""
    from .web.hosts import is_loopback

    return not is_loopback(host)


def register_plugin() -> None:
    """Register ``archive.datasette_plugin`` once (the entry point may already have)."""
    with standard_sqlite():
        from datasette.plugins import pm

    from . import datasette_plugin

    if not pm.is_registered(datasette_plugin):
        pm.register(datasette_plugin, name="sesh_archive")


def make_datasette(db_path: str | Path, host: str = DEFAULT_HOST, allow_hosts: tuple[str, ...] = (),
                   show_secrets: bool = False) -> Any:  # fmt: skip
    with standard_sqlite():
        from datasette.app import Datasette

    from .web.hosts import allowed_hosts

    register_plugin()
    path = Path(db_path)
    # Datasette names a database after its file's stem; the metadata must use the same name.
    meta = load_metadata(path.stem, allowed_hosts(host, allow_hosts), show_secrets)
    return Datasette([str(path)], metadata=meta, settings=SETTINGS)


def make_server(db_path: str | Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                allow_hosts: tuple[str, ...] = (), show_secrets: bool = False) -> Any:  # fmt: skip
    """A uvicorn server for the archive, not yet running (``port=0`` picks a free port)."""
    import uvicorn

    ds = make_datasette(db_path, host=host, allow_hosts=allow_hosts, show_secrets=show_secrets)
    config = uvicorn.Config(ds.app(), host=host, port=port, log_level="warning", lifespan="auto")
    return uvicorn.Server(config)


def bound_url(server: Any) -> str:
    """The URL a started server listens on (the real port when it was asked for port 0)."""
    sock = server.servers[0].sockets[0]
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def run_server(db_path: str | Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, open_browser: bool = False,
               allow_hosts: tuple[str, ...] = (), show_secrets: bool = False, watch: bool = True) -> None:  # fmt: skip
    server = make_server(db_path, host=host, port=port, allow_hosts=allow_hosts, show_secrets=show_secrets)
    watcher = None
    if watch:  # keeps the archive current while it is served (archive.watch)
        from .watch import Watcher

        watcher = Watcher(db_path).start()
    if open_browser:
        # Open once the socket is bound, so the browser's first request does not fail.
        def opener() -> None:
            while not server.started and not server.should_exit:
                threading.Event().wait(0.05)
            if server.started:
                webbrowser.open(bound_url(server))

        threading.Thread(target=opener, daemon=True).start()
    try:
        server.run()
    finally:
        if watcher is not None:
            watcher.stop()

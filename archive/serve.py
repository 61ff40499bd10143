"""Datasette on the archive: ``make_datasette`` (used by ``serve`` and the tests) and ``run_server``.

Invariants: the archive is served read-only (Datasette never writes to it; an ingest may
write at the same time thanks to WAL); the server binds 127.0.0.1 unless told otherwise;
the metadata ships inside the package, so ``serve`` works after a plain ``pip install``.
"""

from __future__ import annotations

import json
import webbrowser
from importlib import resources
from pathlib import Path
from typing import Any


def load_metadata() -> dict[str, Any]:
    return json.loads(resources.files("archive.data").joinpath("datasette-metadata.json").read_text("utf-8"))


def make_datasette(db_path: str | Path) -> Any:
    from datasette.app import Datasette

    return Datasette([str(db_path)], metadata=load_metadata(), settings={"sql_time_limit_ms": 5000})


def run_server(db_path: str | Path, host: str = "127.0.0.1", port: int = 8001, open_browser: bool = False) -> None:
    import uvicorn

    ds = make_datasette(db_path)
    url = f"http://{host}:{port}/"
    if open_browser:
        webbrowser.open(url)
    uvicorn.run(ds.app(), host=host, port=port, log_level="warning")

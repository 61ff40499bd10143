"""The ``mcp`` command (issue 39): the archive as an MCP server for agents, kept apart from
cli.py; the server is archive/mcp_server.py, its tools archive/agent_tools.py."""

from __future__ import annotations

import click

from .cli_common import (
    _check_port,
    _db_after,
    _db_path,
    _open_read,
    _tz,
    _tz_options,
    cli,
)
from .errors import ArchiveError
from .serve import DEFAULT_HOST

DEFAULT_MCP_PORT = 8765


@cli.command(name="mcp")
@click.option("--http", "http", is_flag=True, help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="With --http: interface to listen on (loopback by default).")
@click.option("-p", "--port", default=DEFAULT_MCP_PORT, show_default=True, type=int, help="With --http: port.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="With --http: also answer requests for this Host name (repeatable; '*' for any). Others get 403.")
@_tz_options
@_db_after
@click.pass_context
def mcp_cmd(ctx: click.Context, http: bool, host: str, port: int, allow_hosts: tuple[str, ...]) -> None:
    """Serve the archive to agents over the Model Context Protocol (read-only; stdio by default).

    Tools: search, list_sessions, session_overview, read_session, file_sessions, usage.
    Needs the SDK: pip install 'sesh-archive[mcp]'."""
    from .mcp_server import MissingSDK, _sdk, make_http_server, run_stdio
    from .serve import exposed

    try:
        _sdk()
    except MissingSDK as e:
        raise click.ClickException(str(e))
    tz = _tz(ctx)
    db_path = _db_path(ctx)
    _open_read(ctx).conn.close()  # migrated, and an archive: else one line, exit 1 (as serve)
    if not http:
        # stdout is the protocol's: nothing else may be written there
        run_stdio(db_path, tz)
        return
    if exposed(host):
        click.echo(f"warning: --host {host} exposes the archive (pasted secrets included) beyond this machine, "
                   "with no authentication; requests must name an allowed host (--allow-host)", err=True)  # fmt: skip
    _check_port(host, port)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"MCP server for {db_path} at http://{shown}:{port}/mcp (read-only); press Ctrl-C to stop", err=True)
    try:
        make_http_server(db_path, host, port, allow_hosts, tz).run()
    except ArchiveError as e:
        raise click.ClickException(str(e))
    except OSError as e:
        raise click.ClickException(f"cannot listen on {host}:{port}: {e.strerror or e}")

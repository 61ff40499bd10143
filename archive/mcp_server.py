"""``sesh-archive mcp``: the archive as a Model Context Protocol server, for agents to search
their own history (the official ``mcp`` SDK; ``pip install 'sesh-archive[mcp]'``).

Invariants:

* Read-only: every tool call opens the archive through a ``mode=ro`` connection
  (``db.open_readonly``) and closes it after; nothing here can write. An ingest may run
  meanwhile (WAL): each call reads one fresh snapshot.
* Thin: each tool parses its arguments (a JSON schema the SDK builds from the signature,
  enums for vendors, roles, kinds, sorts) and calls one function of ``archive.agent_tools``,
  which masks secrets and sizes the result; the result is that dict as compact JSON text.
* A domain error (unknown session, bad query, bad cursor or date) is a tool error whose
  text says what was wrong, and the server carries on; arguments that fail the schema are
  refused the same way by the SDK.
* Over HTTP (``--http``, streamable HTTP at ``/mcp``) it binds loopback by default and
  answers only requests whose Host header it serves on (``archive.web.hosts``, the rule of
  ``serve``), so a DNS-rebinding page cannot reach the archive.
"""

# no `from __future__ import annotations`: the SDK reads the tools' annotations at run time

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import orjson

from . import agent_tools
from .db import open_readonly
from .errors import ArchiveError
from .vendors import names as vendor_names

INSTALL_HINT = "the MCP server needs the mcp SDK: pip install 'sesh-archive[mcp]'"
HTTP_PATH = "/mcp"
INSTRUCTIONS = (
    "A local archive of the user's AI coding agent sessions (every vendor, every message, tool call and token). "
    "Use search to find past work by words, list_sessions to browse, session_overview and read_session to read one "
    "session, file_sessions for the sessions that read or changed a file, usage for tokens and cost. "
    "Results are paged: pass next_cursor back to get more."
)

T = TypeVar("T")


class MissingSDK(ArchiveError):
    pass


def _sdk() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise MissingSDK(INSTALL_HINT) from None
    return MCPServer


def build_server(db_path: str | Path, tz: str | None = None) -> Any:
    """The MCP server (an ``MCPServer``) over the archive at ``db_path``; ``tz``: the zone
    days are counted in when a call names none."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations
    from pydantic import Field

    from . import __version__

    MCPServer = _sdk()
    server = MCPServer("sesh-archive", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    path = Path(db_path)
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

    def call(fn: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> str:
        try:
            db = open_readonly(path)
        except ArchiveError as e:
            raise ToolError(str(e)) from None
        try:
            return orjson.dumps(fn(db, *args, **kwargs)).decode()
        except (ArchiveError, ValueError) as e:
            raise ToolError(str(e)) from None
        finally:
            db.conn.close()

    def zone(value: str | None) -> str | None:
        return value or tz

    Vendor = Literal[tuple(vendor_names())]  # type: ignore[valid-type]
    Role = Literal[agent_tools.ROLES]  # type: ignore[valid-type]
    Kind = Literal[agent_tools.BLOCK_KINDS]  # type: ignore[valid-type]
    Cursor = Annotated[str | None, Field(description="next_cursor of the previous page of this same call")]
    Tokens = Annotated[int, Field(ge=200, le=50_000, description="Upper bound on the result's size, in tokens")]
    When = "ISO date or date-time, today, yesterday, 7d, 2w, 12h"
    Since = Annotated[str | None, Field(description=f"From this time on ({When})")]
    Until = Annotated[str | None, Field(description=f"Up to this day (whole day) or before this date-time ({When})")]
    Project = Annotated[str | None, Field(description="Working directory: an absolute path matches it and below; other text, a substring")]
    Session = Annotated[str, Field(description="Session id, an unambiguous prefix of one, or the vendor's session id")]
    Zone = Annotated[str | None, Field(description="IANA time zone days are counted in (default: the server's)")]

    @server.tool(name="search", annotations=read_only, structured_output=False,
                 description="Full-text search of every archived agent session; hits grouped by session, with snippets.")
    def search(query: Annotated[str, Field(min_length=1, description="Words to find (all must occur)")],
               vendor: Vendor | None = None, project: Project = None, role: Role | None = None,
               kinds: Annotated[list[Kind], Field(description="Only blocks of these kinds (e.g. text, tool_call)")] = [],  # noqa: B006
               since: Since = None, until: Until = None,
               session: Annotated[str | None, Field(description="Only this session (id or prefix) and its subagents")] = None,
               mode: Annotated[Literal[agent_tools.SEARCH_MODES], Field(  # type: ignore[valid-type]
                   description="lexical: SQLite FTS5 words; semantic: by meaning (paraphrases); hybrid: both, ranks fused")] = "lexical",
               fts_syntax: Annotated[bool, Field(description='query is FTS5 syntax ("phrases", OR, NOT, prefix*) instead of plain words')] = False,
               per_session: Annotated[int, Field(ge=1, le=20, description="Snippets shown per session")] = 3,
               tz: Zone = None, max_tokens: Tokens = 2000, cursor: Cursor = None) -> str:  # fmt: skip
        return call(agent_tools.search_sessions, query, vendor=vendor, project=project, role=role, kinds=kinds,
                    since=since, until=until, session=session, mode=mode, literal=not fts_syntax,
                    per_session=per_session, max_tokens=max_tokens, cursor=cursor, tz=zone(tz))  # fmt: skip

    @server.tool(name="list_sessions", annotations=read_only, structured_output=False,
                 description="List archived agent sessions (title, vendor, project, dates, tokens, cost), filtered and sorted.")
    def list_sessions(vendor: Vendor | None = None, project: Project = None, since: Since = None, until: Until = None,
                      sort: Literal[agent_tools.SORTS] = "recent",  # type: ignore[valid-type]
                      subagents: Annotated[bool, Field(description="Also list subagent sessions on their own")] = False,
                      limit: Annotated[int, Field(ge=1, le=200)] = 20, tz: Zone = None,
                      max_tokens: Tokens = 2000, cursor: Cursor = None) -> str:  # fmt: skip
        return call(agent_tools.list_sessions, vendor=vendor, project=project, since=since, until=until, sort=sort,
                    subagents=subagents, limit=limit, max_tokens=max_tokens, cursor=cursor, tz=zone(tz))  # fmt: skip

    @server.tool(name="session_overview", annotations=read_only, structured_output=False,
                 description="One session's overview: title, vendor, project, dates, models, usage, cost, lineage, children.")
    def session_overview(session: Session, max_tokens: Tokens = 2000) -> str:
        return call(agent_tools.session_overview, session, max_tokens=max_tokens)

    @server.tool(name="read_session", annotations=read_only, structured_output=False,
                 description="Read one session's conversation a page at a time; tool calls folded to one line unless full_tools.")
    def read_session(session: Session,
                     start: Annotated[int | None, Field(ge=0, description="Index of the first message (0: the start)")] = None,
                     full_tools: Annotated[bool, Field(description="Unfold tool calls, results and reasoning in full")] = False,
                     max_tokens: Tokens = 4000, cursor: Cursor = None) -> str:  # fmt: skip
        return call(agent_tools.session_messages, session, start=start, full_tools=full_tools, max_tokens=max_tokens,
                    cursor=cursor)  # fmt: skip

    @server.tool(name="file_sessions", annotations=read_only, structured_output=False,
                 description="The sessions that read or changed a file (absolute path, or a relative path's tail).")
    def file_sessions(path: Annotated[str, Field(min_length=1, description="File path: absolute, or its last components")],
                      vendor: Vendor | None = None, project: Project = None, since: Since = None, until: Until = None,
                      limit: Annotated[int, Field(ge=1, le=200)] = 20, tz: Zone = None,
                      max_tokens: Tokens = 2000, cursor: Cursor = None) -> str:  # fmt: skip
        return call(agent_tools.file_sessions, path, vendor=vendor, project=project, since=since, until=until,
                    limit=limit, max_tokens=max_tokens, cursor=cursor, tz=zone(tz))  # fmt: skip

    @server.tool(name="usage", annotations=read_only, structured_output=False,
                 description="Tokens and estimated cost by day, week, month, model, project or vendor for a period.")
    def usage(by: Literal[agent_tools.USAGE_BY] = "day", since: Since = None, until: Until = None,  # type: ignore[valid-type]
              vendor: Vendor | None = None,
              session: Annotated[str | None, Field(description="Only this session and its subagents")] = None,
              tz: Zone = None, max_tokens: Tokens = 2000, cursor: Cursor = None) -> str:  # fmt: skip
        return call(agent_tools.usage_summary, by=by, since=since, until=until, vendor=vendor, session=session,
                    max_tokens=max_tokens, cursor=cursor, tz=zone(tz))  # fmt: skip

    return server


def _warm_in_background() -> None:
    import threading

    # while the client initializes: the first usage or listing call then answers at once
    threading.Thread(target=agent_tools.warm, name="warm-prices", daemon=True).start()


def run_stdio(db_path: str | Path, tz: str | None = None) -> None:
    server = build_server(db_path, tz)
    _warm_in_background()
    server.run("stdio")


def http_app(db_path: str | Path, host: str, allow_hosts: tuple[str, ...] = (), tz: str | None = None) -> Any:
    """The streamable-HTTP ASGI app at ``/mcp``, behind the Host-header check of ``serve``."""
    from mcp.server.transport_security import TransportSecuritySettings

    from .web.hosts import allowed_hosts, host_check

    app = build_server(db_path, tz).streamable_http_app(
        streamable_http_path=HTTP_PATH, host=host,
        # our own check (the same rule and --allow-host as serve) instead of the SDK's list
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )  # fmt: skip
    return host_check(app, allowed_hosts(host, allow_hosts))


def make_http_server(db_path: str | Path, host: str, port: int, allow_hosts: tuple[str, ...] = (),
                     tz: str | None = None) -> Any:  # fmt: skip
    """A uvicorn server for ``http_app``, not yet running (``port=0`` picks a free port)."""
    import uvicorn

    _warm_in_background()
    config = uvicorn.Config(http_app(db_path, host, allow_hosts, tz), host=host, port=port, log_level="warning",
                            lifespan="on")  # fmt: skip
    return uvicorn.Server(config)

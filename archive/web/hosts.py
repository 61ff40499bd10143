"""The Host-header check in front of the whole app (DNS rebinding defence).

A web page the user visits while ``serve`` runs can point its own domain at 127.0.0.1 and
then read the archive, secrets included, through the SQL API: binding to loopback does not
stop that, checking the Host header does (the browser sends the attacker's name).

Invariants:

* Every HTTP request whose Host is not in the allowed set gets 403 and a one-line text
  body before Datasette sees it; so does a request with no Host header. A websocket with a
  foreign Host is closed unanswered (Datasette serves none); lifespan events pass through.
* Without configuration (``datasette archive.db`` through the entry point) only the
  loopback names are allowed; ``serve`` writes the plugin's ``allowed_hosts``.
* The allowed set is compared without the port and case-insensitively; it always holds
  the loopback names (``127.0.0.1``, ``localhost``, ``[::1]``), plus the address ``serve``
  listens on and every ``--allow-host``. ``*`` allows any Host (the user's explicit choice).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def normalise(host: str) -> str:
    """A Host header or host name, lower case, without port; IPv6 addresses in brackets."""
    h = host.strip().lower()
    if h.startswith("["):
        return h[: h.index("]") + 1] if "]" in h else h
    if h.count(":") > 1:  # a bare IPv6 address (a --host value, never a Host header)
        return f"[{h}]"
    return h.split(":", 1)[0].rstrip(".")


def allowed_hosts(listen_host: str | None = None, extra: Iterable[str] = ()) -> list[str]:
    names = list(LOOPBACK_NAMES)
    if listen_host:
        # the address itself, even 0.0.0.0 (what `serve --open` browses to): a rebinding
        # page can only send a name it controls, never this literal
        names.append(normalise(listen_host))
    names += [h if h == "*" else normalise(h) for h in extra]
    return list(dict.fromkeys(names))


def is_loopback(host: str) -> bool:
    h = normalise(host).strip("[]")
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def host_check(app: Any, allowed: Iterable[str]) -> Any:
    """ASGI middleware: 403 for a request whose Host header is not ``allowed``."""
    names = frozenset(allowed)
    any_host = "*" in names

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "lifespan" and not any_host:
            host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), None)
            if host is None or normalise(host) not in names:
                if scope.get("type") != "http":
                    return  # a websocket (none are served): close without accepting
                body = (f"403: this archive answers only to the host names it serves on "
                        f"({', '.join(sorted(names))}); start serve with --allow-host to add one\n").encode()  # fmt: skip
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                        (b"content-length", str(len(body)).encode())]})  # fmt: skip
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return wrapped

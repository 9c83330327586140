"""The dashboard's door: every HTTP request and WebSocket handshake passes here before Streamlit.

A page on another site must not read or drive the dashboard, even when its name resolves to this
machine (DNS rebinding): the `Host` must be a name this server answers to (the bound address, a
loopback name on a loopback bind, any IP literal on a wildcard bind, or a name given with
`--allow-host`), and an `Origin`, when the browser sends one, must be this very origin. Without a
password the dashboard also wants its access token (like Jupyter's): `?token=` once, then a cookie
(HttpOnly, SameSite=Lax, named per port). Every answer forbids framing and remote images.

An ASGI middleware (`st.App(middleware=...)`); knows nothing of the pages or the store.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import cookie_parser
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK_NAMES = frozenset(("localhost", "127.0.0.1", "::1"))
WILDCARDS = frozenset(("0.0.0.0", "::", ""))  # noqa: S104 - names of a wildcard bind, not a bind
TOKEN_PARAM = "token"
# Defence in depth behind the escaping in text.py: no frame may embed the dashboard (clickjacking,
# a framing page's postMessage), and the page may not load an image from anywhere but itself.
SECURITY_HEADERS = (("content-security-policy", "img-src 'self' data: blob:; frame-ancestors 'none'"),
                    ("x-frame-options", "DENY"), ("referrer-policy", "no-referrer"))
REFUSED_HOST = "logwarden ui: this address is not one the dashboard answers to (see --allow-host).\n"
REFUSED_ORIGIN = "logwarden ui: a page of another origin may not use the dashboard.\n"
NEEDS_TOKEN = "logwarden ui: open the URL with ?token= that `logwarden ui` printed.\n"


@dataclass(frozen=True)
class Door:
    """Who may come in: the host names (lowercase, no brackets), whether any IP literal is fine
    (a wildcard bind), and the access token (None: a password guards the pages instead)."""

    names: frozenset[str]
    any_ip: bool
    token: str | None

    @classmethod
    def for_bind(cls, host: str, allowed: Iterable[str] = (), token: str | None = None) -> Door:
        bound = _bare(host)
        names = {bound, "localhost"} | {_bare(name) for name in allowed}
        if _is_loopback(bound):
            names |= LOOPBACK_NAMES
        return cls(frozenset(names - {""}), any_ip=bound in WILDCARDS, token=token)

    def host_ok(self, host: str | None) -> bool:
        name = _host_name(host)
        if name is None:
            return False
        return name in self.names or (self.any_ip and _is_ip(name))

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        """No Origin (a non-browser client, a plain navigation), or exactly this server's origin."""
        if origin is None:
            return True
        parts = urlsplit(origin.lower())
        return parts.scheme in ("http", "https") and host is not None and parts.netloc == host.lower()

    def token_ok(self, given: str | None) -> bool:
        return self.token is None or (given is not None and hmac.compare_digest(given.encode(), self.token.encode()))


class Gate:
    """The middleware: refuses what `Door` refuses, trades a `?token=` for the cookie, and adds
    the security headers to every HTTP answer."""

    def __init__(self, app: ASGIApp, door: Door) -> None:
        self.app = app
        self.door = door

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        refusal = (REFUSED_HOST if not self.door.host_ok(host)
                   else REFUSED_ORIGIN if not self.door.origin_ok(headers.get("origin"), host)
                   else None)
        cookie = cookie_name(scope)
        if refusal is None and not self.door.token_ok(cookie_parser(headers.get("cookie", "")).get(cookie)):
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            if scope["type"] == "http" and self.door.token_ok(query.get(TOKEN_PARAM)):
                await _with_headers(_enter(scope, cookie, query), scope, receive, send)
                return
            refusal = NEEDS_TOKEN
        if refusal is not None:
            await _refuse(refusal, scope, receive, send)
            return
        await self.app(scope, receive, _headers_added(send) if scope["type"] == "http" else send)


def cookie_name(scope: Scope) -> str:
    """Cookies are not kept apart by port: two dashboards on one machine each keep their own."""
    server = scope.get("server") or ("", 0)
    return f"logwarden_ui_{server[1]}"


def _enter(scope: Scope, cookie: str, query: dict[str, str]) -> Response:
    """The token becomes a cookie, and leaves the address bar (and the browser's history)."""
    token = query.pop(TOKEN_PARAM)
    rest = urlencode(query)
    response = RedirectResponse(scope.get("path", "/") + (f"?{rest}" if rest else ""), status_code=303)
    response.set_cookie(cookie, token, httponly=True, samesite="lax", path="/")
    return response


async def _refuse(text: str, scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})  # before accept: the handshake gets a 403
        return
    await _with_headers(PlainTextResponse(text, status_code=403), scope, receive, send)


async def _with_headers(response: Response, scope: Scope, receive: Receive, send: Send) -> None:
    await response(scope, receive, _headers_added(send))


def _headers_added(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in SECURITY_HEADERS:
                headers[name] = value
        await send(message)
    return sending


def _host_name(host: str | None) -> str | None:
    """The name of a `Host` header (port dropped, lowercase, no trailing dot); None if malformed."""
    if not host:
        return None
    try:
        parts = urlsplit(f"//{host}")
        _ = parts.port  # a port that is not a number is malformed
    except ValueError:
        return None
    if parts.hostname is None or parts.username is not None or parts.password is not None or parts.path or parts.query:
        return None
    return parts.hostname.rstrip(".")


def _bare(host: str) -> str:
    return host.strip().strip("[]").lower().rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _is_loopback(name: str) -> bool:
    return name == "localhost" or (_is_ip(name) and ipaddress.ip_address(name).is_loopback)


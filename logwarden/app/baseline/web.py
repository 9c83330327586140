"""Per-site, per-endpoint web profiles: which endpoints a site serves, which parameters each takes
and what their values look like — learned from access logs and raw request dumps, without labels.

Owns: turning a window's events into requests (`requests_of`: one access-log line is one request;
a raw HTTP dump's request line, Cookie header and body are assembled into one), endpoint keys
(method + path with ids, hashes and UUIDs masked), the endpoint and site profiles, and judging a
request against them. Support is counted per distinct client (an address's network — /24, /64 —
else session cookie, else user, else the request itself), so one client flooding a renamed
parameter, or a botnet in one network, never makes it normal; nothing is judged before a site
and an endpoint have enough clients (warm-up). A request's
deviating parts are not learned: they wait as *pending* until enough distinct clients show them
(a new page or parameter the site really added), or an analyst accepts them.
Knows nothing of the store (profiles come and go as JSON) or of signals.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from logwarden.app.baseline.deviation import Deviation, Ref
from logwarden.app.baseline.ops import Count, LearnValue, Op, Pend, Promote, Single
from logwarden.app.baseline.sketch import Support, client_hash
from logwarden.app.baseline.values import Value, ValueModel, attack_syntax, decoded
from logwarden.app.events import Event

SITE_K = ENDPOINT_K = 64
PENDING_K = 32
SITE_WARMUP = 20  # distinct clients before a site's unknown endpoints are judged
# … and only while the chance that a request's endpoint is new is below this (Good-Turing: the
# share of requests whose endpoint was seen once): a shop's fixed pages, not a blog's long tail
NEW_ENDPOINT_CHANCE = 0.01
ENDPOINT_WARMUP = 20  # … before an endpoint's parameters are judged
NAME_MIN = 3  # clients a parameter name needs before it is usual
PROMOTE = 20  # clients that must show a pending endpoint or parameter before it is learned unasked
PRESENT_SHARE = 0.98  # a parameter in this share of an endpoint's requests is expected in every one
PARAMS_MAX = 64  # parameters an endpoint profile keeps (the least supported go first)
PENDING_MAX = 256  # pending endpoints a site keeps
REQUEST_PARAMS_MAX = 256  # parameters of one request that are looked at (the rest are counted)
NAME_MAX = 128
NETWORK_V4, NETWORK_V6 = 24, 64  # the prefix an address is counted by (one site's users rarely share one)
SESSION_COOKIES = ("jsessionid", "phpsessid", "asp.net_sessionid", "sessionid", "session", "sid", "connect.sid",
                   "laravel_session", "_session_id")

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"(?=[^/]*\d)(?=[^/]*[a-fA-F])[0-9a-fA-F]{12,}")
_DIGITS = re.compile(r"\d{4,}")
_ANY_DIGIT = re.compile(r"\d")
_MASKED: dict[str, str] = {}  # path → its masked form (pages repeat)
_ROTATED = re.compile(r"(?:[.-]\d+|[.-]\d{8}|\.gz|\.bz2|\.xz|\.old)+$")


@dataclass(slots=True)
class WebRequest:
    """One HTTP request as the baseline sees it (not the model's `engine.api.Request`)."""

    site: str
    method: str
    endpoint: str
    params: list[tuple[str, Value]]  # (name, value) in order, at most REQUEST_PARAMS_MAX
    client: str
    lines: list[int]
    dropped: int = 0  # parameters beyond REQUEST_PARAMS_MAX
    names: tuple[str, ...] = field(init=False)  # the distinct parameter names, in order (judge and learn both ask)
    identity: str = field(init=False)  # who support counts: the client's network for an address

    def __post_init__(self) -> None:
        self.names = tuple(dict.fromkeys(n for n, _ in self.params)) if self.params else ()
        self.identity = identity_of(self.client)


@lru_cache(maxsize=1 << 14)  # clients repeat line after line
def identity_of(client: str) -> str:
    """An address counts as its network (/24 IPv4, /64 IPv6): whoever holds a /64, or a handful of
    neighbouring addresses, is one client, so support is distinct networks, not addresses."""
    kind, _, value = client.partition(":")
    if kind != "src_ip":
        return client
    try:
        address = ipaddress.ip_address(value.split("%", 1)[0])
    except ValueError:
        return client
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    prefix = NETWORK_V4 if address.version == 4 else NETWORK_V6
    return f"net:{ipaddress.ip_network(f'{address}/{prefix}', strict=False)}"


def endpoint_key(method: str, path: str) -> str:
    """`GET /shop/item/12345/a1b2c3d4e5f6a7b8` → `GET /shop/item/{n}/{hex}`."""
    path = path.split("?", 1)[0].split("#", 1)[0][:512] or "/"
    masked = _MASKED.get(path)
    if masked is None:
        masked = _mask_path(path)
        if len(_MASKED) >= 50_000:
            _MASKED.clear()
        _MASKED[path] = masked
    return f"{method.upper()[:16]} {masked}"


def _mask_path(path: str) -> str:
    if not _ANY_DIGIT.search(path):  # ids, hashes and UUIDs all hold a digit
        return path
    return _DIGITS.sub("{n}", _HEX.sub("{hex}", _UUID.sub("{uuid}", path)))


def site_of(event: Event) -> str:
    """The site a request was made to: its virtual host, else the log it came from (rotations folded)."""
    vhost = event.fields.get("vhost") or event.fields.get("host_header")
    if isinstance(vhost, str) and vhost:
        return vhost.lower()[:200]
    return _log_site(event.source)


@lru_cache(maxsize=1024)  # every line of a log asks
def _log_site(source: str) -> str:
    return _ROTATED.sub("", source.rsplit("/", 1)[-1]) or source


def _params(query: str) -> tuple[list[tuple[str, Value]], int]:
    if not query:  # most requests (pages, scripts, images) have none
        return [], 0
    pairs = [part for part in query.split("&", REQUEST_PARAMS_MAX) if part]
    kept = []
    for part in pairs[:REQUEST_PARAMS_MAX]:
        name, _, value = part.partition("=")
        if "%" in name or "+" in name:
            name = decoded(name[: NAME_MAX * 3]).decode("latin-1")
        kept.append((name[:NAME_MAX], Value.of(value)))
    dropped = query.count("&") + 1 - len(kept) if len(pairs) > REQUEST_PARAMS_MAX else 0
    return kept, max(0, dropped)


def _client(event: Event, session: str | None = None) -> str:
    for name in ("src_ip", "user"):
        value = event.fields.get(name)
        if isinstance(value, str) and value and value != "-":
            return f"{name}:{value}"
    if session:
        return f"session:{session}"
    return f"request:{event.source}:{event.line_no}"  # nothing tells clients apart: each request is its own


def session_of(cookie: str) -> str:
    """The session id a Cookie header carries (the whole header when no known session cookie is in it)."""
    for part in cookie.split(";"):
        name, _, value = part.strip().partition("=")
        if name.lower() in SESSION_COOKIES and value:
            return value[:128]
    return cookie[:256]


def requests_of(events: Iterable[Event], fmt: str) -> Iterator[WebRequest]:
    """The requests a window holds. Raw HTTP dumps (`http_request`) are assembled from their lines."""
    if fmt == "http_request":
        yield from _dumped_requests(events)
        return
    for event in events:
        request = _logged_request(event)
        if request is not None:
            yield request


def _logged_request(event: Event, session: str | None = None) -> WebRequest | None:
    method, path = event.fields.get("method"), event.fields.get("path")
    if not (isinstance(method, str) and isinstance(path, str) and path):
        return None
    query = path.split("?", 1)[1] if "?" in path else ""
    params, dropped = _params(query)
    return WebRequest(site=site_of(event), method=method, endpoint=endpoint_key(method, path), params=params,
                   client=_client(event, session), lines=[event.line_no], dropped=dropped)


@dataclass(slots=True)
class _Dump:
    """One raw request being read: its request line, then a Cookie header, then maybe a body."""

    line: Event
    session: str | None = None
    body: Event | None = None
    lines: list[int] = field(default_factory=list)

    def request(self) -> WebRequest | None:
        request = _logged_request(self.body or self.line, self.session)
        if request is not None:
            request.lines = sorted({self.line.line_no, *([self.body.line_no] if self.body else [])})
        return request


def _dumped_requests(events: Iterable[Event]) -> Iterator[WebRequest]:
    current: _Dump | None = None
    for event in events:
        fields = event.fields
        if event.format == "access" and "path" in fields and "body" not in fields:
            if current is not None and (request := current.request()) is not None:
                yield request
            current = _Dump(event)
        elif current is None:
            continue
        elif event.format == "http_header" and fields.get("header") == "cookie":
            current.session = session_of(str(fields.get("value", "")))
        elif "body" in fields:
            current.body = event
    if current is not None and (request := current.request()) is not None:
        yield request


# ---- profiles ---------------------------------------------------------------------------------

class EndpointProfile:
    """One endpoint of one site: its clients, requests, parameters and their values."""

    def __init__(self) -> None:
        self.support = Support(ENDPOINT_K)
        self.requests = 0
        self.params: dict[str, ValueModel] = {}
        self.presence: dict[str, int] = {}  # parameter → requests that carried it
        self.pending: dict[str, Support] = {}  # parameter names seen only in deviating requests
        self.accepted: set[str] = set()  # names an analyst accepted

    @property
    def warm(self) -> bool:
        return self.support.clients() >= ENDPOINT_WARMUP

    def clients(self) -> int:
        """Distinct clients (the sketch's estimate, never more than the requests it counted)."""
        return min(self.support.clients(), self.requests)

    def usual_names(self) -> list[str]:
        return sorted((n for n, m in self.params.items() if self._known(n)),
                      key=lambda n: -self.params[n].support.clients())

    def _known(self, name: str) -> bool:
        model = self.params.get(name)
        return name in self.accepted or (model is not None and model.support.clients() >= NAME_MIN)

    def judge(self, request: WebRequest, where: str) -> list[Deviation]:
        out = [self._unknown_name(request, name, where) for name in request.names
               if not self._known(name) and not self._promotes(name, client_id(request))]
        out += self._missing(request, where)
        out += self._values(request, where)
        if request.dropped:
            out.append(_deviation(request, "web-param", "structure", where, "too-many", "",
                                  f"{len(request.params) + request.dropped} parameters in one request"))
        return out

    def _unknown_name(self, request: WebRequest, name: str, where: str) -> Deviation:
        usual = self.usual_names()
        shown = ", ".join(usual[:6]) + (f" (+{len(usual) - 6})" if len(usual) > 6 else "")
        return _deviation(request, "web-param", "structure", where, "name", name,
                          f"parameter {name!r} never seen on {where} in {self.requests:,} requests from "
                          f"{self.clients():,} clients; usual names: {shown or 'none'}")

    def _missing(self, request: WebRequest, where: str) -> list[Deviation]:
        if self.requests < ENDPOINT_WARMUP:
            return []
        expected = [n for n, seen in self.presence.items()
                    if seen >= PRESENT_SHARE * self.requests and self._known(n) and n not in request.names]
        if not expected:
            return []
        return [_deviation(request, "web-param", "structure", where, "missing", ",".join(sorted(expected)),
                           f"parameter(s) {', '.join(sorted(expected))} missing: present in "
                           f"{min(self.presence[n] for n in expected):,} of {self.requests:,} requests to {where}")]

    def _values(self, request: WebRequest, where: str) -> list[Deviation]:
        out = []
        for name, value in request.params:
            model = self.params.get(name)
            if model is None or model.support.clients() < NAME_MIN:
                continue
            for found in model.judge(value, name):
                deviation = _deviation(request, "web-value", "value", where, found.kind, name,
                                       f"{found.text} ({model.support.clients():,} clients' values of {where})")
                deviation.extra["param"] = name
                out.append(deviation)
        return out

    def learn_ops(self, request: WebRequest, client: int, *, skip: set[str] = frozenset(),
                  trusted: bool = False, teach: bool = True) -> list[Op]:
        """What learning the request changes, decided on this profile: count it; learn each parameter's
        value except those in `skip` (deviating values); a name new to a warm endpoint waits as pending
        until PROMOTE clients used it, unless the data is `trusted` (history an analyst chose). The
        same operations are applied to the profile and to the delta a store merges (`apply`). A
        request that may not `teach` (its client has taught enough, or deviated) is only counted."""
        ops: list[Op] = [Count(client, request.names)]
        if not teach:
            return ops
        for name, value in request.params:
            if name in skip:
                continue
            if not trusted and self.warm and name not in self.params and not self._known(name):
                if not self._promotes(name, client):
                    ops.append(Pend(name, client))
                    continue
                waiting = self._waiting(name, client)
                ops.append(Promote(name, tuple(waiting.hashes)))  # it starts with the clients that used it
            ops.append(LearnValue(name, value, client))
        return ops

    def _waiting(self, name: str, client: int) -> Support:
        waiting = Support(PENDING_K, self.pending[name].hashes if name in self.pending else None)
        waiting.add(client)
        return waiting

    def _promotes(self, name: str, client: int) -> bool:
        """Would this client's request make a pending name usual (enough clients have used it)?"""
        return self.warm and self._waiting(name, client).clients() >= PROMOTE

    def apply(self, ops: Sequence[Op]) -> None:
        for op in ops:
            match op:
                case Count(client, names):
                    self.support.add(client)
                    self.requests += 1
                    for name in names:
                        self.presence[name] = self.presence.get(name, 0) + 1
                case Pend(name, client):
                    self.pending.setdefault(name, Support(PENDING_K)).add(client)
                case Promote(name, clients):
                    self.pending.pop(name, None)
                    self.params.setdefault(name, ValueModel()).support.merge(Support(PENDING_K, list(clients)))
                case LearnValue(name, value, client):
                    self.params.setdefault(name, ValueModel()).learn(value, client)
                case _:
                    raise TypeError(f"{op!r} is not an endpoint operation")
        self._cap()

    def _cap(self) -> None:
        if len(self.params) <= PARAMS_MAX and len(self.pending) <= PARAMS_MAX:  # as nearly always
            return
        for mapping, clients in ((self.params, lambda n: self.params[n].support.clients()),
                                 (self.pending, lambda n: self.pending[n].clients())):
            if len(mapping) > PARAMS_MAX:
                for name in sorted(mapping, key=clients)[: len(mapping) - PARAMS_MAX]:  # the least supported
                    del mapping[name]
                    self.presence.pop(name, None)

    def merge(self, other: EndpointProfile) -> None:
        self.support.merge(other.support)
        self.requests += other.requests
        for name, model in other.params.items():
            if name in self.params:
                self.params[name].merge(model)
            else:
                self.params[name] = model
        for name, count in other.presence.items():
            self.presence[name] = self.presence.get(name, 0) + count
        for name, support in other.pending.items():
            self.pending.setdefault(name, Support(PENDING_K)).merge(support)
        self.accepted |= other.accepted
        for name in [n for n in self.pending if self._known(n)]:  # promoted on another host meanwhile
            del self.pending[name]
        self._cap()

    def weight(self) -> int:
        return self.support.clients()

    def to_json(self) -> dict:
        return {"clients": self.support.to_json(), "requests": self.requests,
                "params": {n: m.to_json() for n, m in self.params.items()}, "presence": self.presence,
                "pending": {n: s.to_json() for n, s in self.pending.items()}, "accepted": sorted(self.accepted)}

    @classmethod
    def from_json(cls, data: dict) -> EndpointProfile:
        profile = cls()
        profile.support = Support.from_json(ENDPOINT_K, data.get("clients"))
        profile.requests = int(data["requests"])
        profile.params = {n: ValueModel.from_json(m) for n, m in (data.get("params") or {}).items()}
        profile.presence = dict(data.get("presence") or {})
        profile.pending = {n: Support.from_json(PENDING_K, s) for n, s in (data.get("pending") or {}).items()}
        profile.accepted = set(data.get("accepted") or ())
        return profile


class SiteProfile:
    """A site's clients, how many of its endpoints were requested once (singletons), and the
    endpoints seen only in deviating requests (pending)."""

    def __init__(self) -> None:
        self.support = Support(SITE_K)
        self.requests = 0
        self.singletons = 0
        self.pending: dict[str, Support] = {}

    @property
    def warm(self) -> bool:
        return self.support.clients() >= SITE_WARMUP

    @property
    def new_endpoint_chance(self) -> float:
        """Good-Turing's estimate of the chance that the next request asks for an unseen endpoint."""
        return self.singletons / self.requests if self.requests else 1.0

    @property
    def endpoints_judged(self) -> bool:
        return self.warm and self.new_endpoint_chance < NEW_ENDPOINT_CHANCE

    def learn_ops(self, client: int, endpoint: str | None = None) -> list[Op]:
        """Count the client; an `endpoint` the site does not know waits as pending until PROMOTE
        clients asked for it (then "promote": the caller starts its profile)."""
        ops: list[Op] = [Count(client)]
        if endpoint is not None:
            waiting = Support(PENDING_K, self.pending[endpoint].hashes if endpoint in self.pending else None)
            waiting.add(client)
            ops.append(Pend(endpoint, client) if waiting.clients() < PROMOTE else Promote(endpoint))
        return ops

    def apply(self, ops: Sequence[Op]) -> None:
        for op in ops:
            match op:
                case Count(client):
                    self.support.add(client)
                    self.requests += 1
                case Single(change):
                    self.singletons += change
                case Pend(endpoint, client):
                    self.pending.setdefault(endpoint, Support(PENDING_K)).add(client)
                case Promote(endpoint):
                    self.pending.pop(endpoint, None)
                case _:
                    raise TypeError(f"{op!r} is not a site operation")
        if len(self.pending) > PENDING_MAX:
            for endpoint in sorted(self.pending, key=lambda e: self.pending[e].clients())[: len(self.pending) - PENDING_MAX]:
                del self.pending[endpoint]

    def merge(self, other: SiteProfile) -> None:
        self.support.merge(other.support)
        self.requests += other.requests
        self.singletons += other.singletons
        for endpoint, support in other.pending.items():
            self.pending.setdefault(endpoint, Support(PENDING_K)).merge(support)

    def weight(self) -> int:
        return self.support.clients()

    def to_json(self) -> dict:
        return {"clients": self.support.to_json(), "requests": self.requests, "singletons": self.singletons,
                "pending": {e: s.to_json() for e, s in self.pending.items()}}

    @classmethod
    def from_json(cls, data: dict) -> SiteProfile:
        profile = cls()
        profile.support = Support.from_json(SITE_K, data.get("clients"))
        profile.requests = int(data["requests"])
        profile.singletons = int(data.get("singletons", 0))
        profile.pending = {e: Support.from_json(PENDING_K, s) for e, s in (data.get("pending") or {}).items()}
        return profile


def _deviation(request: WebRequest, kind: str, family: str, where: str, feature: str, name: str, text: str) -> Deviation:
    # One crafted request — a renamed parameter, an odd value, a page the site never served (forced
    # browsing) — is an attempt on the application; many paths from one client are the scan rules' job.
    return Deviation(kind=kind, family=family, category="web_attack", techniques=["T1190"],
                     key=f"{request.client.split(':', 1)[-1]} {where}",
                     ref=str(Ref("web", request.site, (request.endpoint, feature, name))), text=text,
                     lines=list(request.lines))


def unknown_endpoint(request: WebRequest, site: SiteProfile, endpoints: int) -> Deviation:
    # keyed by the client alone: one client's sweep of unknown pages is one record, not one per page
    return _deviation(request, "web-endpoint", "endpoint", "(pages never served before)", "endpoint", "",
                      f"{request.endpoint} never served by {request.site} before: {endpoints:,} known endpoints, "
                      f"{site.requests:,} requests from {min(site.support.clients(), site.requests):,} clients, "
                      f"{site.new_endpoint_chance:.1%} of them to a page asked for once")


def judge_request(request: WebRequest, profile: EndpointProfile) -> list[Deviation]:
    """An endpoint's deviations for one request, with attack syntax of the path's values noted."""
    deviations = profile.judge(request, request.endpoint)
    if deviations and any(attack_syntax(value.data) for _, value in request.params):
        for deviation in deviations:
            deviation.attack_syntax = True
    return deviations


def client_id(request: WebRequest) -> int:
    return client_hash(request.identity)

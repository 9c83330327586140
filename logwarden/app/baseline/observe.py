"""Baselines of normal, learned from the logs themselves without labels, kept in the store.

`Baseline.observe(window, miner)` judges a window against what is known (web requests per site
and endpoint, message kinds per format and program, first-seen activity per host) and then learns
from it; the deviations come back as `Deviation`s, which the pipeline turns into `lw-baseline-*`
signals and the digest shows the model with their baseline context. Modes: `judge` (analyze and
watch: judge, then learn what did not deviate — deviating parts wait as pending), `learn`
(`logwarden baseline learn`: history an analyst chose, learned whole, nothing judged) and `off`.

Profiles are rows (kind, scope, key) → JSON. A run loads a scope's rows the first time it meets
the scope, keeps what it learns both in them and in a *delta*, and `flush(tx)` merges the deltas
into the stored rows inside the pipeline's transaction — so several watchers on several hosts
extend one baseline without overwriting each other. Muted refs are never reported; accepted
refs join the baseline.

Owns the orchestration; the profiles live in web.py, templates.py and entities.py, their rows in
rows.py. Knows nothing of SQL (the store is a `ProfileRows`) or of records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from logwarden.app.baseline import rows as profiles
from logwarden.app.baseline.deviation import Deviation, Ref, settle_levels, to_signal
from logwarden.app.baseline.entities import (
    IMAGE_CALLS,
    EntityStats,
    calls_key,
    entities_of,
    entity_key,
    first_seen,
    host_warm,
)
from logwarden.app.baseline.ops import Op, Pend, Single
from logwarden.app.baseline.rows import Profile
from logwarden.app.baseline.sketch import Age
from logwarden.app.baseline.templates import day_of, new_clusters, novelty, scope_of, scope_warm
from logwarden.app.baseline.web import (
    EndpointProfile,
    SiteProfile,
    WebRequest,
    client_id,
    judge_request,
    requests_of,
    unknown_endpoint,
)
from logwarden.app.events import Signal
from logwarden.app.mine import SourceMiner, Window
from logwarden.errors import InputError

MODES = ("judge", "learn", "off")
WEB_FORMATS = frozenset(("access", "http_request", "w3c", "aws_lb", "json"))
ENTITY_FORMATS = frozenset(("windows", "syslog", "rfc5424"))
# Requests per client and endpoint whose values one judged run learns: a client that floods an
# endpoint, or ramps a value's length a little at a time, teaches no more than a few ordinary ones.
TEACH_MAX = 8
RUN_CLIENTS_MAX = 200_000  # (client, endpoint) pairs a run remembers for that (then it starts over)


class ProfileRows(Protocol):
    """Where profiles are kept (the store): rows (kind, scope, key) → JSON."""

    def baseline_rows(self, kind: str, scope: str) -> dict[str, dict]: ...

    def baseline_mutes(self) -> set[str]: ...


class Baseline:
    """The baseline a run judges against and learns into (see the module's docstring)."""

    def __init__(self, rows: ProfileRows | None, *, mode: str = "judge"):
        if mode not in MODES:
            raise InputError(f"baseline mode {mode!r}: choose one of {', '.join(MODES)}")
        self.mode = mode
        self._rows = rows
        self._current: dict[tuple[str, str, str], Any] = {}  # (kind, scope, key) → its Profile
        self._delta: dict[tuple[str, str, str], Any] = {}
        self._loaded: set[tuple[str, str]] = set()
        self._counts: dict[tuple[str, str], int] = {}  # rows per (kind, scope), for "N known endpoints"
        self._mutes = rows.baseline_mutes() if rows is not None and mode != "off" else set()
        self.deviations = 0
        self._taught: dict[tuple[str, str, int], int] = {}  # (site, endpoint, client) → requests learned
        self._deviant: set[int] = set()  # clients that deviated in this run: they teach nothing more

    # ---- the window ------------------------------------------------------------------------

    def observe(self, window: Window, miner: SourceMiner) -> list[Deviation]:
        """Judge the window (mode `judge`), then learn from it. Returns its deviations, muted ones left out."""
        if self.mode == "off":
            return []
        found: list[Deviation] = []
        if window.format in WEB_FORMATS:
            found += self._web(window)
        if window.format not in ("access", "http_request", "w3c", "aws_lb"):
            found += self._templates(window, miner)
        if window.format in ENTITY_FORMATS:
            found += self._entities(window)
        kept = [d for d in found if not self._muted(d.ref)]
        self.deviations += len(kept)
        return kept

    def signals(self, window: Window, miner: SourceMiner) -> list[Signal]:
        return [to_signal(d, window.source) for d in self.observe(window, miner)]

    @property
    def judging(self) -> bool:
        return self.mode == "judge"

    # ---- web ---------------------------------------------------------------------------------

    def _web(self, window: Window) -> list[Deviation]:
        """Judge and learn the window's requests one by one, each against what the ones before it
        taught. The profiles they touch are looked up once a window (flush comes between windows)."""
        learners: dict[tuple[str, str, str], _Learner] = {}
        deviations: list[Deviation] = []
        for request in requests_of(window.events, window.format):
            deviations += self._request(request, learners)
        return deviations

    def _request(self, request: WebRequest, learners: dict[tuple[str, str, str], _Learner]) -> list[Deviation]:
        client = client_id(request)
        site = self._learner("web-site", request.site, "", learners)
        known = ("web", request.site, request.endpoint) in learners or \
            self._peek("web", request.site, request.endpoint) is not None
        deviations: list[Deviation] = []
        if self.judging and not known and site.profile.endpoints_judged:
            ops = site.profile.learn_ops(client, request.endpoint)
            site.learn(ops)
            if isinstance(ops[-1], Pend):  # an unknown endpoint not yet asked for by enough clients
                deviations = [unknown_endpoint(request, site.profile, self._count("web", request.site))]
                settle_levels(deviations)
                self._deviates(client)
                return deviations
        else:
            site.learn(site.profile.learn_ops(client))
        endpoint = self._learner("web", request.site, request.endpoint, learners)
        if self.judging and site.profile.warm and endpoint.profile.warm:
            deviations = judge_request(request, endpoint.profile)
            if deviations:
                settle_levels(deviations)
        skip = {d.extra["param"] for d in deviations if "param" in d.extra}
        teach = self._teaches(request, client)  # a first deviation still counts towards its pending names
        if deviations:
            self._deviates(client)
        endpoint.learn(endpoint.profile.learn_ops(request, client, skip=skip, trusted=self.mode == "learn",
                                                  teach=teach))
        if endpoint.profile.requests <= 2:  # a first request makes a singleton, a second unmakes it
            site.learn([Single(1 if endpoint.profile.requests == 1 else -1)])
        return deviations

    def _deviates(self, client: int) -> None:
        if len(self._deviant) >= RUN_CLIENTS_MAX:
            self._deviant.clear()
        self._deviant.add(client)

    def _teaches(self, request: WebRequest, client: int) -> bool:
        """May this request's values be learned? Always from history an analyst chose (`learn`);
        in a judged run, not from a client that deviated, nor beyond TEACH_MAX of one client's
        requests to one endpoint — so a run's deviating traffic never becomes the next run's normal."""
        if self.mode == "learn":
            return True
        if client in self._deviant:
            return False
        if len(self._taught) >= RUN_CLIENTS_MAX:
            self._taught.clear()
        address = (request.site, request.endpoint, client)
        taught = self._taught[address] = self._taught.get(address, 0) + 1
        return taught <= TEACH_MAX

    def _learner(self, kind: str, scope: str, key: str, learners: dict[tuple[str, str, str], _Learner]) -> _Learner:
        found = learners.get((kind, scope, key))
        if found is None:
            found = learners[(kind, scope, key)] = _Learner(*self._both(kind, scope, key))
        return found

    # ---- message kinds ---------------------------------------------------------------------------

    def _templates(self, window: Window, miner: SourceMiner) -> list[Deviation]:
        fresh = new_clusters(window, miner) if self.judging else set()
        groups: dict[int, tuple[list[int], set[str], Any]] = {}
        for event, cid in zip(window.events, window.cluster_ids):
            lines, hosts, _ = groups.setdefault(cid, ([], set(), event))
            lines.append(event.line_no)
            hosts.add(event.host or "-")
        deviations = []
        for cid, (lines, hosts, event) in groups.items():
            scope, template, day = scope_of(event, window.format, window.source), miner.template(cid), day_of(event)
            age = self._profile("template-scope", scope, "")
            if cid in fresh and scope_warm(age) and self._peek("template", scope, template) is None:
                deviations.append(novelty(scope, template, age, self._count("template", scope), lines))
            for target in self._both("template-scope", scope, ""):
                target.learn(len(lines), [day] if day is not None else [])
            for stats in self._both("template", scope, template):
                stats.learn(len(lines), hosts, day)
        for deviation in deviations:
            settle_levels([deviation])
        return deviations

    # ---- first-seen entities -------------------------------------------------------------------

    def _entities(self, window: Window) -> list[Deviation]:
        found: dict[str, Deviation] = {}
        for event in window.events:
            entities = entities_of(event)
            if not entities:
                continue
            host, day = entities[0].host, day_of(event)
            age = self._profile("host", host, "")
            for entity in entities:
                if self._first_seen(entity, age):
                    if entity_key(entity) in found:
                        found[entity_key(entity)].lines.append(event.line_no)
                    else:
                        found[entity_key(entity)] = first_seen(entity, age, event.line_no)
                for key in filter(None, (entity_key(entity), calls_key(entity))):
                    for stats in self._both("entity", host, key):
                        stats.learn(day)
        for host, events, days in _hosts_of(window):
            for age in self._both("host", host, ""):
                age.learn(events, days)
        deviations = list(found.values())
        for deviation in deviations:
            settle_levels([deviation])
        return deviations

    def _first_seen(self, entity, age: Age) -> bool:
        """Never seen on a host with history; a command line only for a program the host runs often."""
        if not (self.judging and host_warm(age)) or self._peek("entity", entity.host, entity_key(entity)) is not None:
            return False
        calls = calls_key(entity)
        return calls is None or (self._peek("entity", entity.host, calls) or EntityStats()).count >= IMAGE_CALLS

    # ---- analyst actions -----------------------------------------------------------------------

    def accept(self, ref: str) -> str:
        """Make what a deviation's ref names part of the baseline; returns what was accepted."""
        match Ref.parse(ref):
            case Ref("web", site, (endpoint, "endpoint", *_)):
                known = self._profile("web-site", site, "")
                for profile in self._both("web-site", site, ""):
                    profile.pending.pop(endpoint, None)
                self._profile("web", site, endpoint)
                self._delta.setdefault(("web", site, endpoint), EndpointProfile())
                return f"endpoint {endpoint} of {site} ({known.requests:,} requests known)"
            case Ref("web", site, (endpoint, _feature, name, *_)):
                for profile in self._both("web", site, endpoint):
                    profile.accepted.add(name)
                    profile.pending.pop(name, None)
                return f"parameter {name!r} of {endpoint} on {site}"
            case Ref("template", scope, (template, *_)):
                for stats in self._both("template", scope, template):
                    stats.learn(1, (), None)
                return f"message kind {template!r} of {scope}"
            case Ref("entity", host, (kind, combo, *_)):
                for stats in self._both("entity", host, f"{kind} {combo}"):
                    stats.learn(None)
                return f"{kind} {combo!r} on {host}"
        raise InputError(f"{ref!r} is not a baseline deviation ref (they look like web|site|GET /path|name|param)")

    def add_rows(self, rows: Iterable[dict]) -> int:
        """Exported rows (kind, scope, key, data) to merge into the store at the next flush, each
        checked by reading it back into its profile (a bad row is an InputError, nothing kept; a row
        exported before the readable keys is read as it was meant)."""
        added: dict[tuple[str, str, str], Profile] = {}
        for number, row in enumerate(rows, start=1):
            try:
                kind, scope, key = str(row["kind"]), str(row["scope"]), str(row["key"])
                added[(kind, scope, key)] = profiles.load(kind, row["data"])
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                raise InputError(f"baseline row {number}: not a logwarden baseline row ({type(exc).__name__}: "
                                 f"{str(exc)[:120]}). Fix: import a file written by `logwarden baseline export`.")
        for address, profile in added.items():
            delta = self._delta.get(address)
            if delta is None:
                self._delta[address] = profile
            else:
                delta.merge(profile)
        return len(added)

    def _muted(self, ref: str) -> bool:
        return any(ref == mute or ref.startswith(mute + "|") for mute in self._mutes)

    # ---- rows ------------------------------------------------------------------------------------

    def _load(self, kind: str, scope: str) -> None:
        if (kind, scope) in self._loaded:
            return
        self._loaded.add((kind, scope))
        if self._rows is None:
            return
        for key, data in self._rows.baseline_rows(kind, scope).items():
            self._current[(kind, scope, key)] = profiles.load(kind, data)
            self._counts[(kind, scope)] = self._counts.get((kind, scope), 0) + 1

    def _peek(self, kind: str, scope: str, key: str):
        self._load(kind, scope)
        return self._current.get((kind, scope, key))

    def _profile(self, kind: str, scope: str, key: str):
        found = self._peek(kind, scope, key)
        if found is None:
            found = self._current[(kind, scope, key)] = profiles.new(kind)
            self._counts[(kind, scope)] = self._counts.get((kind, scope), 0) + 1
        return found

    def _count(self, kind: str, scope: str) -> int:
        self._load(kind, scope)
        return self._counts.get((kind, scope), 0)

    def _both(self, kind: str, scope: str, key: str) -> Iterable[Any]:
        """The profile and its delta: what is learned goes to both (the delta is what flush merges)."""
        current = self._profile(kind, scope, key)
        delta = self._delta.get((kind, scope, key))
        if delta is None:
            delta = self._delta[(kind, scope, key)] = profiles.new(kind)
        return (current, delta)

    def take_deltas(self) -> dict[tuple[str, str, str], Any]:
        deltas, self._delta = self._delta, {}
        return deltas

    def flush(self, tx) -> int:
        """Merge what was learned since the last flush into the stored rows (in `tx`); the merged
        rows become this run's view. Returns the rows written."""
        deltas = self.take_deltas()
        try:
            return self._merge(tx, deltas)
        except BaseException:  # the transaction is rolled back: what was learned waits for the next flush
            self._delta = {**deltas, **self._delta}
            raise

    def _merge(self, tx, deltas: dict[tuple[str, str, str], Any]) -> int:
        by_scope: dict[tuple[str, str], dict[str, Any]] = {}
        for (kind, scope, key), delta in deltas.items():
            by_scope.setdefault((kind, scope), {})[key] = delta
        for (kind, scope), rows in by_scope.items():
            stored = tx.baseline_rows(kind, scope, list(rows))
            merged: dict[str, Profile] = {}
            for key, delta in rows.items():
                base = profiles.load(kind, stored[key]) if key in stored else profiles.new(kind)
                base.merge(delta)
                merged[key] = base
                self._current[(kind, scope, key)] = base
            tx.put_baseline(kind, scope, {key: (m.to_json(), m.weight()) for key, m in merged.items()})
        return len(deltas)


class _Learner:
    """A web profile and its delta, learning the same operations (the delta is what flush merges)."""

    __slots__ = ("profile", "delta")

    def __init__(self, profile: EndpointProfile | SiteProfile, delta: EndpointProfile | SiteProfile):
        self.profile, self.delta = profile, delta

    def learn(self, ops: Sequence[Op]) -> None:
        self.profile.apply(ops)
        self.delta.apply(ops)


def _hosts_of(window: Window) -> list[tuple[str, int, list[int]]]:
    """(host, events, distinct days) of a window's events that name a host."""
    counts: dict[str, list] = {}
    for event in window.events:
        host = str(event.host or event.fields.get("Computer") or "-").lower()[:200]
        entry = counts.setdefault(host, [0, set()])
        entry[0] += 1
        if event.ts is not None:
            entry[1].add(event.ts.toordinal())
    return [(host, n, sorted(days)) for host, (n, days) in counts.items()]

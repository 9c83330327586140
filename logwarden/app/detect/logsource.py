"""Which Sigma logsource an event belongs to, and the field names Sigma rules use for it.

Owns the routing table (docs/FIELDS.md, "Sigma logsources"): an event gets a `Route` — the sets of
Sigma products, categories and services it belongs to, plus field aliases (Sigma's taxonomy name →
logwarden's field, or a function of the event) — computed once per distinct kind of event and
cached. A rule sees an event only when each part of the rule's logsource that is set is among the
event's. Every event also carries its logwarden format as a service (`service: generic`,
`service: apache_error`, …), and free-text formats the category `application`.

Windows tables come from pySigma's own pipelines (`pysigma-pipeline-windows`: service ↔ channel,
PowerShell categories, Security 4688/4657 as process_creation/registry with their field mapping;
`pysigma-pipeline-sysmon`: category ↔ Sysmon event id), inverted for events. Knows nothing about
rules or matching.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sigma.pipelines.common import windows_logsource_mapping
from sigma.pipelines.microsoftxdr.mappings import MICROSOFT_XDR_FIELD_MAPPINGS
from sigma.pipelines.sysmon.sysmon import sysmon_generic_logsource_eventid_mapping
from sigma.pipelines.windows.windows import (
    generic_logsource_to_windows_audit_event_mapping,
    windows_audit_pipeline,
    windows_generic_category_channel_mapping,
)
from sigma.processing.transformations import FieldMappingTransformation

from logwarden.app.events import Event
from logwarden.app.parse import FORMATS

Alias = str | Callable[[Event], Any]
TEXT_FORMATS = frozenset(("syslog", "rfc5424", "generic", "json", "apache_error"))


@dataclass(frozen=True, slots=True)
class Route:
    """The Sigma logsource of a kind of event and the field aliases that hold for it."""

    products: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()
    services: frozenset[str] = frozenset()
    aliases: tuple[tuple[str, Alias], ...] = ()
    # The detector looks a route up for every event: hashing its tuple of aliases each time cost
    # ~1.5 µs an event, so the hash is computed once.
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.products, self.categories, self.services, self.aliases)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple:  # a string's hash differs between processes: recompute it when unpickled
        return Route, (self.products, self.categories, self.services, self.aliases)

    def alias_map(self) -> dict[str, Alias]:
        return _alias_maps(self)

    def matches(self, product: str | None, category: str | None, service: str | None) -> bool:
        return ((product is None or product in self.products) and (category is None or category in self.categories)
                and (service is None or service in self.services))


@functools.lru_cache(maxsize=4096)
def _alias_maps(route: Route) -> dict[str, Alias]:
    return dict(route.aliases)


# --- Windows ---------------------------------------------------------------------------------


def _channel_services() -> dict[str, frozenset[str]]:
    services: dict[str, set[str]] = {}
    for service, channels in windows_logsource_mapping.items():
        for channel in [channels] if isinstance(channels, str) else channels:
            services.setdefault(channel.lower(), set()).add(service)
    return {channel: frozenset(names) for channel, names in services.items()}


def _sysmon_categories() -> dict[int, frozenset[str]]:
    by_id: dict[int, set[str]] = {}
    for category, ids in sysmon_generic_logsource_eventid_mapping.items():
        for event_id in [ids] if isinstance(ids, int) else ids:
            by_id.setdefault(event_id, set()).add(category)
    return {event_id: frozenset(names) for event_id, names in by_id.items()}


def _audit_field_maps() -> dict[str, dict[str, str]]:
    maps = {item.identifier: dict(item.transformation.mapping) for item in windows_audit_pipeline().items
            if isinstance(item.transformation, FieldMappingTransformation)}
    return {"process": maps["windows_audit_fieldmappings"], "registry": maps["windows_audit_registry_fieldmappings"]}


CHANNEL_SERVICES = _channel_services()
SYSMON_CATEGORIES = _sysmon_categories()
# (service, EventID) → category, for the categories pySigma maps onto a channel (ps_module, ps_script, …)
SERVICE_EVENT_CATEGORIES = {(info["service"], info["EventID"]): category
                            for category, info in windows_generic_category_channel_mapping.items()}
AUDIT_PROCESS_EVENT = generic_logsource_to_windows_audit_event_mapping["process_creation"]["EventID"]  # 4688
AUDIT_REGISTRY_EVENT = generic_logsource_to_windows_audit_event_mapping["registry_event"]["EventID"]  # 4657
AUDIT_FIELDS = _audit_field_maps()
_LINUX_SYSMON_CHANNEL = "linux-sysmon/operational"
_PROVIDER_SERVICES = {"microsoft-windows-security-auditing": "security", "microsoft-windows-sysmon": "sysmon",
                      "service control manager": "system", "microsoft-windows-powershell": "powershell",
                      "powershell": "powershell-classic", "microsoft-windows-windows defender": "windefend"}
_SYSMON_REGISTRY = {12: ("registry_add", "registry_delete"), 13: ("registry_set",), 14: ("registry_rename",)}


def _security_user(event: Event) -> str | None:
    """4688's account as Sysmon writes `User`: DOMAIN\\name."""
    fields = event.fields
    name = fields.get("SubjectUserName")
    if not name:
        return None
    domain = fields.get("SubjectDomainName")
    return f"{domain}\\{name}" if domain else str(name)


# registry roots as other sources write them → as Sysmon writes them (4657: \REGISTRY\…; Defender: HKEY_…)
_HIVES = (("\\REGISTRY\\MACHINE", "HKLM"), ("\\REGISTRY\\USER", "HKU"), ("HKEY_LOCAL_MACHINE", "HKLM"),
          ("HKEY_CURRENT_USER", "HKU"), ("HKEY_USERS", "HKU"), ("HKEY_CLASSES_ROOT", "HKCR"))


def _audit_registry_target(event: Event) -> str | None:
    """Sysmon's TargetObject for a 4657: the key as Sysmon abbreviates it plus the value's name
    (pySigma's audit pipeline maps it to ObjectName, the key alone, which no value rule matches)."""
    return _sysmon_registry_path(event.fields.get("ObjectName"), event.fields.get("ObjectValueName"))


def _sysmon_registry_path(key: Any, value: Any) -> str | None:
    """A registry key and value name written as Sysmon's TargetObject: `HKLM\\…\\key\\value`."""
    if not isinstance(key, str) or not key:
        return None
    for long, short in _HIVES:
        if key[:len(long)].upper() == long:
            key = short + key[len(long):]
            break
    return f"{key}\\{value}" if isinstance(value, str) and value and value != "-" else key


_WINDOWS_COMMON: tuple[tuple[str, Alias], ...] = (("Provider_Name", "Provider"),)
_AUDIT_PROCESS_ALIASES = _WINDOWS_COMMON + tuple(AUDIT_FIELDS["process"].items()) + (
    ("User", _security_user), ("ProcessId", "NewProcessId"), ("ParentProcessId", "ProcessId"))
_AUDIT_REGISTRY_ALIASES = _WINDOWS_COMMON + tuple(
    (k, v) for k, v in AUDIT_FIELDS["registry"].items() if k != "TargetObject") + tuple(
    (k, v) for k, v in AUDIT_FIELDS["process"].items() if k not in AUDIT_FIELDS["registry"]) + (
    ("TargetObject", _audit_registry_target), ("Details", "NewValue"))


_CANONICAL: dict[Route, Route] = {}


def _canonical(route: Route) -> Route:
    """One object per distinct route (equal routes come from different programs or channels'
    spellings): the detector's dispatch lookup then succeeds on identity, not a field-by-field
    comparison per event."""
    if len(_CANONICAL) >= 4096:
        _CANONICAL.clear()
    return _CANONICAL.setdefault(route, route)


_ROUTES_SEEN: dict[tuple, Route] = {}  # the route of each kind of event, by its raw values: one lookup (bounded)


def windows_route(event: Event) -> Route:
    fields = event.fields
    event_id = fields.get("EventID")
    detail = fields.get("OperationType") if event_id == AUDIT_REGISTRY_EVENT else (
        fields.get("EventType") if event_id == 12 else None)
    key = (fields.get("Channel"), fields.get("Provider"), event_id, detail)
    try:
        return _ROUTES_SEEN[key]
    except (KeyError, TypeError):  # TypeError: a JSON list or object where a name belongs
        pass
    route = _windows_route(str(key[0] or "").lower(), str(key[1] or "").lower(),
                           event_id if isinstance(event_id, int) else None, str(detail or ""))
    route = _canonical(route)
    try:
        if len(_ROUTES_SEEN) >= 4096:
            _ROUTES_SEEN.clear()
        _ROUTES_SEEN[key] = route
    except TypeError:
        pass
    return route


def _windows_route(channel: str, provider: str, event_id: int | None, detail: str) -> Route:
    services = set(CHANNEL_SERVICES.get(channel, ()))
    if not channel and provider in _PROVIDER_SERVICES:  # some exports drop the channel
        services.add(_PROVIDER_SERVICES[provider])
    product = "linux" if channel == _LINUX_SYSMON_CHANNEL or provider == "linux-sysmon" else "windows"
    sysmon = "sysmon" in services or product == "linux"
    if product == "linux":
        services.add("sysmon")
    categories: set[str] = set()
    aliases = _WINDOWS_COMMON
    if sysmon and event_id is not None:
        categories |= _sysmon_event_categories(event_id, detail)
    for service in list(services):
        if (service, event_id) in SERVICE_EVENT_CATEGORIES:
            categories.add(SERVICE_EVENT_CATEGORIES[(service, event_id)])
    if "security" in services and event_id == AUDIT_PROCESS_EVENT:
        categories.add("process_creation")
        aliases = _AUDIT_PROCESS_ALIASES
    elif "security" in services and event_id == AUDIT_REGISTRY_EVENT:
        categories |= _audit_registry_categories(detail)
        aliases = _AUDIT_REGISTRY_ALIASES
    return Route(frozenset((product,)), frozenset(categories), frozenset(services | {"windows"}), aliases)


def _sysmon_event_categories(event_id: int, detail: str) -> set[str]:
    categories = set(SYSMON_CATEGORIES.get(event_id, ()))
    if event_id == 12:  # one id for key/value creation and deletion: the EventType tells them apart
        categories.discard("registry_delete" if "delete" not in detail.lower() else "registry_add")
    return categories


# an .evtx read raw (evtx_dump) keeps 4657's OperationType as its message id, not the rendered text
_AUDIT_OPERATIONS = {"%%1904": "New registry value created", "%%1905": "Existing registry value modified",
                     "%%1906": "Registry value deleted"}


def _audit_registry_categories(operation: str) -> set[str]:
    operation = _AUDIT_OPERATIONS.get(operation.strip(), operation) if operation else operation
    found = {"registry_event"}
    for category in ("registry_set", "registry_add"):
        wanted = generic_logsource_to_windows_audit_event_mapping[category]["OperationType"]
        if operation and operation.lower() == str(wanted).lower():
            found.add(category)
    return found


# --- Linux syslog ------------------------------------------------------------------------------

_AUTH_PROGRAMS = frozenset((
    "sshd", "sudo", "su", "login", "passwd", "chpasswd", "chage", "useradd", "userdel", "usermod", "adduser",
    "deluser", "groupadd", "groupdel", "groupmod", "addgroup", "delgroup", "gpasswd", "newusers", "polkitd",
    "pkexec", "systemd-logind", "unix_chkpwd", "vsftpd", "proftpd", "pure-ftpd", "ftpd", "in.ftpd", "sftp-server",
    "internal-sftp", "crontab"))
_PROGRAM_SERVICES = {"sshd": ("sshd",), "sudo": ("sudo",), "cron": ("cron",), "crond": ("cron",),
                     "anacron": ("cron",), "crontab": ("cron",), "vsftpd": ("vsftpd",), "clamd": ("clamav",),
                     "freshclam": ("clamav",), "guacd": ("guacamole",)}


def program_name(program: str | None) -> str:
    """`sshd(pam_unix)` → sshd, `/usr/sbin/CRON` → cron."""
    name = (program or "").rsplit("/", 1)[-1].split("(", 1)[0]
    return name.lower()


@functools.lru_cache(maxsize=4096)
def _syslog_route(fmt: str, program: str | None) -> Route:
    """Cached by the program as the line writes it (`sshd`, `/usr/sbin/CRON`): one lookup an event."""
    name = program_name(program)
    services = {"syslog", fmt, *_PROGRAM_SERVICES.get(name, ())}
    if name in _AUTH_PROGRAMS:
        services.add("auth")
    return _canonical(Route(frozenset(("linux",)), frozenset(("application",)), frozenset(services)))


# --- web and other formats ------------------------------------------------------------------


def _target(event: Event) -> str | None:
    value = event.fields.get("path") or event.fields.get("request")
    return None if value is None else str(value)


def _stem(event: Event) -> str | None:
    target = _target(event)
    return None if target is None else target.split("?", 1)[0]


def _query(event: Event) -> str | None:
    target = _target(event)
    return target.split("?", 1)[1] if target and "?" in target else None


def _extension(event: Event) -> str | None:
    stem = (_stem(event) or "").rsplit("/", 1)[-1]
    return stem.rsplit(".", 1)[1] if "." in stem else None


def _url(event: Event) -> str | None:
    target, host = _target(event), event.fields.get("vhost")
    if target and host and target.startswith("/"):
        return f"http://{host}{target}"
    return target


# SigmaHQ's webserver rules use cs-uri-query for the whole request target (their own tests match
# `cs-uri-query|endswith: '/mgmt/tm/util/bash'`), so it maps onto `path`, undecoded as logged.
_WEB_ALIASES: tuple[tuple[str, Alias], ...] = (
    ("cs-method", "method"), ("c-method", "method"), ("cs-uri-query", "path"), ("cs-uri", "path"),
    ("cs-uri-stem", _stem), ("c-uri", _url), ("c-uri-query", _query), ("c-uri-stem", _stem),
    ("c-uri-extension", _extension), ("sc-status", "status"), ("cs-user-agent", "user_agent"),
    ("c-useragent", "user_agent"), ("cs(User-Agent)", "user_agent"), ("cs-referer", "referrer"),
    ("cs-referrer", "referrer"), ("cs(Referer)", "referrer"), ("cs-username", "user"), ("cs-host", "vhost"),
    ("cs(Host)", "vhost"), ("r-dns", "vhost"), ("c-ip", "src_ip"), ("sc-bytes", "bytes"),
    ("cs-bytes", "received_bytes"), ("cs-version", "protocol"), ("s-ip", "server_ip"),
    # Zeek's own http.log names, for zeek/http rules
    ("uri", "path"), ("status_code", "status"), ("host", "vhost"), ("id.orig_h", "src_ip"), ("id.resp_h", "dst_ip"))
_WEB_ROUTE = Route(frozenset(), frozenset(("webserver",)), frozenset(("access",)), _WEB_ALIASES)
_ZEEK_HTTP_ROUTE = Route(frozenset(("zeek",)), frozenset(("webserver",)), frozenset(("access", "http")), _WEB_ALIASES)
_CLOUDTRAIL_ROUTE = Route(frozenset(("aws",)), frozenset(), frozenset(("cloudtrail",)))
_AUDITD_ROUTE = Route(frozenset(("linux",)), frozenset(), frozenset(("auditd",)))
# An execve is a process creation: linux/process_creation rules (written for Sysmon for Linux) read
# it in their field names. A plain EXECVE record has no `exe` (it is in its SYSCALL record), so
# rules on Image do not match it; auoms' joined record has both.
_AUDITD_EXECVE_ROUTE = Route(frozenset(("linux",)), frozenset(("process_creation",)), frozenset(("auditd",)), (
    ("Image", "exe"), ("CommandLine", "cmdline"), ("CurrentDirectory", "cwd"), ("User", "user"),
    ("ProcessId", "pid"), ("ParentProcessId", "ppid"), ("LogonId", "auid")))


_GCP_ALIASES: tuple[tuple[str, Alias], ...] = (("gcp.audit.method_name", "protoPayload.methodName"),)
_M365_ALIASES: tuple[tuple[str, Alias], ...] = (("eventSource", "Workload"), ("eventName", "Operation"),
                                                ("status", "ResultStatus"))


# --- Microsoft Defender XDR (advanced hunting / Sentinel) Device* tables ------------------------

# A row's table, from Sentinel's `Type` column or, in advanced hunting's own export, its ActionType
_XDR_ACTIONS = {
    "ProcessCreated": "DeviceProcessEvents", "ImageLoaded": "DeviceImageLoadEvents",
    **dict.fromkeys(("FileCreated", "FileModified", "FileRenamed", "FileDeleted"), "DeviceFileEvents"),
    **dict.fromkeys(("RegistryValueSet", "RegistryKeyCreated", "RegistryKeyDeleted", "RegistryValueDeleted",
                     "RegistryKeyRenamed"), "DeviceRegistryEvents"),
    **dict.fromkeys(("ConnectionSuccess", "ConnectionFailed", "ConnectionAttempt", "ConnectionRequest",
                     "ConnectionFound", "InboundConnectionAccepted", "ListeningConnectionCreated"),
                    "DeviceNetworkEvents")}
_XDR_CATEGORIES = {"DeviceProcessEvents": ("process_creation",), "DeviceImageLoadEvents": ("image_load",),
                   "DeviceFileEvents": ("file_event",), "DeviceRegistryEvents": ("registry_event",),
                   "DeviceNetworkEvents": ("network_connection",)}
_XDR_ACTION_CATEGORIES = {"FileDeleted": "file_delete", "FileRenamed": "file_rename", "FileModified": "file_change",
                          "RegistryValueSet": "registry_set", "RegistryKeyCreated": "registry_add",
                          "RegistryKeyDeleted": "registry_delete", "RegistryValueDeleted": "registry_delete",
                          "RegistryKeyRenamed": "registry_rename"}


def _xdr_registry_target(event: Event) -> str | None:
    """Sysmon's TargetObject (hive abbreviated, key and value name) from Defender's key and value."""
    return _sysmon_registry_path(event.fields.get("RegistryKey"), event.fields.get("RegistryValueName"))


def _xdr_aliases(table: str) -> tuple[tuple[str, Alias], ...]:
    """pySigma's Microsoft XDR field mapping for the table (Sigma field → Defender column)."""
    mapping: dict[str, Alias] = {sigma: column for sigma, column in
                                 MICROSOFT_XDR_FIELD_MAPPINGS.table_mappings[table].items() if isinstance(column, str)}
    if table == "DeviceRegistryEvents":
        mapping["TargetObject"] = mapping["ObjectName"] = _xdr_registry_target
    return tuple(mapping.items())


_XDR_ALIASES = {table: _xdr_aliases(table) for table in _XDR_CATEGORIES}


def _xdr_route(fields: dict) -> Route | None:
    action = fields.get("ActionType")
    table = fields.get("Type") if fields.get("Type") in _XDR_CATEGORIES else _XDR_ACTIONS.get(action)
    if table is None or "DeviceName" not in fields:
        return None
    extra = _XDR_ACTION_CATEGORIES.get(action)
    categories = _XDR_CATEGORIES[table] + ((extra,) if extra else ())
    return _route("windows", categories, ("microsoft365defender",), _XDR_ALIASES[table])


def _json_route(event: Event) -> Route:
    fields = event.fields
    has = fields.__contains__
    if has("ActionType") and (xdr := _xdr_route(fields)) is not None:
        return xdr
    if has("kind") and str(fields.get("apiVersion", "")).startswith("audit.k8s.io"):
        return _route("kubernetes", ("application",), ("audit",))
    if has("protoPayload.methodName") or has("protoPayload.serviceName"):
        return _route("gcp", (), ("gcp.audit",), _GCP_ALIASES)
    if has("eventType") and has("actor") and has("outcome"):
        return _route("okta", (), ("okta",))
    if has("Workload") and has("Operation"):
        workload = str(fields.get("Workload") or "").lower()
        extra = {"exchange": "exchange", "securitycompliancecenter": "threat_management"}.get(workload)
        return _route("m365", (), ("audit",) + ((extra,) if extra else ()), _M365_ALIASES)
    azure = _azure_service(fields)
    if azure is not None:
        return _route("azure", (), (azure,), _AZURE_AUDIT_ALIASES if azure == "auditlogs" else ())
    if has("uid") and has("id.orig_h"):
        return _route("zeek", (), _zeek_services(fields))
    if has("action") and has("actor") and (has("org") or has("business") or has("repo")):
        return _route("github", (), ("audit",))
    return _route(None, ("application",), ())


_ACTIVITY_KEYS = ("properties.message", "properties.activityDisplayName", "ActivityDisplayName",
                  "activityDisplayName", "OperationName", "operationName")


def _azure_activity(event: Event) -> str | None:
    """What SigmaHQ's Entra ID audit rules call `properties.message`: the activity's display name,
    wherever the export keeps it (Log Analytics' AuditLogs table pads some with a trailing space)."""
    fields = event.fields
    value = next((fields[k] for k in _ACTIVITY_KEYS if isinstance(fields.get(k), str) and fields[k]), None)
    return value.strip() if value is not None else None


_AZURE_AUDIT_ALIASES: tuple[tuple[str, Alias], ...] = (("properties.message", _azure_activity),)


def _azure_service(fields: dict) -> str | None:
    category = str(fields.get("category") or fields.get("Category") or "").lower()
    by_category = {"signinlogs": "signinlogs", "noninteractiveusersigninlogs": "signinlogs", "auditlogs": "auditlogs",
                   "administrative": "activitylogs", "security": "activitylogs", "policy": "activitylogs",
                   "userriskevents": "riskdetection", "riskyusers": "riskdetection", "auditevent": "activitylogs"}
    if category in by_category and ("operationName" in fields or "resultType" in fields or "time" in fields):
        return by_category[category]
    if "OperationNameValue" in fields or ("operationName" in fields and ("resourceId" in fields or "caller" in fields)):
        return "activitylogs"
    if "operationName.value" in fields:
        return "activitylogs"
    if "userPrincipalName" in fields and ("appDisplayName" in fields or "AppDisplayName" in fields
                                          or "status.errorCode" in fields):  # Graph's signIn export
        return "signinlogs"
    if "activityDisplayName" in fields or "ActivityDisplayName" in fields:
        return "auditlogs"
    return None


def _zeek_services(fields: dict) -> tuple[str, ...]:
    path = fields.get("_path")
    if isinstance(path, str) and path:
        return (path,)
    probes = (("query", "dns"), ("conn_state", "conn"), ("certificate.subject", "x509"), ("request_type", "kerberos"))
    return tuple(service for key, service in probes if key in fields)


@functools.lru_cache(maxsize=256)
def _route(product: str | None, categories: tuple[str, ...], services: tuple[str, ...],
           aliases: tuple[tuple[str, Alias], ...] = ()) -> Route:
    return Route(frozenset((product,)) if product else frozenset(), frozenset(categories),
                 frozenset(services) | {"json"}, aliases)


def route_of(event: Event) -> Route:
    """The logsource of one event (cheap: the work is cached per kind of event)."""
    fmt = event.format
    if fmt == "windows":
        return windows_route(event)
    if fmt in ("syslog", "rfc5424"):
        return _syslog_route(fmt, event.program)
    if fmt == "access":
        return _ZEEK_HTTP_ROUTE if "uid" in event.fields else _WEB_ROUTE
    if fmt == "cloudtrail":
        return _CLOUDTRAIL_ROUTE
    if fmt == "auditd":
        return _AUDITD_EXECVE_ROUTE if event.fields.get("type") == "EXECVE" else _AUDITD_ROUTE
    if fmt == "json":
        return _json_route(event)
    if fmt == "zeek":
        return _route("zeek", (), ())
    return _other_route(fmt)


@functools.lru_cache(maxsize=64)
def _other_route(fmt: str) -> Route:
    categories = ("application",) if fmt in TEXT_FORMATS else ()
    return Route(frozenset(), frozenset(categories), frozenset((fmt,)))


# --- what can be routed at all ----------------------------------------------------------------

FORMAT_SERVICES = frozenset(("syslog", "rfc5424", "access", "apache_error", "json", "windows", "cloudtrail",
                             "auditd", "generic", "zeek"))
KNOWN_PRODUCTS = frozenset(("windows", "linux", "aws", "azure", "m365", "gcp", "okta", "kubernetes", "zeek", "github"))
KNOWN_CATEGORIES = frozenset(
    {c for cats in SYSMON_CATEGORIES.values() for c in cats} | set(SERVICE_EVENT_CATEGORIES.values())
    | {"process_creation", "registry_event", "registry_set", "registry_add", "webserver", "application"})
KNOWN_SERVICES = frozenset(
    {s for names in CHANNEL_SERVICES.values() for s in names} | set(FORMAT_SERVICES)
    | {"auth", "sshd", "sudo", "cron", "vsftpd", "clamav", "guacamole", "audit", "exchange", "threat_management",
       "gcp.audit", "okta", "activitylogs", "signinlogs", "auditlogs", "riskdetection", "http", "dns", "conn",
       "x509", "kerberos", "sysmon"})


def unroutable(product: str | None, category: str | None, service: str | None) -> str | None:
    """Why no event logwarden parses can carry this logsource (None when some can)."""
    for part, value, known in (("product", product, KNOWN_PRODUCTS), ("category", category, KNOWN_CATEGORIES),
                               ("service", service, KNOWN_SERVICES)):
        if value is not None and value not in known:
            return f"no logwarden parser produces {part} {value!r}; the rule stays idle"
    return None


# --- which logwarden formats can carry a logsource (for `logwarden rules --format`) -------------

_PRODUCT_FORMATS = {"windows": {"windows"}, "linux": {"syslog", "rfc5424", "auditd", "windows"},
                    "aws": {"cloudtrail"}, "zeek": {"json", "zeek", "access"}}
_LINUX_SERVICES = {"syslog", "auth", "sshd", "sudo", "cron", "vsftpd", "clamav", "guacamole"}
# process creations: Windows/Sysmon events, auditd EXECVE records, Defender XDR rows (JSON)
_PROCESS_FORMATS = frozenset(("windows", "auditd", "json"))


def formats_of(product: str | None, category: str | None, service: str | None) -> frozenset[str]:
    """The formats whose events can belong to this logsource (all of them when it names nothing)."""
    possible = set(FORMATS)
    if product is not None:
        possible &= _PRODUCT_FORMATS.get(product, {"json"} if product in KNOWN_PRODUCTS else set())
    if category is not None:
        possible &= ({"access"} if category == "webserver" else set(TEXT_FORMATS) if category == "application"
                     else _PROCESS_FORMATS if category == "process_creation"
                     else {"windows"} if category in KNOWN_CATEGORIES else set())
    if service is not None:
        possible &= ({"syslog", "rfc5424"} if service in _LINUX_SERVICES else {service} if service in FORMAT_SERVICES
                     else {"windows"} if service in CHANNEL_SERVICES_ALL else {"json"} if service in KNOWN_SERVICES
                     else set())
    return frozenset(possible)


CHANNEL_SERVICES_ALL = frozenset(s for names in CHANNEL_SERVICES.values() for s in names) | {"sysmon"}

"""Rows as logwarden wrote them before its profiles had readable keys (up to 16e247c: `"s"`, `"n"`,
`"p"`, `"pend"`, `"acc"`, lists for message kinds and entities), read into today's keys, so a
store or an exported file from then keeps everything it learned. A row is upgraded when it is
read; the next flush that touches it writes it back in today's keys, and an untouched row is read
this way for as long as it stays. Knows nothing of the profile classes: JSON in, JSON out.
"""

from __future__ import annotations

from typing import Any


def upgrade(kind: str, data: Any) -> Any:
    """`data` of a `kind` row in today's keys; a row already in them (or no row at all) as it is."""
    match kind, data:
        case "web-site", {"n": requests}:
            return {"clients": data.get("s"), "requests": requests, "singletons": data.get("one", 0),
                    "pending": data.get("pend") or {}}
        case "web", {"n": requests}:
            return {"clients": data.get("s"), "requests": requests,
                    "params": {name: _value(model) for name, model in (data.get("p") or {}).items()},
                    "presence": data.get("pres") or {}, "pending": data.get("pend") or {},
                    "accepted": data.get("acc") or []}
        case ("template-scope" | "host"), {"n": events}:
            return {"events": events, "days": data.get("d")}
        case "template", [count, hosts, first_day]:
            return {"count": count, "hosts": hosts, "first_day": first_day}
        case "entity", [count, first_day]:
            return {"count": count, "first_day": first_day}
    return data


def _value(model: Any) -> Any:
    match model:
        case {"len": length}:
            return {"clients": model.get("s"), "length": length, "classes": model.get("cls") or {},
                    "enum": model.get("enum"), "range": model.get("num")}
    return model

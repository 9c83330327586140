"""Validators of exported events against the published schema files vendored in tests/data/schemas
(ECS 9.4.0's ecs_flat.yml, OCSF 1.7.0's dictionary, classes, profiles and objects; SOURCE.md in each
folder names the commit). They check what the files define: every field is one the schema has, of
its type, an enum's value one it lists, a class's required attributes present. Each returns the
problems found (empty: valid)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml

SCHEMAS = Path(__file__).resolve().parents[2] / "data" / "schemas"
ECS = SCHEMAS / "ecs-9.4.0"
OCSF = SCHEMAS / "ocsf-1.7.0"
CUSTOM = ("logwarden.", "kibana.")  # our namespace, and Kibana's alert fields (not ECS: checked apart)
ECS_TYPES = {"keyword": str, "constant_keyword": str, "wildcard": str, "match_only_text": str, "text": str,
             "date": str, "ip": str, "long": int, "integer": int, "short": int, "byte": int,
             "float": (int, float), "scaled_float": (int, float), "double": (int, float), "boolean": bool}
OCSF_TYPES = {"string_t": str, "integer_t": int, "long_t": int, "timestamp_t": int, "float_t": (int, float),
              "boolean_t": bool, "ip_t": str, "hostname_t": str, "url_t": str, "uuid_t": str, "email_t": str,
              "datetime_t": str, "file_hash_t": str, "port_t": int, "username_t": str, "mac_t": str,
              "file_path_t": str, "file_name_t": str, "process_name_t": str, "resource_uid_t": str,
              "subnet_t": str}


@cache
def ecs_fields() -> dict[str, Any]:
    return yaml.safe_load((ECS / "ecs_flat.yml").read_text(encoding="utf-8"))


def _flat(doc: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and name not in ecs_fields():
            out.update(_flat(value, name + "."))
        else:
            out[name] = value
    return out


def ecs_problems(doc: dict[str, Any]) -> list[str]:
    fields, problems = ecs_fields(), []
    for name, value in _flat(doc).items():
        if name.startswith(CUSTOM):
            continue
        field = fields.get(name) or fields.get(name.rsplit(".", 1)[0])  # labels.x: labels is an object
        if field is None:
            problems.append(f"{name}: not an ECS 9.4 field")
            continue
        if field["type"] == "object":
            continue
        kind = ECS_TYPES[field["type"]]
        for item in value if isinstance(value, list) else [value]:
            if item is not None and not isinstance(item, kind):
                problems.append(f"{name}: {item!r} is not {field['type']}")
        allowed = {a["name"]: a.get("expected_event_types") for a in field.get("allowed_values", [])}
        if allowed and not set(value if isinstance(value, list) else [value]) <= set(allowed):
            problems.append(f"{name}: {value!r} not among {sorted(allowed)}")
    categories = {a["name"]: a.get("expected_event_types") or [] for a in fields["event.category"]["allowed_values"]}
    for event_type in doc.get("event", {}).get("type", []):
        if not any(event_type in categories.get(c, []) for c in doc["event"].get("category", [])):
            problems.append(f"event.type {event_type!r}: expected by none of {doc['event'].get('category')}")
    return problems


@cache
def _ocsf(path: str) -> dict[str, Any]:
    return json.loads((OCSF / path).read_text(encoding="utf-8"))


def _chain(folder: str, name: str, path: str | None = None) -> dict[str, dict[str, Any]]:
    """The attributes of a class or object with those of what it extends (its own win)."""
    spec = _ocsf(path or f"{folder}/{name}.json")
    base = spec.get("extends")
    attributes: dict[str, dict[str, Any]] = {}
    if base and base != "object":
        found = next((p for p in (f"{folder}/{base}.json", f"events/{base}.json") if (OCSF / p).exists()), None)
        attributes.update(_chain(folder, base, found))
    for key, value in spec.get("attributes", {}).items():
        if key != "$include":
            attributes[key] = {**attributes.get(key, {}), **value}
    return attributes


def _object_attributes(kind: str) -> dict[str, dict[str, Any]]:
    """An object's attributes. The observable's type_id lists only 0 and 99 in its file: the schema
    adds the ids the dictionary's types declare (`observable`), as the OCSF server compiles it."""
    attributes = _chain("objects", kind)
    if kind == "observable":
        types = _ocsf("dictionary.json")["types"]["attributes"]
        ids = {str(t["observable"]): t for t in types.values() if "observable" in t}
        attributes["type_id"] = {**attributes["type_id"], "enum": {**attributes["type_id"].get("enum", {}), **ids}}
    return attributes


def ocsf_problems(event: dict[str, Any], class_path: str) -> list[str]:
    """`class_path` e.g. events/findings/detection_finding.json. class_uid, category_uid and type_uid
    are checked as the schema derives them (category uid × 1000 + class uid; × 100 + activity id)."""
    spec = _ocsf(class_path)
    attributes = _chain("events/findings", Path(class_path).stem, class_path)
    for profile in event.get("metadata", {}).get("profiles", []):
        attributes.update(_ocsf(f"profiles/{profile}.json")["attributes"])
    problems = [f"{name}: required, missing" for name, a in attributes.items()
                if a.get("requirement") == "required" and name not in event]
    name = spec.get("category") or _ocsf(f"events/findings/{spec['extends']}.json")["category"]  # or its parent's
    category = _ocsf("categories.json")["attributes"][name]["uid"]
    class_uid = category * 1000 + spec["uid"]
    derived = {"category_uid": category, "class_uid": class_uid,
               "type_uid": class_uid * 100 + event.get("activity_id", -1)}
    problems += [f"{name}: {event.get(name)!r}, the schema says {want}" for name, want in derived.items()
                 if event.get(name) != want]
    return problems + _ocsf_object({k: v for k, v in event.items() if k not in derived}, attributes, "")


def _ocsf_object(value: dict[str, Any], attributes: dict[str, dict[str, Any]], where: str) -> list[str]:
    dictionary = _ocsf("dictionary.json")["attributes"]
    problems = []
    for name, item in value.items():
        path = f"{where}{name}"
        if name not in attributes:
            problems.append(f"{path}: not an attribute here")
            continue
        known = {**dictionary.get(name, {}), **attributes[name]}
        known["enum"] = {**dictionary.get(name, {}).get("enum", {}), **attributes[name].get("enum", {})}
        items = item if known.get("is_array") and isinstance(item, list) else [item]
        if known.get("is_array") and not isinstance(item, list):
            problems.append(f"{path}: should be an array")
        for one in items:
            problems += _ocsf_value(path, one, known)
    return problems


def _ocsf_value(path: str, value: Any, known: dict[str, Any]) -> list[str]:
    kind = known["type"]
    if kind in ("json_t", "object"):  # free-form (`unmapped` is one)
        return []
    if kind in OCSF_TYPES:
        if not isinstance(value, OCSF_TYPES[kind]) or isinstance(value, bool) and kind != "boolean_t":
            return [f"{path}: {value!r} is not {kind}"]
        if known["enum"] and str(value) not in known["enum"]:
            return [f"{path}: {value!r} not among {sorted(known['enum'])}"]
        return []
    if not isinstance(value, dict):
        return [f"{path}: should be a {kind} object"]
    return _ocsf_object(value, _object_attributes(kind), path + ".")

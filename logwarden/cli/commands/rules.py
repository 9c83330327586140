"""`logwarden rules`: the Sigma rules a run uses — every rule read, loaded or not and why — and the
profile; `logwarden rules update` installs a rule pack (SigmaHQ's release by default) under
LOGWARDEN_HOME so that every later run loads it."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import click

from logwarden.app.config import get_settings
from logwarden.app.parse import FORMATS
from logwarden.cli.columns import Column, fit_table, left_out_note
from logwarden.cli.common import err_console, handle_errors, json_option, out_console, print_json, sigma_option
from logwarden.cli.terminal import shown
from logwarden.errors import InputError
from logwarden.schemas import CATEGORIES, RISK_LEVELS, risk_rank

SIGMAHQ_RELEASE = "https://github.com/SigmaHQ/sigma/releases/latest/download/sigma_all_rules.zip"
STATES = ("loaded", "idle", "filtered", "error")


@click.group("rules", invoke_without_command=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Only rules whose logsource events of this format can carry.")
@click.option("--category", type=click.Choice(CATEGORIES), multiple=True, help="Only these categories (repeatable).")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only rules at or above this level.")
@click.option("--state", type=click.Choice(STATES), multiple=True,
              help="Only rules in this state: loaded, idle (no parser makes its logsource), filtered (by the "
                   "profile), error (not loaded). Repeatable.")
@click.option("--search", default=None, help="Text in the id, title, description or ATT&CK ids.")
@sigma_option
@json_option
@click.pass_context
@handle_errors
def rules(ctx, fmt, category, min_risk, state, search, sigma_paths, as_json):
    """List the Sigma rules (logwarden's own pack and installed/extra packs): state, level, category,
    logsource, ATT&CK techniques, title; and the profile that chose them."""
    if ctx.invoked_subcommand is not None:
        return
    from logwarden.app.detect import ruleset_for

    started = time.perf_counter()
    ruleset = ruleset_for(sigma_paths, get_settings())
    load_s = time.perf_counter() - started
    by_key = {r.key: r for r in ruleset.rules}
    rows = [_row(entry, by_key.get(entry["key"])) for entry in ruleset.report]
    rows = [r for r in rows if _keep(r, fmt, category, min_risk, state, search)]
    packs = [{"name": p.name, "path": p.path, "rules": p.rules, "cached": p.cached, "load_s": round(p.load_s, 3)}
             for p in ruleset.packs]
    summary = dict(Counter(e["state"] for e in ruleset.report))
    if as_json:
        print_json({"profile": ruleset.profile.describe(), "packs": packs, "summary": summary,
                    "load_s": round(load_s, 3), "rules": rows})
        return
    _print_header(ruleset, packs, summary, load_s)
    _print_table(rows)


def _row(entry: dict, compiled) -> dict:
    from logwarden.app.detect.logsource import formats_of

    logsource = entry["logsource"]
    row = dict(entry)
    row["formats"] = sorted(formats_of(logsource["product"], logsource["category"], logsource["service"]))
    row["risk"] = compiled.level if compiled else None
    row["category"] = compiled.category if compiled else None
    row["emits"] = bool(compiled and compiled.emits)
    row["gate"] = ("literal" if compiled.clauses else "always") if compiled and compiled.match else None
    row["description"] = compiled.description if compiled else ""
    row["correlation"] = _correlation(compiled.correlation) if compiled and compiled.correlation else entry["correlation"]
    return row


def _correlation(spec: dict) -> dict:
    out = {"type": spec["type"], "group_by": spec["group_by"], "timespan_s": spec["timespan_s"]}
    if "count" in spec:
        out["condition"] = {spec["op"]: spec["count"]}
        out["threshold"] = spec["count"]
    if spec.get("field"):
        out["field"] = spec["field"]
    return out


def _keep(row: dict, fmt: str | None, categories: tuple[str, ...], min_risk: str | None, states: tuple[str, ...],
          search: str | None) -> bool:
    if fmt and fmt not in row["formats"]:
        return False
    if categories and row["category"] not in categories:
        return False
    if min_risk and (row["risk"] is None or risk_rank(row["risk"]) < risk_rank(min_risk)):
        return False
    if states and row["state"] not in states:
        return False
    text = " ".join(str(v) for v in (row["id"], row["title"], row["description"], *row["techniques"]) if v).lower()
    return not search or search.lower() in text


def _print_header(ruleset, packs: list[dict], summary: dict, load_s: float) -> None:
    profile = ruleset.profile.describe()
    err_console.print(f"profile: minimum level {profile['min_level']}, statuses {', '.join(profile['statuses'])}, "
                      f"muted {len(profile['mute'])}", highlight=False)
    for pack in packs:
        how = "cached" if pack["cached"] else "parsed"
        err_console.print(f"pack {shown(pack['name'])}: {pack['rules']} rules ({how}, {pack['load_s']:.2f} s) "
                          f"{shown(pack['path'])}", highlight=False, markup=False)
    counts = ", ".join(f"{summary.get(s, 0)} {s}" for s in STATES)
    err_console.print(f"{sum(summary.values())} rules: {counts}; loaded in {load_s:.2f} s", highlight=False)


# The level, the id and the title always (cli/columns.py); the others while the width allows.
TABLE_COLUMNS = (Column("level", most=13, least=8), Column("id", most=36, least=12),
                 Column("title / reason", most=60, least=20), Column("state", most=8, least=6, drop=4),
                 Column("ATT&CK", most=24, least=9, drop=3), Column("category", most=20, least=10, drop=2),
                 Column("logsource", most=30, least=10, drop=1))


def _print_table(rows: list[dict]) -> None:
    cells = []
    for r in rows:
        logsource = "/".join(v or "*" for v in r["logsource"].values())
        text = r["title"] if r["state"] in ("loaded",) else f"{r['title']} — {r['reason']}"
        cells.append([r["level"] or "-", r["id"], text, r["state"], ",".join(r["techniques"]), r["category"] or "-",
                      logsource])
    table, dropped = fit_table(TABLE_COLUMNS, cells, out_console.width)
    out_console.print(table)
    if dropped:
        err_console.print(left_out_note(dropped, out_console.width), highlight=False, markup=False)


@rules.command("update")
@click.option("--from", "source", default=SIGMAHQ_RELEASE, show_default=True,
              help="Where the pack comes from: a folder, a .zip, or an http(s) URL of a zip.")
@click.option("--name", default=None, help="Name of the installed pack: lower-case letters, digits, '-', '_' "
                                            "(default: sigmahq for the release, else from the source's name).")
@json_option
@handle_errors
def update(source: str, name: str | None, as_json: bool):
    """Install (or replace) a Sigma rule pack under LOGWARDEN_HOME/sigma; later runs load it. The pack is
    compiled first: one of which no rule loads is not installed, and the pack it would replace stays."""
    from logwarden.app.detect.install import check_pack_name, default_pack_name, install_pack

    settings = get_settings()
    name = check_pack_name(name if name is not None else
                           ("sigmahq" if source == SIGMAHQ_RELEASE else default_pack_name(source)))
    report = install_pack(source, home=settings.home, name=name, check=lambda staged: _check(staged, settings),
                          download=_download)
    if as_json:
        print_json(report)
        return
    err_console.print(f"installed {shown(report['installed'])}: {report['rules']} rules, {report['loaded']} loaded, "
                      f"{report['errors']} not loaded (see `logwarden rules --state error`); "
                      f"compiled in {report['load_s']:.1f} s", highlight=False, markup=False)
    for refused in report["refused"]:
        err_console.print(f"skipped {shown(refused['file'])}: {shown(refused['reason'])}", highlight=False,
                          markup=False)


@rules.command("remove")
@click.argument("name")
@json_option
@handle_errors
def remove(name: str, as_json: bool):
    """Remove an installed rule pack (by the name `rules update` gave it) from LOGWARDEN_HOME/sigma."""
    from logwarden.app.detect.install import remove_pack

    removed = remove_pack(home=get_settings().home, name=name)
    if as_json:
        print_json({"removed": [str(p) for p in removed]})
        return
    err_console.print(f"removed {', '.join(shown(str(p)) for p in removed)}", highlight=False, markup=False)


def _download(url: str, dest: Path) -> None:
    """The zip at `url`, at most `MAX_DOWNLOAD_BYTES`."""
    import httpx

    from logwarden.app.detect.install import MAX_DOWNLOAD_BYTES

    size = 0
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=60.0) as response:
            response.raise_for_status()
            with dest.open("wb") as out:
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > MAX_DOWNLOAD_BYTES:
                        raise InputError(f"{url}: more than {MAX_DOWNLOAD_BYTES >> 20} MiB; not a rule pack zip")
                    out.write(chunk)
    except httpx.HTTPError as exc:
        raise InputError(f"cannot download {url}: {exc}; fetch the zip another way and run "
                         f"`logwarden rules update --from FILE.zip`") from exc


def _check(staged: Path, settings) -> dict:
    """Compile the staged pack once: this warms the cache and says how much of it loads."""
    from logwarden.app.detect import load_placeholders, load_ruleset, profile_from_settings

    started = time.perf_counter()
    ruleset = load_ruleset([staged], profile=profile_from_settings(settings),
                           placeholders=load_placeholders(settings.sigma_placeholders),
                           cache_dir=settings.home / "cache" / "sigma")
    states = Counter(e["state"] for e in ruleset.report)
    return {"rules": len(ruleset.report), "loaded": states["loaded"] + states["idle"] + states["filtered"],
            "errors": states["error"], "load_s": time.perf_counter() - started}

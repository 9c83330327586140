"""`logwarden rules`: the Sigma rules a run uses — every rule read, loaded or not and why — and the
profile; `logwarden rules update` installs a rule pack (SigmaHQ's release by default) under
LOGWARDEN_HOME so that every later run loads it."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

import click
from rich.table import Table

from logwarden.app.config import get_settings
from logwarden.app.parse import FORMATS
from logwarden.cli.common import err_console, handle_errors, json_option, out_console, print_json, sigma_option
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
    ruleset = ruleset_for(sigma_paths)
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
    out_console.print(_table(rows))


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
    text = " ".join([row["id"], row["title"], row["description"], *row["techniques"]]).lower()
    return not search or search.lower() in text


def _print_header(ruleset, packs: list[dict], summary: dict, load_s: float) -> None:
    profile = ruleset.profile.describe()
    err_console.print(f"profile: minimum level {profile['min_level']}, statuses {', '.join(profile['statuses'])}, "
                      f"muted {len(profile['mute'])}", highlight=False)
    for pack in packs:
        how = "cached" if pack["cached"] else "parsed"
        err_console.print(f"pack {pack['name']}: {pack['rules']} rules ({how}, {pack['load_s']:.2f} s) {pack['path']}",
                          highlight=False)
    counts = ", ".join(f"{summary.get(s, 0)} {s}" for s in STATES)
    err_console.print(f"{sum(summary.values())} rules: {counts}; loaded in {load_s:.2f} s", highlight=False)


def _table(rows: list[dict]) -> Table:
    table = Table(show_header=True, header_style="bold")
    for column in ("id", "state", "level", "category", "logsource", "ATT&CK", "title / reason"):
        table.add_column(column, overflow="fold")
    for r in rows:
        logsource = "/".join(v or "*" for v in r["logsource"].values())
        text = r["title"] if r["state"] in ("loaded",) else f"{r['title']} — {r['reason']}"
        table.add_row(r["id"], r["state"], r["level"] or "-", r["category"] or "-", logsource,
                      ",".join(r["techniques"]), text)
    return table


@rules.command("update")
@click.option("--from", "source", default=SIGMAHQ_RELEASE, show_default=True,
              help="Where the pack comes from: a folder, a .zip, or an http(s) URL of a zip.")
@click.option("--name", default=None, help="Name of the installed pack (default: sigmahq for the release, else the "
                                            "source's name).")
@json_option
@handle_errors
def update(source: str, name: str | None, as_json: bool):
    """Install (or replace) a Sigma rule pack under LOGWARDEN_HOME/sigma; later runs load it."""
    settings = get_settings()
    name = name or ("sigmahq" if source == SIGMAHQ_RELEASE else Path(source.rstrip("/")).stem or "pack")
    target_dir = settings.home / "sigma"
    target_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target_dir, prefix=".incoming-") as tmp:
        staged = _stage(source, Path(tmp), name)
        if not any(p.suffix in (".yml", ".yaml") for p in staged.rglob("*")) and staged.suffix != ".zip":
            raise InputError(f"{source} holds no Sigma rules (.yml/.yaml files)")
        for old in (target_dir / name, target_dir / f"{name}.zip"):
            if old.is_dir():
                shutil.rmtree(old)
            elif old.exists():
                old.unlink()
        final = target_dir / staged.name
        staged.rename(final)
    report = _check(final, settings)
    report["installed"] = str(final)
    if as_json:
        print_json(report)
    else:
        err_console.print(f"installed {final}: {report['rules']} rules, {report['loaded']} loaded, "
                          f"{report['errors']} not loaded (see `logwarden rules --state error`); "
                          f"compiled in {report['load_s']:.1f} s", highlight=False)


def _stage(source: str, tmp: Path, name: str) -> Path:
    if source.startswith(("http://", "https://")):
        return _download(source, tmp / f"{name}.zip")
    path = Path(source).expanduser()
    if path.is_dir():
        staged = tmp / name
        shutil.copytree(path, staged, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        return staged
    if path.is_file() and path.suffix.lower() == ".zip":
        staged = tmp / f"{name}.zip"
        shutil.copyfile(path, staged)
        return staged
    raise InputError(f"{source} is not a folder, a .zip or an http(s) URL of Sigma rules")


def _download(url: str, dest: Path) -> Path:
    import httpx

    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=60.0) as response:
            response.raise_for_status()
            with dest.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
    except httpx.HTTPError as exc:
        raise InputError(f"cannot download {url}: {exc}; fetch the zip another way and run "
                         f"`logwarden rules update --from FILE.zip`") from exc
    return dest


def _check(staged: Path, settings) -> dict:
    """Compile the installed pack once: this warms the cache and says how much of it loads."""
    from logwarden.app.detect import load_placeholders, load_ruleset, profile_from_settings

    started = time.perf_counter()
    ruleset = load_ruleset([staged], profile=profile_from_settings(settings),
                           placeholders=load_placeholders(settings.sigma_placeholders),
                           cache_dir=settings.home / "cache" / "sigma")
    states = Counter(e["state"] for e in ruleset.report)
    return {"rules": len(ruleset.report), "loaded": states["loaded"] + states["idle"] + states["filtered"],
            "errors": states["error"], "load_s": time.perf_counter() - started}

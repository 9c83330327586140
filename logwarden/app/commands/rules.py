"""`logwarden rules`: the shipped detectors, so an analyst can see what fires and why."""

from __future__ import annotations

import click
from rich.table import Table

from logwarden.app.cli_common import err_console, handle_errors, json_option, out_console, print_json
from logwarden.app.parse import FORMATS
from logwarden.schemas import CATEGORIES, RISK_LEVELS, risk_rank


@click.command("rules")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Only rules that apply to events of this format (a rule without formats applies to all).")
@click.option("--category", type=click.Choice(CATEGORIES), multiple=True, help="Only these categories (repeatable).")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only rules at or above this level.")
@click.option("--search", default=None, help="Text in the id, title, description or ATT&CK ids.")
@json_option
@handle_errors
def rules(fmt, category, min_risk, search, as_json):
    """List the detection rules: id, level, category, formats, ATT&CK techniques, title."""
    from logwarden.app.detect import shipped_rules

    rows = [_row(rule) for rule in shipped_rules()]
    rows = [r for r in rows if _keep(r, fmt, category, min_risk, search)]
    if as_json:
        print_json(rows)
        return
    table = Table(show_header=True, header_style="bold")
    for column in ("id", "level", "category", "formats", "ATT&CK", "title"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(r["id"], r["level"], r["category"], ",".join(r["formats"]) or "any", ",".join(r["techniques"]),
                      r["title"])
    err_console.print(f"{len(rows)} rules", highlight=False)
    out_console.print(table)


def _row(rule) -> dict:
    spec = rule.spec
    return {"id": spec.id, "level": rule.level, "category": spec.category, "formats": sorted(rule.formats),
            "techniques": rule.techniques, "title": spec.title, "description": spec.description,
            "aggregate": spec.aggregate.model_dump() if spec.aggregate else None}


def _keep(row: dict, fmt: str | None, categories: tuple[str, ...], min_risk: str | None, search: str | None) -> bool:
    if fmt and row["formats"] and fmt not in row["formats"]:
        return False
    if categories and row["category"] not in categories:
        return False
    if min_risk and risk_rank(row["level"]) < risk_rank(min_risk):
        return False
    text = " ".join([row["id"], row["title"], row["description"], *row["techniques"]]).lower()
    return not search or search.lower() in text

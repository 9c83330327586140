"""`logwarden config`: every setting, its value, and where it came from."""

from __future__ import annotations

import click

from logwarden.app.config import CONFIG_VARIABLE, SECRETS, config_file, get_settings, origins
from logwarden.cli.common import handle_errors, json_option, print_json
from logwarden.cli.terminal import shown


@click.command("config")
@json_option
@handle_errors
def config(as_json: bool) -> None:
    """Show every setting, its value and its origin: the environment (LOGWARDEN_*), the config file
    named by --config / LOGWARDEN_CONFIG, or the default. A .env in the current folder is never read."""
    settings = get_settings()
    found = origins()
    rows = {name: {"value": _value(name, getattr(settings, name)), "from": found[name]}
            for name in type(settings).model_fields}
    rows["db_url"] = {"value": settings.db_url, "from": found["db"] if settings.db else f"default: under home ({found['home']})"}
    path = config_file()
    if as_json:
        print_json({"config_file": str(path) if path else None, "settings": rows})
        return
    click.echo(f"config file: {shown(path) if path else f'none ({CONFIG_VARIABLE} / --config not set)'}")
    width = max(map(len, rows))
    for name, row in rows.items():
        click.echo(f"{name:<{width}}  {shown(row['value'])}  ({shown(row['from'])})")


def _value(name: str, value):
    if name in SECRETS:
        return "(set)" if value else None
    return str(value) if value is not None and not isinstance(value, (bool, int, float)) else value

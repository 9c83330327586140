"""`logwarden ui`: start the audit dashboard (`python -m logwarden.ui.serve`) on the store.

Owns the command's safe defaults: loopback only unless told otherwise (with a warning), a random
access token printed in the URL when no password is set (like Jupyter), the names the browser may
use beyond the bound address (`--allow-host`); the store URL and the token reach the server through
its environment. Streamlit's own settings are fixed by the server (`logwarden/ui/serve.py`).
Knows nothing of the pages (that is `logwarden/ui`).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import secrets
import signal
import subprocess
import sys

import click
from rich.markup import escape

from logwarden.app.config import get_settings
from logwarden.cli.common import Stopped, db_option, err_console, handle_errors, open_store_from
from logwarden.errors import ConfigError
from logwarden.ui import TOKEN_VARIABLE


@click.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback exposes the records to the network.")
@click.option("--port", type=click.IntRange(1, 65535), default=8501, show_default=True, help="Port to listen on.")
@click.option("--allow-host", "allowed", multiple=True, metavar="NAME",
              help="Another host name the browser may use to reach the dashboard (a proxy's, this machine's). "
                   "Any other name is refused: a web page whose name resolves here must not read the records.")
@handle_errors
def ui(db_url: str | None, host: str, port: int, allowed: tuple[str, ...]) -> None:
    """Open the audit dashboard (Streamlit) on the store.

    Without LOGWARDEN_UI_PASSWORD the dashboard asks for a random token: open the URL printed."""
    if importlib.util.find_spec("streamlit") is None:
        raise ConfigError("The UI needs Streamlit: pip install streamlit")
    settings = get_settings()
    url = db_url or settings.db_url
    read_only = settings.ui_read_only or (not is_loopback(host) and not settings.ui_password)
    open_store_from(url, create=False).close()  # fail here, with a clear message, on a bad or missing store
    if not is_loopback(host):
        err_console.print(f"[bold yellow]warning:[/] binding to {escape(host)}: anyone who can reach this address can "
                          "read the records. " + ("Without LOGWARDEN_UI_PASSWORD the dashboard is read-only (no reviews); "
                                                  "set it to allow them. " if read_only else "")
                          + "Prefer an SSH tunnel or a proxy with TLS.", highlight=False)
    token = None if settings.ui_password else secrets.token_urlsafe(32)
    entry = f"?token={token}" if token else ""
    # soft_wrap: a URL cut over two lines cannot be copied
    err_console.print(f"logwarden ui on http://{escape(_url_host(host))}:{port}/{entry} (Ctrl-C to stop)",
                      highlight=False, soft_wrap=True)
    env = {**os.environ, "LOGWARDEN_DB": url, "LOGWARDEN_UI_READ_ONLY": "true" if read_only else "false"}
    env.pop(TOKEN_VARIABLE, None)
    if token:
        env[TOKEN_VARIABLE] = token
    sys.exit(_run(server_command(host, port, allowed), env))


def server_command(host: str, port: int, allowed: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "logwarden.ui.serve", "--host", host, "--port", str(port),
            *(arg for name in allowed for arg in ("--allow-host", name))]


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _run(command: list[str], env: dict[str, str]) -> int:
    """Run Streamlit as a child; a SIGTERM to us is passed on so no orphan server keeps the port."""
    process = subprocess.Popen(command, env=env)
    previous = signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    try:
        while True:
            try:
                return process.wait()
            except (KeyboardInterrupt, Stopped):
                continue  # Streamlit got the same Ctrl-C (same process group) and is shutting down
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    ui()

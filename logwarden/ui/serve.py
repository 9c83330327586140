"""`python -m logwarden.ui.serve`: the dashboard's server, as `logwarden ui` starts it.

Streamlit's ASGI app (`st.App`) runs `app.py` behind the door of `gate.py`, with Streamlit's
settings fixed here: every one that bears on who may reach the dashboard and what it loads is
passed to `App.run`. Streamlit also reads `.streamlit/config.toml` and `secrets.toml` from the
current folder, where an attacker (or a colleague) may have left one that turns the origin check
off or the agent API on; so it is configured in an empty folder, and the process returns to the
analyst's folder once it starts, so that the store path and logwarden's settings mean what they
mean to the CLI. Knows nothing of the pages.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.middleware import Middleware

from logwarden.ui import TOKEN_VARIABLE
from logwarden.ui.gate import Door, Gate

APP = Path(__file__).resolve().parent / "app.py"


def fixed_settings(host: str, port: int) -> dict[str, Any]:
    return {
        "server.address": host, "server.port": port,
        "server.headless": True,  # never open a browser on the server
        "server.fileWatcherType": "none", "server.runOnSave": False, "server.allowRunOnSave": False,
        "server.enableCORS": True, "server.enableXsrfProtection": True, "server.xsrfCookieSameSite": "lax",
        "server.corsAllowedOrigins": [], "server.allowedHosts": [],  # the gate checks Host and Origin
        "server.enableAgentApi": False, "server.enableStaticServing": False, "server.baseUrlPath": "",
        "server.trustedUserHeaders": "{}",  # no identity taken from request headers
        "client.allowedOrigins": [],  # no framing page may send the app messages (and none may frame it)
        "client.toolbarMode": "viewer", "global.developmentMode": False,
        "browser.gatherUsageStats": False,
        "logger.hideWelcomeMessage": True,  # its URLs lack the token: `logwarden ui` prints the one to open
        "secrets.files": [],  # no st.secrets, so no `[auth]` section from anywhere
    }


def build_app(door: Door, workdir: str) -> Any:
    from streamlit.starlette import App

    return App(APP, middleware=[Middleware(Gate, door=door)], lifespan=_back_to(workdir))


def _back_to(workdir: str) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        os.chdir(workdir)  # Streamlit has read its configuration by now (see the module's docstring)
        yield None
    return lifespan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m logwarden.ui.serve", description=__doc__)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--allow-host", action="append", default=[], help="another name the browser may use")
    args = parser.parse_args(argv)
    door = Door.for_bind(args.host, args.allow_host, os.environ.pop(TOKEN_VARIABLE, None) or None)
    workdir = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="logwarden-ui-") as empty:
        os.chdir(empty)
        build_app(door, workdir).run(config=fixed_settings(args.host, args.port))


if __name__ == "__main__":
    main()

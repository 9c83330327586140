"""Which Host and Origin the dashboard's door lets in (logwarden.ui.gate.Door), per kind of bind;
tests/ui/test_ui_door.py drives the real server through it."""

from __future__ import annotations

import pytest

from logwarden.ui.gate import Door


@pytest.mark.parametrize(("bind", "allowed", "host", "ok"), [
    ("127.0.0.1", (), "127.0.0.1:8501", True),
    ("127.0.0.1", (), "localhost:8501", True),
    ("127.0.0.1", (), "[::1]:8501", True),
    ("127.0.0.1", (), "evil.example:8501", False),   # DNS rebinding: a name that resolves here
    ("127.0.0.1", (), "evil.example.", False),
    ("127.0.0.1", (), "192.168.1.5:8501", False),
    ("127.0.0.1", (), "user@127.0.0.1", False),
    ("127.0.0.1", (), "127.0.0.1:port", False),
    ("127.0.0.1", (), "", False),
    ("127.0.0.1", (), None, False),
    ("127.0.0.1", ("Dash.Example",), "dash.example", True),
    ("0.0.0.0", (), "192.168.1.5:8501", True),         # a wildcard bind: any address, no name
    ("0.0.0.0", (), "[fe80::1]:8501", True),
    ("0.0.0.0", (), "box.lan:8501", False),
    ("0.0.0.0", ("box.lan",), "BOX.LAN:8501", True),
    ("192.168.1.5", (), "192.168.1.5:8501", True),
    ("192.168.1.5", (), "10.0.0.1:8501", False),
])
def test_host(bind, allowed, host, ok):
    assert Door.for_bind(bind, allowed).host_ok(host) is ok


@pytest.mark.parametrize(("origin", "ok"), [
    (None, True),  # a navigation or a non-browser client
    ("http://127.0.0.1:8501", True),
    ("https://127.0.0.1:8501", True),  # behind a TLS proxy that keeps the Host
    ("http://127.0.0.1:3000", False),  # another local service's page
    ("http://evil.example:8501", False),
    ("null", False),
    ("file://", False),
])
def test_origin_must_be_this_very_origin(origin, ok):
    assert Door.for_bind("127.0.0.1").origin_ok(origin, "127.0.0.1:8501") is ok


def test_token():
    door = Door.for_bind("127.0.0.1", token="s3cret-token")
    assert door.token_ok("s3cret-token") and not door.token_ok("s3cret") and not door.token_ok(None)
    assert Door.for_bind("127.0.0.1").token_ok(None)  # a password guards the pages instead

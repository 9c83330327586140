"""The traffic behind fixtures/profiles_v1.json: a shop's access log and a host's sshd log (history
to learn, then a day to judge). Deterministic, so the fixture's rows can be learned again. Every
web client is in a network of its own (/24), so it is one client whether support counts
addresses (as the code that wrote the fixture did) or networks."""

from __future__ import annotations

import random

from logwarden.app.events import LogLine
from logwarden.app.mine import SourceMiner, windows
from logwarden.app.parse import parse_lines

STAMP = "10/Mar/2024:06:55:46 +0000"
USERS = ("alice", "bob", "carol")


def web(ip: str, target: str) -> str:
    return f'{ip} - - [{STAMP}] "GET {target} HTTP/1.1" 200 512 "-" "Mozilla/5.0"'


def shop(rng: random.Random, ip: str) -> str:
    page = rng.choice(("/shop/item.php?id={n}&lang={l}", "/shop/search.php?q={w}+{w}&lang={l}", "/index.php"))
    words = ("red", "blue", "shoe", "bag", "hat")
    return web(ip, page.replace("{n}", str(rng.randint(1, 500))).replace("{l}", rng.choice(("es", "en", "fr")))
               .replace("{w}", rng.choice(words), 1).replace("{w}", rng.choice(words), 1))


def sshd(day: int, second: int, text: str) -> str:
    return f"Mar {day:2d} 06:{second // 60 % 60:02d}:{second % 60:02d} web1 sshd[{100 + second % 900}]: {text}"


def history() -> dict[str, tuple[str, list[str]]]:
    rng = random.Random(41)
    access = [shop(rng, f"10.{i % 7}.{i % 61}.1") for i in range(600)]
    auth = []
    for i in range(5200):
        day = 9 if i < 2600 else 10
        if i % 10 == 0:
            user = USERS[i % 3]
            auth.append(sshd(day, i, f"Accepted publickey for {user} from 10.0.0.{i % 3 + 1} port {40000 + i} ssh2"))
        else:
            auth.append(sshd(day, i, f"Connection closed by 10.0.0.{i % 5} port {40000 + i} [preauth]"))
    return {"access": ("access.log", access), "syslog": ("auth.log", auth)}


def today() -> dict[str, tuple[str, list[str]]]:
    rng = random.Random(42)
    access = [shop(rng, "10.1.0.1"),
              web("203.0.118.5", "/shop/item.php?id=7&lang=es&debug=1"),  # a parameter never seen
              web("203.0.119.6", "/shop/item.php?id=7%27%20or%201=1--&lang=es"),  # an odd value, attack syntax
              web("203.0.120.7", "/shop/search.php?q=" + "A" * 400 + "&lang=en"),  # a long value
              web("203.0.121.8", "/shop/item.php?id=7&lang=xx"),  # not one of its values
              web("203.0.122.9", "/admin/backup.php")]  # a page never served
    auth = [sshd(11, 1, "Accepted publickey for alice from 10.0.0.1 port 50001 ssh2"),
            sshd(11, 2, "Accepted password for mallory from 198.51.100.4 port 50002 ssh2"),  # a new logon
            sshd(11, 3, "Server listening on 0.0.0.0 port 2222.")]  # a kind never written
    return {"access": ("access.log", access), "syslog": ("auth.log", auth)}


def later() -> dict[str, tuple[str, list[str]]]:
    """The day after `today`: its web requests again, and sshd lines unlike any before."""
    auth = [sshd(12, 1, "Accepted password for mallory from 198.51.100.9 port 50003 ssh2"),  # a new logon
            sshd(12, 2, "Received disconnect from 10.0.0.2 port 50004:11: disconnected by user")]  # a new kind
    return {"access": today()["access"], "syslog": ("auth.log", auth)}


def observe_all(baseline, streams) -> list:
    found = []
    for fmt, (source, lines) in streams.items():
        events = parse_lines([LogLine(source, 0, 0, i, text) for i, text in enumerate(lines, 1)], fmt)
        miner = SourceMiner()
        for window in windows(events, miner, source=source, inode=0, fmt=fmt):
            found += baseline.observe(window, miner)
    return found


def judged(baseline, streams) -> list[dict]:
    """What a baseline judges of `streams`, in a comparable form."""
    return sorted(({"kind": d.kind, "ref": d.ref, "level": d.level, "text": d.text, "lines": d.lines}
                   for d in observe_all(baseline, streams)), key=lambda d: (d["ref"], d["lines"]))

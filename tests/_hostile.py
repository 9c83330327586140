"""The hostile corpus of issue 32: log files, rule packs and values an attacker controls, built in
the test (never committed as binaries). Shared by the regression tests in tests/hostile/ and the
corpus run (`tests/hostile/test_corpus.py`, marked `hostile`).

Each builder writes into a folder it is given and says what a faithful reading must account for:
`LogInput.lines` is how many lines the file holds (None: a file logwarden must refuse, with an
error row, rather than read).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _repo import SAMPLE_LOGS

from logwarden.app.safetext import os_text

# What a terminal obeys: C0 controls but TAB/LF, DEL, C1 (0x9b is a one-byte CSI), bidi overrides
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
TITLE = "\x1b]0;PWNED\x07"  # OSC: set the window title
CLEAR = "\x1b[2J\x1b[3J\x1b[H"  # clear the screen and the scrollback
C1_CSI = "\x9b31m"  # a one-byte CSI
RLO = "\u202e"  # right-to-left override: "gpj.exe" reads "exe.jpg"


def sshd(i: int, *, user: str = "root", ip: str = "203.0.113.9", minute: int = 0) -> str:
    return (f"Mar  1 10:{minute:02d}:{i % 60:02d} web01 sshd[{1000 + i}]: Failed password for {user} "
            f"from {ip} port {40000 + i} ssh2")


def brute_force(n: int = 30, **kw) -> list[str]:
    return [sshd(i, **kw) for i in range(n)]


def write_lines(path: Path | bytes, lines: list[str]) -> Path | bytes:
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write("\n".join(lines) + "\n")
    return path


@dataclass
class LogInput:
    name: str  # what the table calls it
    path: Path | bytes  # bytes: a name that is not UTF-8
    lines: int | None  # None: must be refused (special or pseudo file), with an error row
    what: str

    @property
    def source(self) -> str:
        """The file's source name in the store (`os_text`: undecodable bytes and controls escaped)."""
        return os_text(os.path.abspath(self.path))


# --- log files ----------------------------------------------------------------------------------


def cloudtrail_surrogates(folder: Path) -> LogInput:
    """The sample CloudTrail events with a lone-surrogate `\\ud800` escape in every userName."""
    lines = []
    for line in (SAMPLE_LOGS / "cloudtrail.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if isinstance(event.get("userIdentity"), dict):
            event["userIdentity"]["userName"] = "mallory\ud800"
        lines.append(json.dumps(event))  # ensure_ascii: written as the escape "\ud800"
    assert "\\ud800" in lines[0]
    path = write_lines(folder / "cloudtrail.json", lines)
    return LogInput("json \\ud800 in userName", path, len(lines), "CloudTrail events, a lone surrogate escape each")


def undecodable_name(folder: Path) -> LogInput:
    path = os.fsencode(folder) + b"/auth-\xff\xfe.log"
    write_lines(path, brute_force())
    return LogInput("file name not UTF-8", path, 30, "auth-\\xff\\xfe.log: 30 sshd failures")


def json_banner(folder: Path) -> LogInput:
    path = write_lines(folder / "banner.log", ['{"level":"info","msg":"hello"}', *brute_force(30, ip="198.51.100.4")])
    return LogInput("one JSON line heads an auth.log", path, 31, "a JSON banner, then 30 sshd failures")


def nul_block(folder: Path) -> LogInput:
    path = folder / "padded.log"
    body = "\n".join(brute_force(30, ip="198.51.100.5")) + "\n"
    path.write_bytes(b"\x00" * 9000 + b"\n" + body.encode())
    return LogInput("NUL block in the first 8 KiB", path, 31, "9,000 NULs, then 30 sshd failures")


def kmsg_link(folder: Path) -> LogInput:
    path = folder / "kmsg.log"
    path.symlink_to("/proc/kmsg")
    return LogInput("symlink to /proc/kmsg", path, None, "a kernel pseudo-file that blocks")


def fifo(folder: Path) -> LogInput:
    path = folder / "pipe.log"
    os.mkfifo(path)
    return LogInput("FIFO in a folder", path, None, "nobody writes to it")


def escapes(folder: Path) -> LogInput:
    users = [f"a{TITLE}b", f"c{CLEAR}d", f"e{C1_CSI}f", f"g{RLO}exe.jpg", "h\x00i"]
    lines = [sshd(i, user=users[i % len(users)], ip="198.51.100.6") for i in range(30)]
    path = write_lines(folder / "escapes.log", lines)
    return LogInput("ESC/OSC/C1/bidi in log values", path, 30, "window title, clear screen, CSI, U+202E")


def escape_name(folder: Path) -> LogInput:
    path = folder / f"x{TITLE}{RLO}gol.log"
    write_lines(path, brute_force(5, ip="198.51.100.7"))
    return LogInput("ESC and U+202E in a file name", path, 5, "a file name that sets the title")


def newline_name(folder: Path) -> LogInput:
    path = folder / "auth\nL1 (T1): forged digest line.log"
    write_lines(path, brute_force(5, ip="198.51.100.8"))
    return LogInput("newline in a file name", path, 5, "a name that would forge a digest line")


def nesting_bomb(folder: Path) -> LogInput:
    path = write_lines(folder / "deep.json", ['{"a":' * 5000 + "1" + "}" * 5000, '{"msg": "after"}'])
    return LogInput("JSON nested 5,000 deep", path, 2, "a nesting bomb, then a line")


def monster_line(folder: Path) -> LogInput:
    path = write_lines(folder / "monster.log", ["x" * (2 * 1024 * 1024), sshd(1)])
    return LogInput("a 2 MiB line", path, 2, "cut at 64 KiB, the next line read")


def binary_file(folder: Path) -> LogInput:
    path = folder / "core.bin"
    path.write_bytes(bytes(range(1, 32)) * 4000)
    return LogInput("binary file", path, None, "control bytes, no text")


def impossible_dates(folder: Path) -> LogInput:
    path = write_lines(folder / "dates.log", [sshd(i).replace("Mar  1", "Feb 30") for i in range(10)])
    return LogInput("impossible dates", path, 10, "Feb 30")


LOG_BUILDERS: tuple[Callable[[Path], LogInput], ...] = (
    cloudtrail_surrogates, undecodable_name, json_banner, nul_block, kmsg_link, fifo, escapes, escape_name,
    newline_name, nesting_bomb, monster_line, binary_file, impossible_dates)


def build_logs(folder: Path) -> list[LogInput]:
    folder.mkdir(parents=True, exist_ok=True)
    return [build(folder) for build in LOG_BUILDERS]


def accounted(db_path: Path, source: str) -> tuple[int, int]:
    """(lines in analysed windows, error rows with a line number) the store holds for `source`."""
    with sqlite3.connect(db_path) as conn:
        windows = conn.execute("SELECT COALESCE(SUM(line_count), 0) FROM windows WHERE source = ?", (source,)).fetchone()
        errors = conn.execute("SELECT COUNT(*) FROM errors WHERE source = ? AND line_no IS NOT NULL",
                              (source,)).fetchone()
    return windows[0], errors[0]


def refused(db_path: Path, source: str) -> list[str]:
    """The messages of the whole-file error rows for `source` (a refused or skipped file)."""
    with sqlite3.connect(db_path) as conn:
        return [m for (m,) in conn.execute("SELECT message FROM errors WHERE source = ? AND line_no IS NULL",
                                           (source,))]


# --- rule packs ---------------------------------------------------------------------------------

GOOD_RULE = """title: whoami run
id: 6f1d3c5e-0b7a-4f7e-9d7e-2c1b0a9f8e7d
name: hostile-good
status: test
logsource: {product: linux, service: sshd}
detection:
  sel: {message|contains: 'Failed password'}
  condition: sel
level: medium
"""

# A Sigma rule of ~600 bytes whose selection pyyaml would expand to 9^8 = 43 million strings
BILLION_LAUGHS = "".join([
    "title: laughs\nname: laughs\nlogsource: {product: linux, service: sshd}\ndetection:\n",
    '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n',
    *(f"  {n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")),
    "  sel: {message|contains: *i}\n  condition: sel\nlevel: low\n"])


def pack_folder(folder: Path, *extra: tuple[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "good.yml").write_text(GOOD_RULE)
    for name, text in extra:
        (folder / name).write_text(text)
    return folder


def zip_bomb(path: Path, megabytes: int = 64) -> Path:
    """A zip of a few hundred KB whose one `.yml` member inflates to `megabytes` MB of zeros."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("rules/bomb.yml", "w") as member:
            chunk = b"\x00" * (1024 * 1024)
            for _ in range(megabytes):
                member.write(chunk)
    return path


def has_raw_control(text: str) -> bool:
    return RAW_CONTROL.search(text) is not None

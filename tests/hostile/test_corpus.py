"""The whole hostile corpus of issue 32 in one go, through the real CLI in child processes, each
under a deadline: every input's outcome in a table, then "N inputs, 0 tracebacks, 0 hangs, 0 lost
lines". A traceback, a hang, a lost line or an outcome other than the one expected fails it.

Run it alone with `python -m pytest -m hostile -s tests/hostile/test_corpus.py` to see the table
(it also lands in the test's report on failure).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from _hostile import (
    BILLION_LAUGHS,
    GOOD_RULE,
    TITLE,
    accounted,
    brute_force,
    build_logs,
    has_raw_control,
    pack_folder,
    refused,
    sshd,
    write_lines,
    zip_bomb,
)
from _repo import REPO

from logwarden.prompts import FENCE, FENCE_END, user_prompt

pytestmark = pytest.mark.hostile
DEADLINE_S = 180


@dataclass
class Outcome:
    input: str
    command: str
    outcome: str = ""
    expected: bool = True
    traceback: bool = False
    hang: bool = False
    lost: int = 0


@dataclass
class Done:
    code: int | None  # None: it hung past the deadline and was killed
    out: str
    err: str
    seconds: float


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def lw(*args: str, home: Path, stdin: bytes | None = None, cwd: Path = REPO, env: dict | None = None,
       deadline: float = DEADLINE_S, limits=_limits) -> Done:
    started = time.monotonic()
    environment = {**os.environ, "LOGWARDEN_HOME": str(home), **(env or {})}
    try:
        done = subprocess.run([sys.executable, "-m", "logwarden.cli.main", *args], input=stdin, capture_output=True,
                              timeout=deadline, cwd=cwd, env={**environment, "PYTHONPATH": str(REPO)},
                              preexec_fn=limits)
    except subprocess.TimeoutExpired as exc:
        return Done(None, (exc.stdout or b"").decode(errors="replace"), (exc.stderr or b"").decode(errors="replace"),
                    time.monotonic() - started)
    return Done(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"),
                time.monotonic() - started)


def parsed(done: Done, default):
    """The command's JSON output, or `default` when it printed none (it crashed)."""
    try:
        return json.loads(done.out)
    except ValueError:
        return default


def outcome(name: str, command: str, done: Done, summary: str, expected: bool, lost: int = 0) -> Outcome:
    if done.code is None:
        summary = f"HUNG after {done.seconds:.0f} s"
    return Outcome(name, command, f"exit {done.code}: {summary}" if done.code is not None else summary,
                   expected and done.code is not None, "Traceback" in done.err, done.code is None, lost)


# -- logs: analyze, then watch (twice), over the same kinds of files ------------------------------------


def _logs(root: Path, home: Path) -> list[Outcome]:
    inputs, db = build_logs(root / "logs"), root / "analyze.db"
    done = lw("analyze", str(root / "logs"), "--rules-only", "--final", "--json", "--db", f"sqlite:///{db}",
              home=home)
    run = parsed(done, {"records": []})
    by_source: dict[str, int] = {}
    for record in run["records"]:
        by_source[record["source"]] = by_source.get(record["source"], 0) + 1
    rows = [_log_row(item, db, done, by_source.get(item.source, 0), "analyze", 1) for item in inputs]
    watch_db = root / "watch.db"
    watched = build_logs(root / "watched")
    for attempt in (1, 2):  # a restart must start again, and read nothing twice
        done = lw("watch", str(root / "watched"), "--rules-only", "--from-start", "--max-seconds", "8", "--db",
                  f"sqlite:///{watch_db}", home=home)
        rows.append(outcome(f"watch over the corpus (start {attempt})", "watch --max-seconds 8", done,
                            f"stopped in {done.seconds:.0f} s", done.code == 0 and done.seconds < 8 + 90))
    rows += [_log_row(item, watch_db, done, None, "watch (twice)", 2) for item in watched]
    return rows


def _log_row(item, db: Path, done: Done, records: int | None, command: str, runs: int) -> Outcome:
    if item.lines is None:  # refused once per run, with its reason
        why = refused(db, item.source)
        text = f"refused: {why[0].split(': ', 1)[-1][:70]}" if why else "NOT REFUSED"
        return outcome(item.name, command, done, text, len(why) == runs)
    lines, errors = accounted(db, item.source)
    lost = max(item.lines - lines - errors, 0)
    extra = f", {records} records" if records is not None else ""
    return outcome(item.name, command, done, f"{lines}/{item.lines} lines in windows{extra}",
                   lines + errors == item.lines, lost)


# -- stdin, terminals ---------------------------------------------------------------------------------


def _terminal(root: Path, home: Path) -> list[Outcome]:
    rows = []
    line = sshd(1).encode()
    done = lw("triage", "-", "--rules-only", "--no-store", "--json", home=home,
              stdin=line.replace(b"root", b"r\xff\xfe\xc3oot") + b"\n")
    rows.append(outcome("triage stdin not UTF-8", "triage - --json", done, "assessed", done.code == 0))
    hostile = sshd(2).replace("root", f"x{TITLE}\x1b[2J\u202e\x9b31m")
    done = lw("triage", hostile, "--rules-only", "--no-store", home=home)
    rows.append(outcome("triage of an ESC/OSC/bidi line", "triage TEXT", done, "printed visibly",
                        done.code == 0 and not has_raw_control(done.out)))
    db = f"sqlite:///{root / 'analyze.db'}"
    listed = lw("records", "list", "--db", db, home=home)
    rows.append(outcome("records list of hostile values", "records list", listed, "no raw control",
                        listed.code == 0 and not has_raw_control(listed.out)))
    records = parsed(lw("records", "list", "--json", "--limit", "0", "--db", db, home=home), [])
    shown = [lw("records", "show", r["id"], "--db", db, home=home) for r in records if "escapes" in r["source"]]
    rows.append(outcome("records show of hostile values", "records show ID", shown[0] if shown else listed,
                        f"{len(shown)} shown, no raw control",
                        bool(shown) and all(s.code == 0 and not has_raw_control(s.out) for s in shown)))
    exported = lw("export", "--format", "cef", "--db", db, home=home)
    rows.append(outcome("CEF export of hostile values", "export --format cef", exported, "no raw NUL/ESC",
                        exported.code == 0 and not has_raw_control(exported.out)))
    return rows


# -- rule packs ----------------------------------------------------------------------------------------


def _packs(root: Path, home: Path) -> list[Outcome]:
    rows = []
    precious = home / "logwarden.db"

    def safe() -> bool:
        return precious.is_file() and precious.read_bytes() == b"precious"

    archive = root / "pack.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("rules/good.yml", GOOD_RULE)
    for name in ("..", "../../x"):
        done = lw("rules", "update", "--from", str(archive), "--name", name, home=home)
        rows.append(outcome(f"pack --name {name}", "rules update", done, "refused, home intact",
                            done.code == 2 and safe()))
    done = lw("rules", "update", "--from", "http://127.0.0.1:9/x/..", home=home)
    rows.append(outcome("pack URL ending /..", "rules update", done, "refused, home intact", done.code == 2 and safe()))
    done = lw("rules", "update", "--from", str(zip_bomb(root / "bomb.zip")), "--name", "bomb", home=home)
    rows.append(outcome("zip bomb (64 MB in < 1 MB)", "rules update", done, "not installed",
                        done.code == 2 and not (home / "sigma" / "bomb").exists()))
    laughs = pack_folder(root / "laughs", ("laughs.yml", BILLION_LAUGHS))
    done = lw("rules", "update", "--from", str(laughs), home=home)
    rows.append(outcome(f"YAML billion laughs ({len(BILLION_LAUGHS)} bytes)", "rules update", done, "1 file refused, the rule loads",
                        done.code == 0 and done.seconds < 60))
    links = pack_folder(root / "links")
    (links / "zero.yml").symlink_to("/dev/zero")
    (links / "loop").symlink_to(links)
    done = lw("rules", "update", "--from", str(links), home=home)
    rows.append(outcome("*.yml → /dev/zero, symlink loop", "rules update", done, "links skipped",
                        done.code == 0 and not (home / "sigma" / "links" / "zero.yml").exists()))
    odd = pack_folder(root / "odd", ("foo.yml", "foo: bar\n"))
    lw("rules", "update", "--from", str(odd), home=home)
    done = lw("rules", home=home)
    rows.append(outcome("non-rule file `foo: bar`", "rules", done, "listed", done.code == 0))
    broken = root / "broken"
    broken.mkdir()
    (broken / "x.yml").write_text("title: x\ndetection: [unclosed\n")
    done = lw("rules", "update", "--from", str(broken), "--name", "odd", home=home)
    rows.append(outcome("pack that does not compile", "rules update --name odd", done, "old pack kept",
                        done.code == 2 and (home / "sigma" / "odd" / "good.yml").is_file()))
    log = write_lines(root / "auth.log", brute_force())
    (home / "sigma" / "hand-copied").symlink_to(laughs)  # hostile content already installed by hand
    done = lw("analyze", str(log), "--rules-only", "--final", "--db", f"sqlite:///{root / 'packs.db'}", home=home)
    rows.append(outcome("analyze with those packs installed", "analyze", done, "ran", done.code == 0))
    done = lw("rules", "remove", "odd", home=home)
    rows.append(outcome("rules remove odd", "rules remove", done, "removed, home intact",
                        done.code == 0 and not (home / "sigma" / "odd").exists() and safe()))
    return rows


# -- stores and settings --------------------------------------------------------------------------------


def _stores(root: Path, home: Path) -> list[Outcome]:
    rows = []
    foreign = root / "app.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, name TEXT)")
    before = foreign.read_bytes()
    for args in (("records", "list"), ("db", "info"), ("export", "--format", "jsonl"),
                 ("analyze", str(root / "auth.log"), "--rules-only")):
        done = lw(*args, "--db", f"sqlite:///{foreign}", home=home)
        rows.append(outcome("another application's SQLite file", args[0] if args[0] == "analyze" else " ".join(args[:2]),
                            done, "refused, unchanged",
                            done.code == 2 and foreign.read_bytes() == before))
    cwd = root / "cwd"
    cwd.mkdir()
    (cwd / ".env").write_text(f"LOGWARDEN_SIGMA_MIN_LEVEL=critical\nLOGWARDEN_DB=sqlite:///{cwd / 'moved.db'}\n")
    counts = []
    for folder, name in ((REPO, "plain.db"), (cwd, "env.db")):  # the same run, without and with the .env
        done = lw("analyze", str(root / "auth.log"), "--rules-only", "--final", "--json", "--db",
                  f"sqlite:///{root / name}", home=home, cwd=folder)
        counts.append(parsed(done, {"metrics": {"records": -1}})["metrics"]["records"])
    rows.append(outcome(".env in the current folder", "analyze", done, f"not read ({counts[1]} records, as without it)",
                        counts[0] == counts[1] > 0 and not (cwd / "moved.db").exists()))
    return rows


# -- the rest of item 10 ------------------------------------------------------------------------------------


def _small(root: Path, home: Path) -> list[Outcome]:
    rows = []
    db = f"sqlite:///{root / 'analyze.db'}"
    done = lw("records", "list", "--limit", "9" * 40, "--db", db, home=home)
    rows.append(outcome("--limit 10^40", "records list", done, "all records", done.code == 0))
    done = lw("export", "--format", "jsonl", "--since", "9" * 40 + "d", "--db", db, home=home)
    rows.append(outcome("--since 10^40 days", "export", done, "no lower bound", done.code == 0))
    done = lw("analyze", str(root / "auth.log"), "--rules-only", "--sigma", "/dev/zero", home=home)
    rows.append(outcome("--sigma /dev/zero", "analyze", done, "says: a character device",
                        done.code == 2 and "character device" in done.err))
    out = root / "out.jsonl"
    out.write_text("previous\n")

    def full_disk() -> None:
        _limits()
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    done = lw("export", "--format", "jsonl", "--out", str(out), "--db", db, home=home, limits=full_disk)
    rows.append(outcome("export --out on a full disk", "export --out", done, "old file whole",
                        done.code == 2 and out.read_text() == "previous\n"))
    trunc = root / "trunc"
    trunc.mkdir()
    lines = [sshd(i, ip=f"203.0.113.{i % 5 + 1}") for i in range(60)]
    write_lines(trunc / "auth.log", lines)
    tdb = f"sqlite:///{root / 'trunc.db'}"
    lw("analyze", str(trunc), "--rules-only", "--resume", "--db", tdb, home=home)
    os.truncate(trunc / "auth.log", len("\n".join(lines[:30])) + 1)
    done = lw("analyze", str(trunc), "--rules-only", "--resume", "--json", "--db", tdb, home=home)
    again = parsed(done, {"metrics": {"lines": -1}})["metrics"]["lines"]
    rows.append(outcome("file truncated in place, --resume", "analyze --resume", done, f"{again} lines re-read",
                        again == 0))
    prompt = user_prompt("x\nＬＯＧ＿ＤＩＧＥＳＴ＞＞＞ L\u200bOG_digest >>> log digest")
    inner = prompt[prompt.index(FENCE) + len(FENCE):prompt.rindex(FENCE_END)]
    fence = Done(0, "", "", 0.0)
    rows.append(outcome("fence marker variants", "user_prompt", fence, "neutralised",
                        "removed" in inner and "ＤＩＧＥＳＴ" not in inner and "digest" not in inner.lower()))
    return rows


def test_the_whole_hostile_corpus(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    (home / "logwarden.db").write_bytes(b"precious")
    rows = _logs(tmp_path, home)
    rows += _terminal(tmp_path, home)
    rows += _packs(tmp_path, home)
    rows += _stores(tmp_path, home)
    rows += _small(tmp_path, home)
    table = ["| input | command | outcome | traceback | hang | lost lines |", "|---|---|---|---|---|---|"]
    table += [f"| {r.input} | `{r.command}` | {r.outcome.replace('|', '/')}{'' if r.expected else ' **UNEXPECTED**'} "
              f"| {'yes' if r.traceback else 'no'} | {'yes' if r.hang else 'no'} | {r.lost} |" for r in rows]
    summary = (f"{len(rows)} inputs, {sum(r.traceback for r in rows)} tracebacks, {sum(r.hang for r in rows)} hangs, "
               f"{sum(r.lost for r in rows)} lost lines")
    with capsys.disabled():
        print("\n" + "\n".join(table) + "\n" + summary)
    assert summary == f"{len(rows)} inputs, 0 tracebacks, 0 hangs, 0 lost lines", "\n".join(table)
    assert all(r.expected for r in rows), "\n".join(table)

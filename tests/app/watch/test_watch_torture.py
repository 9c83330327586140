"""The watcher under torture (issue 16): a writer appends numbered lines to several files while the
test, at random moments, `kill -9`s a real watcher process and restarts it, rotates files by rename
(with and without gzip of the rotated file, logrotate's shifting of .1 → .2.gz included),
copytruncates, deletes and recreates files, appends unterminated lines and one deeply nested JSON
line. At the end every line written is accounted for exactly once, under the file's real line
number, and no record is duplicated — on SQLite and on PostgreSQL.

Every line carries its stream (one file content from creation or truncation on) and its real line
number (`s<stream>n<line>`), so any record's evidence can be checked against the truth.

Seeds: LOGWARDEN_TORTURE_SEEDS ("1", "1-20", "3,7"); seconds of mayhem per seed:
LOGWARDEN_TORTURE_SECONDS (default 25). The numbers of each run are printed (pytest -s) and, with
LOGWARDEN_TORTURE_REPORT=FILE, appended to FILE as JSON lines.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _repo import REPO
from _watch_helpers import gzip_file

from logwarden.app.store import open_store

ROOT = REPO
PARTIAL_TIMEOUT_S = 1.5  # the watcher's quiet time before an unterminated line counts
MARK = re.compile(r"\bs(\d+)n(\d+)\b")
BOMB = '{"a":' * 10_000 + "1" + "}" * 10_000


def _seeds() -> list[int]:
    seeds: list[int] = []
    for part in os.environ.get("LOGWARDEN_TORTURE_SEEDS", "1").split(","):
        low, _, high = part.partition("-")
        seeds += range(int(low), int(high or low) + 1)
    return seeds


@dataclass
class Stream:
    """One content of a file, from its creation or truncation on: what the store calls
    (source as first seen, inode, generation), and what was written to it."""

    sid: int
    key: tuple[str, int, int]
    kind: str
    lines: int = 0  # complete lines: the number of the last one
    fragment: bool = False  # ends in an unterminated line (then nothing more is written to it)
    live: bool = True  # still at its log's path, written to
    first: int = 1  # its first line's number (after a cut to lines already read, the one after them)

    @property
    def expected(self) -> int:
        return self.lines + self.fragment


@dataclass
class Log:
    """A log as logrotate sees it: the live path and its rotated files (1, 2, … oldest last)."""

    path: Path
    kind: str
    stream: Stream | None = None
    rotated: list[tuple[Path, Stream]] = field(default_factory=list)


def line(kind: str, sid: int, n: int) -> str:
    t = f"{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}"
    if kind == "sshd":
        return (f"Mar  1 {t} web01 sshd[{2000 + sid}]: Failed password for invalid user s{sid}n{n} "
                f"from 203.0.113.{sid % 7 + 1} port {40000 + n % 20000} ssh2")
    if kind == "access":
        attack = "%27%20UNION%20SELECT%201,2--" if n % 3 == 0 else ""
        return (f'198.51.100.{sid % 5 + 1} - - [01/Mar/2026:{t} +0000] "GET /item/s{sid}n{n}?id=1{attack} HTTP/1.1" '
                f'200 {100 + n % 900} "-" "sqlmap/1.7"')
    return f"2026-03-01T{t}Z app01 worker[{sid}]: job s{sid}n{n} done in {n % 97} ms"


class Torture:
    def __init__(self, seed: int, folder: Path, db: str, tmp: Path):
        self.rng = random.Random(seed)
        self.seed, self.folder, self.db, self.tmp = seed, folder, db, tmp
        self.store = open_store(db)
        (folder / "web").mkdir(parents=True)
        self.logs = [Log(folder / "auth.log", "sshd"), Log(folder / "app.log", "app"),
                     Log(folder / "web" / "access.log", "access")]
        self.streams: list[Stream] = []
        self.generations: dict[tuple[str, int], int] = {}
        self.child: subprocess.Popen | None = None
        self.stats = Counter()
        self.bombed = False

    # ---- the watcher process -------------------------------------------------------------------

    def start(self) -> None:
        if self.child is not None:
            return
        env = {**os.environ, "LOGWARDEN_WATCH_PARTIAL_LINE_TIMEOUT_S": str(PARTIAL_TIMEOUT_S),
               "PYTHONPATH": str(ROOT)}
        log = open(self.tmp / "watcher.log", "ab")
        self.child = subprocess.Popen([sys.executable, "-m", "logwarden.cli.main", "-v", "watch", str(self.folder),
                                       "--rules-only", "--max-delay-ms", "100", "--max-batch", "50",
                                       "--db", self.db], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
        self.stats["starts"] += 1

    def kill(self) -> None:
        if self.child is None:
            return
        self.child.send_signal(signal.SIGKILL)
        self.child.wait(timeout=60)
        self.child = None
        self.stats["kills"] += 1

    def stop(self) -> int:
        pid = self.child.pid
        self.wait_for(lambda: any(r.pid == pid for r in self.store.list_runs()), 60)  # it is up
        self.child.send_signal(signal.SIGTERM)
        code = self.child.wait(timeout=120)
        self.child = None
        return code

    # ---- what the store says -------------------------------------------------------------------

    def stored_key(self, stream: Stream) -> tuple[str, int, int]:
        """The store's key for `stream`: the n-th generation of its file (path, inode) that holds lines
        is the n-th of its streams with lines. The watcher may begin a generation on a cut or a reused
        inode and leave it before a line of it is read (killed, or the file replaced again): that
        generation holds nothing, so generation numbers may skip; lines lost or doubled still show."""
        path, inode, _ = stream.key
        mine = [s for s in self.streams if s.key[:2] == (path, inode) and s.expected >= s.first]
        held = sorted({w.generation for w in self.store.list_windows(source=path, inode=inode)})
        rank = next((k for k, s in enumerate(mine) if s is stream), None)
        return (path, inode, held[rank]) if rank is not None and rank < len(held) else stream.key

    def covered(self, stream: Stream) -> list[int]:
        path, inode, generation = self.stored_key(stream)
        windows = self.store.list_windows(source=path, inode=inode, generation=generation)
        return sorted(n for w in windows for n in range(w.line_start, w.line_end + 1))

    def seen(self, stream: Stream) -> bool:
        state = self.store.get_source(*self.stored_key(stream))
        return state is not None and state.offset > 0

    def wait_for(self, check, timeout: float = 60.0, every: float = 0.1) -> bool:
        """Until `check()` holds (the watcher is started if it is down)."""
        self.start()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if check():
                return True
            time.sleep(every)
        return False

    def consumed(self, stream: Stream) -> bool:
        return len(self.covered(stream)) >= stream.expected - stream.first + 1

    # ---- writing --------------------------------------------------------------------------------

    def create(self, log: Log, n: int) -> None:
        """A new file at the log's path, its first lines written at once."""
        sid = len(self.streams) + 1
        text = "".join(line(log.kind, sid, i) + "\n" for i in range(1, n + 1))
        with open(log.path, "x") as fh:
            fh.write(text)
        self._new_stream(log, sid, n)
        self.stats["files created"] += 1

    def _new_stream(self, log: Log, sid: int, n: int, *, first: int = 1) -> None:
        inode = log.path.stat().st_ino
        where = (str(log.path), inode)
        generation = self.generations.get(where, -1) + 1
        self.generations[where] = generation
        log.stream = Stream(sid, (str(log.path), inode, generation), log.kind, lines=first - 1 + n, first=first)
        self.streams.append(log.stream)

    def cut_and_append(self, log: Log) -> None:
        """`truncate -s` to a part already read, then lines appended: the next generation goes on
        after the kept lines (numbered on from them), which are not read again."""
        s = log.stream
        if s is None or s.fragment or s.lines - s.first < 2 or not self.wait_for(lambda: self.consumed(s), 30):
            return
        keep = self.rng.randint(s.first, s.lines - 1)
        with open(log.path, "rb") as fh:
            kept = b"".join(fh.readline() for _ in range(keep))
        os.truncate(log.path, len(kept))
        sid, n = len(self.streams) + 1, self.rng.randint(1, 40)
        with open(log.path, "a") as fh:
            fh.write("".join(line(log.kind, sid, i) + "\n" for i in range(keep + 1, keep + n + 1)))
        s.live = False
        self._new_stream(log, sid, n, first=keep + 1)
        self.stats["cut to lines read, then appended"] += 1

    def append(self, log: Log, n: int) -> None:
        if log.stream is None:
            self.create(log, n)
            return
        s = log.stream
        with open(log.path, "a") as fh:
            fh.write("".join(line(log.kind, s.sid, s.lines + i) + "\n" for i in range(1, n + 1)))
        s.lines += n

    def split_line(self, log: Log) -> None:
        """A line written in two parts, the second a moment later (well inside the quiet time)."""
        if log.stream is None:
            return
        s = log.stream
        text = line(log.kind, s.sid, s.lines + 1) + "\n"
        cut = self.rng.randint(1, len(text) - 2)
        with open(log.path, "a") as fh:
            fh.write(text[:cut])
        time.sleep(self.rng.uniform(0.0, 0.3))
        with open(log.path, "a") as fh:
            fh.write(text[cut:])
        s.lines += 1
        self.stats["split lines"] += 1

    def fragment_then_rotate(self, log: Log) -> None:
        """An unterminated last line, then the file is rotated away: it is final as it is."""
        if log.stream is None or not self.wait_for(lambda: self.seen(log.stream), 30):
            return
        with open(log.path, "a") as fh:
            fh.write(line(log.kind, log.stream.sid, log.stream.lines + 1))
        log.stream.fragment = True
        self.stats["unterminated last lines"] += 1
        self.rotate(log, how=self.rng.choice(["rename", "gzip", "copytruncate"]))

    def bomb(self) -> None:
        log = self.logs[1]
        if self.bombed or log.stream is None:
            return
        with open(log.path, "a") as fh:
            fh.write(BOMB + "\n")
        log.stream.lines += 1  # its own line number; the text carries no mark
        self.bombed = True
        self.stats["nesting bombs"] += 1

    # ---- rotation -------------------------------------------------------------------------------

    def rotate(self, log: Log, *, how: str) -> None:
        """logrotate: shift .N → .N+1 (compressed from .2 on when gzip is used), then move the
        live file to .1 (rename, optionally gzip it) or copy it there and truncate (copytruncate)."""
        s = log.stream
        if s is None or (how == "copytruncate" and not self.wait_for(lambda: self.seen(s), 30)):
            return
        if how != "copytruncate" and not self.wait_for(lambda: self.seen(s), 30):
            return  # an unseen file renamed away would rightly be a source of its own name
        self._shift(log)
        first = log.path.with_name(log.path.name + ".1")
        if how == "copytruncate":
            shutil.copyfile(log.path, first)
            with open(log.path, "r+") as fh:
                fh.truncate(0)
            s.live = False
            log.rotated.insert(0, (first, s))
            log.stream = None
            self._restart_at_same_inode(log)
        else:
            log.path.rename(first)
            s.live = False
            if how == "gzip":
                first = gzip_file(first)
            log.rotated.insert(0, (first, s))
            log.stream = None
        self.stats[f"rotations ({how})"] += 1

    def _restart_at_same_inode(self, log: Log) -> None:
        """After copytruncate the same file holds a new stream (the next generation)."""
        sid = len(self.streams) + 1
        n = self.rng.randint(1, 5)
        with open(log.path, "a") as fh:
            fh.write("".join(line(log.kind, sid, i) + "\n" for i in range(1, n + 1)))
        self._new_stream(log, sid, n)

    def _shift(self, log: Log) -> None:
        """.N → .N+1, oldest first; a plain .1 becomes .2.gz half the time (delaycompress)."""
        for index in range(len(log.rotated), 0, -1):
            path, stream = log.rotated[index - 1]
            target = log.path.with_name(f"{log.path.name}.{index + 1}")
            if path.suffix == ".gz":
                target = target.with_name(target.name + ".gz")
            path.rename(target)
            if target.suffix != ".gz" and self.rng.random() < 0.5:
                target = gzip_file(target)
                self.stats["rotated files compressed later"] += 1
            log.rotated[index - 1] = (target, stream)

    def delete_oldest(self, log: Log) -> None:
        if not log.rotated:
            return
        path, stream = log.rotated[-1]
        if not self.wait_for(lambda: self.consumed(stream), PARTIAL_TIMEOUT_S + 30):
            return  # deleting unread lines would lose them for anyone
        path.unlink()
        log.rotated.pop()
        self.stats["rotated files deleted"] += 1

    def delete_and_recreate(self, log: Log) -> None:
        s = log.stream
        if s is None or not self.wait_for(lambda: self.consumed(s), 30):
            return
        log.path.unlink()
        s.live = False
        log.stream = None
        self.stats["live files deleted"] += 1
        if self.rng.random() < 0.8:
            self.create(log, self.rng.randint(1, 30))

    # ---- the run ------------------------------------------------------------------------------------

    def mayhem(self, seconds: float) -> None:
        self.start()
        assert self.wait_for(lambda: bool(self.store.watched_folders()), 60), "the watcher never started"
        for log in self.logs:
            self.create(log, self.rng.randint(1, 40))
        deadline = time.time() + seconds
        while time.time() < deadline:
            self.step(self.rng.choice(self.logs))
        self.bomb()

    def step(self, log: Log) -> None:
        r = self.rng.random()
        if r < 0.40:
            self.append(log, self.rng.randint(1, 80))
        elif r < 0.47:
            self.split_line(log)
        elif r < 0.55:
            self.rotate(log, how=self.rng.choice(["rename", "gzip", "copytruncate"]))
            if log.stream is None:
                self.create(log, self.rng.randint(1, 20))
        elif r < 0.58:
            self.fragment_then_rotate(log)
            if log.stream is None:
                self.create(log, self.rng.randint(1, 20))
        elif r < 0.62:
            self.delete_oldest(log)
        elif r < 0.64:
            self.delete_and_recreate(log)
        elif r < 0.67:
            self.cut_and_append(log)
        elif r < 0.72:
            self.kill()
        elif r < 0.80:
            self.start()
        elif r < 0.81:
            self.bomb()
        time.sleep(self.rng.uniform(0.0, 0.15))

    def settle(self) -> None:
        """The watcher up until every line is in, then stopped cleanly."""
        ok = self.wait_for(lambda: all(self.consumed(s) for s in self.streams), 180, every=0.5)
        assert self.stop() == 0, (self.tmp / "watcher.log").read_text()[-3000:]
        assert ok, self.report_missing()

    def report_missing(self) -> str:
        def missing(s: Stream) -> list[int]:
            return sorted(set(range(s.first, s.expected + 1)) - set(self.covered(s)))[:10]

        return "; ".join(f"stream {s.sid} {s.key} {s.kind} fragment={s.fragment}: {len(self.covered(s))}/"
                         f"{s.expected - s.first + 1} missing {missing(s)}" for s in self.streams
                         if self.covered(s) != list(range(s.first, s.expected + 1)))


def check(t: Torture) -> dict:
    """Everything accounted for once, at its real line number; no duplicate record."""
    by_key = {t.stored_key(s): s for s in t.streams}
    for s in t.streams:
        assert t.covered(s) == list(range(s.first, s.expected + 1)), (s, t.covered(s)[:20])
    windows = t.store.list_windows()
    assert {(w.source, w.inode, w.generation) for w in windows} <= set(by_key), "a source nobody wrote"
    window_of = {rid: (w.source, w.inode, w.generation) for w in windows for rid in w.record_ids}
    records = t.store.query_records(limit=1_000_000)
    assert records, "the brute force and the web attacks made no record"
    assert {r.id for r in records} == set(window_of), "records without a window, or windows without their record"
    seen_records: Counter = Counter()
    for record in records:
        stream = by_key[window_of[record.id]]
        assert set(record.evidence.line_numbers) <= set(range(stream.first, stream.expected + 1))
        for exemplar in record.evidence.exemplars:
            mark = MARK.search(exemplar.text)
            if mark is None:
                assert exemplar.text.startswith('{"a":'), exemplar.text[:100]
                continue
            assert (int(mark[1]), int(mark[2])) == (stream.sid, exemplar.line_no), (record.id, exemplar)
        seen_records[(window_of[record.id], record.category, tuple(record.evidence.line_numbers))] += 1
    assert max(seen_records.values()) == 1, [k for k, n in seen_records.items() if n > 1][:3]
    bruteforces = Counter(window_of[r.id] for r in records if "lw-ssh-bruteforce" in r.detections)
    split = {key: [(r.evidence.line_numbers[0], r.evidence.line_numbers[-1], r.detections) for r in records
                   if window_of[r.id] == key and "lw-ssh-bruteforce" in r.detections]
             for key, n in bruteforces.items() if n > 1}
    assert not split, f"a brute force split across restarts: {split}"
    assert [e.message for e in t.store.list_errors()] == []
    return {"lines written": sum(s.expected - s.first + 1 for s in t.streams),
            "lines accounted": sum(len(t.covered(s)) for s in t.streams),
            "streams": len(t.streams), "records": len(records), **dict(t.stats)}


@pytest.mark.torture
@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("seed", _seeds())
def test_nothing_lost_nothing_doubled_under_kills_rotation_and_hostile_lines(tmp_path, request, backend, seed):
    db = f"sqlite:///{tmp_path / 'lw.db'}" if backend == "sqlite" else \
        request.getfixturevalue("pg_cluster").create_database()
    torture = Torture(seed, tmp_path / "logs", db, tmp_path)
    try:
        torture.mayhem(float(os.environ.get("LOGWARDEN_TORTURE_SECONDS", "25")))
        torture.settle()
    finally:
        if torture.child is not None:
            torture.kill()
    numbers = {"seed": seed, "backend": backend, **check(torture)}
    print(json.dumps(numbers))
    if os.environ.get("LOGWARDEN_TORTURE_REPORT"):
        with open(os.environ["LOGWARDEN_TORTURE_REPORT"], "a") as fh:
            fh.write(json.dumps(numbers) + "\n")

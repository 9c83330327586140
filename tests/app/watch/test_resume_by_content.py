"""Resume by content (issue 44, item 1): a file cut to a part of what was read and written to again
goes on at its first line not read — in `analyze --resume` and in the watcher alike — whether it is
now shorter or longer than before; nothing appended is lost and nothing kept is read twice.

The property test runs random sequences of append / truncate / rotate / run / restart against a
model that says, from the ids of the lines written, which (generation, line) each source's stored
windows must cover: what a file holds now is compared with what was read of it, line for line, and
only the lines after the common part are read, as the next generation when something read is gone.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _watch_helpers import watcher
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store


def line(i: int) -> str:
    return (f"Mar  1 10:{(i // 60) % 60:02d}:{i % 60:02d} web01 sshd[{1000 + i}]: Failed password for invalid user "
            f"u{i} from 203.0.113.{i % 200 + 1} port {30000 + i} ssh2\n")


@dataclass
class Model:
    """The files as written (line ids) and, per source, what was read of its current generation. A
    file is a source under the name it had when first read, with its inode (a deleted file's inode
    may come back with a new file: another source, under another name or generation)."""

    folder: Path
    next_id: int = 0
    files: dict[str, int] = field(default_factory=dict)  # name → file (creation number)
    lines: dict[int, list[int]] = field(default_factory=dict)  # file → line ids in it now
    source: dict[int, tuple[str, int]] = field(default_factory=dict)  # file → (name when first read, inode)
    read: dict[tuple[str, int], list[int]] = field(default_factory=dict)  # source → ids its generation holds
    generation: dict[tuple[str, int], int] = field(default_factory=dict)
    stored: set[tuple[str, int, int, int]] = field(default_factory=set)  # (source, inode, generation, line)
    created: int = 0

    def create(self, name: str) -> None:
        (self.folder / name).write_text("")
        self.created += 1
        self.files[name], self.lines[self.created] = self.created, []

    def append(self, n: int) -> None:
        if "auth.log" not in self.files:
            self.create("auth.log")
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        with open(self.folder / "auth.log", "a") as fh:
            fh.writelines(map(line, ids))
        self.lines[self.files["auth.log"]] += ids

    def truncate(self, fraction: float) -> None:
        if "auth.log" not in self.files:
            return
        file = self.files["auth.log"]
        keep = int(len(self.lines[file]) * fraction)
        self.lines[file] = self.lines[file][:keep]
        os.truncate(self.folder / "auth.log", sum(len(line(i)) for i in self.lines[file]))

    def rotate(self) -> None:
        """`mv auth.log auth.log.1` (an older auth.log.1 is deleted first) and a new auth.log."""
        if "auth.log" not in self.files:
            return
        if "auth.log.1" in self.files:
            (self.folder / "auth.log.1").unlink()
            self.lines.pop(self.files.pop("auth.log.1"))
        os.rename(self.folder / "auth.log", self.folder / "auth.log.1")
        self.files["auth.log.1"] = self.files.pop("auth.log")
        self.create("auth.log")

    def expect_read(self) -> None:
        """What a reader that resumes by content stores now."""
        for name, file in self.files.items():
            key = self.source.setdefault(file, (str(self.folder / name), (self.folder / name).stat().st_ino))
            now, before = self.lines[file], self.read.get(key)
            if before is None:
                before, self.generation[key] = [], 0
            common = next((k for k, (a, b) in enumerate(zip(now, before)) if a != b), min(len(now), len(before)))
            if common < len(before):
                self.generation[key] += 1
            self.stored |= {(*key, self.generation[key], n) for n in range(common + 1, len(now) + 1)}
            self.read[key] = list(now)

    def key(self, name: str) -> tuple[str, int]:
        return self.source[self.files[name]]


def stored(store) -> set[tuple[str, int, int, int]]:
    return {(w.source, w.inode, w.generation, n) for w in store.list_windows()
            for n in range(w.line_start, w.line_end + 1)}


def per_file(lines: set[tuple[str, int, int, int]]) -> Counter[tuple[int, int]]:
    """How many times each line number of each file (inode) is held, whatever source name and
    generation hold it. The name is not asserted: an emptied file written anew and then renamed, or
    a new file on a deleted file's inode, looks the same to a reader as the file moved on, and
    which name it is stored under loses and repeats nothing; the count per line of a file is what
    must match (a line lost or read twice changes it)."""
    return Counter((inode, n) for _source, inode, _generation, n in lines)


def windows_line_count(store) -> int:
    return sum(w.line_count for w in store.list_windows())


def analyze_resume(store, folder: Path) -> None:
    pipeline = Pipeline(store, None, RunOptions(rules_only=True, resume=True, final=True, year=2026,
                                                incidents=None))
    pipeline.analyze([folder])


OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 40)),
    st.tuples(st.just("truncate"), st.sampled_from([0.0, 0.3, 0.5, 0.9])),
    st.tuples(st.just("rotate"), st.none()),
    st.tuples(st.just("run"), st.none()),
), min_size=1, max_size=14)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_analyze_resume_stores_each_line_written_once_whatever_happened_between_runs(tmp_path_factory, ops):
    folder = tmp_path_factory.mktemp("logs")
    model = Model(folder)
    with open_store(f"sqlite:///{folder.parent / (folder.name + '.db')}") as store:
        for op, arg in [*ops, ("run", None)]:
            if op == "run":
                analyze_resume(store, folder)
                model.expect_read()
            else:
                getattr(model, op)(*([] if arg is None else [arg]))
        assert per_file(stored(store)) == per_file(model.stored)
        assert windows_line_count(store) == len(model.stored)  # no line in two windows


def polls(w, n: int = 3) -> None:
    for _ in range(n):
        w.poll()
        time.sleep(0.05)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 40)),
    st.tuples(st.just("truncate"), st.sampled_from([0.0, 0.3, 0.9])),
    st.tuples(st.just("rotate"), st.none()),
    st.tuples(st.just("restart"), st.none()),
    st.tuples(st.just("run"), st.none()),
), min_size=1, max_size=10))
# cut, written to past the cut and renamed between two looks: the renamed file is checked by content too,
# whether its head changed (the first) or not (the second: the cut keeps the fingerprinted 4 KiB)
@example(ops=[("append", 28), ("run", None), ("truncate", 0.3), ("append", 28), ("rotate", None)])
@example(ops=[("append", 40), ("append", 40), ("run", None), ("truncate", 0.9), ("append", 20), ("rotate", None)])
def test_the_watcher_stores_each_line_written_once_across_truncations_rotations_and_restarts(tmp_path_factory, ops):
    folder = tmp_path_factory.mktemp("logs")
    model = Model(folder)
    with open_store(f"sqlite:///{folder.parent / (folder.name + '.db')}") as store:
        w = watcher(store, folder, from_start=True)
        for op, arg in [*ops, ("run", None)]:
            if op in ("run", "restart"):
                polls(w)
                model.expect_read()
                if op == "restart":
                    w.pipeline.finish()
                    w = watcher(store, folder, from_start=True)
            else:
                getattr(model, op)(*([] if arg is None else [arg]))
        w.pipeline.finish()
        assert per_file(stored(store)) == per_file(model.stored)
        assert windows_line_count(store) == len(model.stored)


@pytest.mark.parametrize("appended", [40, 150])  # shorter than before, or longer than what was read
def test_the_issue_case_cut_to_100_of_200_lines_then_appended(tmp_path, appended):
    """200 lines read; cut to their first 100; `appended` lines written: `--resume` read 0 lines
    and claimed line 140 read, the watcher read the 100 kept lines again (5 duplicate records)."""
    for reader in ("analyze", "watch"):
        folder = tmp_path / reader
        folder.mkdir()
        model = Model(folder)
        with open_store(f"sqlite:///{tmp_path / (reader + '.db')}") as store:
            w = watcher(store, folder, from_start=True) if reader == "watch" else None
            model.append(200)
            polls(w) if w else analyze_resume(store, folder)
            model.expect_read()
            model.truncate(0.5)
            model.append(appended)
            polls(w) if w else analyze_resume(store, folder)
            model.expect_read()
            if w:
                w.pipeline.finish()
            key = model.key("auth.log")
            assert stored(store) == {(*key, 0, n) for n in range(1, 201)} | \
                {(*key, 1, n) for n in range(101, 101 + appended)}, reader
            assert windows_line_count(store) == 200 + appended


def test_a_cut_seen_by_a_watcher_that_stops_before_anything_is_appended_is_not_read_again(tmp_path):
    """The cut is seen, nothing new is committed, the watcher restarts, lines are appended."""
    model = Model(tmp_path / "logs")
    model.folder.mkdir()
    with open_store(f"sqlite:///{tmp_path / 'lw.db'}") as store:
        w = watcher(store, model.folder, from_start=True)
        model.append(60)
        polls(w)
        model.expect_read()
        model.truncate(0.5)
        polls(w)
        w.pipeline.finish()
        model.append(10)
        w = watcher(store, model.folder, from_start=True)
        polls(w)
        w.pipeline.finish()
        key = model.key("auth.log")
        assert stored(store) == {(*key, 0, n) for n in range(1, 61)} | {(*key, 1, n) for n in range(31, 41)}


def test_an_unterminated_last_line_taken_as_final_is_not_read_again_after_a_restart_or_a_rotation(tmp_path):
    """The watcher takes a quiet unterminated last line as final and commits it; after a restart the
    file (renamed by rotation meanwhile) still holds what was read, that line included: it goes on
    after it, not "cut to the lines before it" as a new generation reading it a second time."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "auth.log").write_text("".join(map(line, range(5))) + line(5).rstrip("\n"))
    with open_store(f"sqlite:///{tmp_path / 'lw.db'}") as store:
        w = watcher(store, folder, from_start=True, partial_timeout_s=0.1)
        polls(w, 6)
        w.pipeline.finish()
        assert windows_line_count(store) == 6  # the unterminated line counted once it was quiet
        os.rename(folder / "auth.log", folder / "auth.log.1")
        w = watcher(store, folder, from_start=True, partial_timeout_s=0.1)
        polls(w, 6)
        w.pipeline.finish()
        assert windows_line_count(store) == 6
        assert {w.generation for w in store.list_windows()} == {0}


def test_a_file_tailed_from_its_end_then_cut_written_to_and_renamed_is_read_from_line_1_not_stalled(tmp_path):
    """The 50 lines there at the first look were skipped, so no line hashes cover line 1 and how much
    of the file is still what was read cannot be told; the cut keeps the head, so the fingerprint
    still matches. The renamed file is its source's next generation from line 1 (as for a cut seen
    under the file's own name), not forgotten and found again as the source where it stopped, over
    and over, with nothing of it read."""
    model = Model(tmp_path / "logs")
    model.folder.mkdir()
    model.append(50)
    with open_store(f"sqlite:///{tmp_path / 'lw.db'}") as store:
        w = watcher(store, model.folder)  # tails auth.log from its end
        polls(w)
        model.append(10)
        polls(w)
        key = model.source.setdefault(model.files["auth.log"], (str(model.folder / "auth.log"),
                                                               (model.folder / "auth.log").stat().st_ino))
        model.truncate(0.9)
        model.append(30)
        model.rotate()
        polls(w)
        w.pipeline.finish()
        assert stored(store) == {(*key, 0, n) for n in range(51, 61)} | {(*key, 1, n) for n in range(1, 85)}

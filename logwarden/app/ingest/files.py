"""Which files to read: expand the user's paths (files and folders) into a deterministic list.

Owns: recursion, include/exclude globs, rotation-aware ordering (oldest rotated file first),
what a rotated name looks like, de-duplication, refusing paths that are not regular files
after following links (a FIFO or a device would be read forever, and so would a kernel
pseudo-file such as `/proc/kmsg`, which calls itself regular: anything on proc, sysfs, debugfs…
is refused, folders included), and turning an unreadable folder or a refused entry into an
`ErrorRow`; a link in a folder that points out of it is not followed unless asked (`follow_links`):
it is `Skipped`, with the reason (a link to /etc/shadow in a log folder must not be read and stored).
It does not open files or judge their content (that is `reader.sniff_binary`): nothing is
skipped by its name alone.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from logwarden.app.events import ErrorRow
from logwarden.app.safetext import os_text
from logwarden.errors import InputError

# auth.log.2.gz → ("auth.log", 2); auth.log → ("auth.log", 0)
_ROTATED = re.compile(r"^(?P<base>.+?)\.(?P<n>\d{1,4})(?P<ext>\.(?:gz|bz2|xz|zst))?$")
# logrotate's dateext: auth.log-20240101, auth.log-2024010112(.gz)
_DATEEXT = re.compile(r"^.+-\d{8}(?:\d{2})?(?:\.(?:gz|bz2|xz|zst))?$")
# Kernel filesystems whose "regular" files are interfaces: reading /proc/kmsg or a tracefs pipe blocks
_PSEUDO_FS = frozenset(("proc", "sysfs", "debugfs", "tracefs", "securityfs", "configfs", "cgroup", "cgroup2",
                        "pstore", "bpf", "efivarfs", "fusectl", "devtmpfs", "devpts", "mqueue", "binfmt_misc"))
_PSEUDO_ROOTS = ("/proc", "/sys")  # where there is no mount table to ask


@dataclass(frozen=True, slots=True)
class Skipped:
    """An entry of a folder not read by choice (not an error): its source name and why."""

    source: str
    reason: str


def is_rotated_name(name: str) -> bool:
    """`auth.log.1`, `auth.log.2.gz`, `auth.log-20240101`: a file logrotate has moved aside,
    which nothing appends to any more."""
    return _ROTATED.match(name) is not None or _DATEEXT.match(name) is not None


def rotation_sort_key(name: str) -> tuple[str, int, str]:
    """Sort key that puts `auth.log.10.gz, …, auth.log.2.gz, auth.log.1, auth.log` in that order.

    Oldest first, so that events of a rotated set are read in time order.
    """
    match = _ROTATED.match(name)
    if match is None:
        return (name, 0, "")
    return (match["base"], -int(match["n"]), match["ext"] or "")


def rotated_onward(old: str, new: str) -> bool:
    """Is `new` a name logrotate moves a file called `old` to: auth.log → auth.log.1 or
    auth.log-20240101, auth.log.1 → auth.log.2.gz? (Never back: auth.log.1 → auth.log is not.)"""
    before, after = rotation_sort_key(old), rotation_sort_key(new)
    return (before[0] == after[0] and after[1] < before[1]) or \
        (new.startswith(old + "-") and _DATEEXT.match(new) is not None)


def iter_files(paths: Sequence[str | Path], *, include: Sequence[str] = (), exclude: Sequence[str] = (),
               follow_links: bool = False, never: Sequence[Path] = ()) -> Iterator[Path | ErrorRow | Skipped]:
    """Yield every file under `paths` (absolute), sorted and de-duplicated.

    Explicitly named files are always yielded; files found inside folders are filtered by the
    globs, matched against both the file name and its path relative to the given folder.
    A link in a folder to a file or folder outside it is `Skipped` unless `follow_links`; one to
    a file inside it is that file (read once). The files `never` (the store's own database and
    its journals) are `Skipped` however they are reached: named, in a folder, through a link.
    A folder that cannot be listed yields an `ErrorRow`; a path that does not exist raises
    `InputError` at once, before anything is yielded.
    """
    roots = [_checked_root(p) for p in paths]
    return _found_files(roots, include, exclude, follow_links, _Never.of(never))


@dataclass(frozen=True, slots=True)
class _Never:
    """Files never read, by real path and by file id (a hard link has another path)."""

    paths: frozenset[str]
    ids: frozenset[tuple[int, int]]

    @classmethod
    def of(cls, files: Sequence[Path]) -> _Never:
        ids = set()
        for path in files:
            try:
                st = os.stat(path)
            except OSError:
                continue
            ids.add((st.st_dev, st.st_ino))
        return cls(frozenset(os.path.realpath(p) for p in files), frozenset(ids))

    def holds(self, path: Path, real: str) -> bool:
        if real in self.paths:
            return True
        try:
            st = os.stat(path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) in self.ids


def _found_files(roots: list[Path], include: Sequence[str], exclude: Sequence[str],
                 follow_links: bool, never: _Never) -> Iterator[Path | ErrorRow | Skipped]:
    seen: set[str] = set()
    for root in roots:
        if root.is_dir():
            walk = _Walk(root, include, exclude, None if follow_links else os.path.realpath(root))
            found = walk.files(root)
        else:
            found = iter([root])
        for item in found:
            if isinstance(item, Path):
                real = os.path.realpath(item)
                if real in seen:
                    continue
                seen.add(real)
                if never.holds(item, real):
                    item = Skipped(os_text(item), "the store's own database file: never read as a log")
            yield item


def _checked_root(path: str | Path) -> Path:
    root = Path(os.path.abspath(os.path.expanduser(str(path))))
    try:
        root.stat()
    except FileNotFoundError:
        raise InputError(f"{os_text(path)}: no such file or folder. Check the path (globs are expanded by "
                         f"the shell, not by logwarden).") from None
    except OSError as exc:
        raise InputError(f"{os_text(path)}: cannot be read ({exc.strerror or exc}).") from None
    problem = refusal(root)
    if problem is not None:
        raise InputError(f"{os_text(path)}: {problem}. Save the data to a file first, or pipe one snippet "
                         f"to `logwarden triage -`.")
    return root


def refusal(path: Path) -> str | None:
    """Why `path` (links followed) must not be read, or None for a regular file or a folder."""
    try:
        st = path.stat()
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    target = os.path.realpath(path)
    via = f" (it links to {os_text(target)})" if target != os.path.abspath(path) else ""
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return f"not a regular file or folder: {special_kind(st.st_mode)}{via} would be read forever"
    if _on_pseudo_fs(target, st.st_dev):
        return f"a kernel pseudo-file or folder{via}, not a log: reading it can block forever"
    return None


def special_kind(mode: int) -> str:
    """What a file that is neither regular nor a folder is, in words."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "a special file"


def _on_pseudo_fs(real: str, device: int) -> bool:
    devices = _pseudo_devices()
    if devices is not None:
        return device in devices
    return any(real == root or real.startswith(root + "/") for root in _PSEUDO_ROOTS)


@functools.lru_cache(maxsize=1)
def _pseudo_devices() -> frozenset[int] | None:
    """st_dev of every mounted kernel filesystem (Linux's mount table); None where there is none."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
            rows = [line.split() for line in table]
    except OSError:
        return None
    devices = set()
    for row in rows:
        # id parent major:minor root mountpoint options [optional…] - fstype source superoptions
        if "-" in row and row.index("-") + 1 < len(row) and row[row.index("-") + 1] in _PSEUDO_FS:
            major, _, minor = row[2].partition(":")
            if major.isdigit() and minor.isdigit():
                devices.add(os.makedev(int(major), int(minor)))
    return frozenset(devices)


@dataclass(slots=True)
class _Walk:
    """One folder given to read, walked: `inside` is its real path when links must stay in it."""

    root: Path
    include: Sequence[str]
    exclude: Sequence[str]
    inside: str | None
    visited: set[str] = field(default_factory=set)  # real paths of the folders walked (links loop)

    def files(self, folder: Path) -> Iterator[Path | ErrorRow | Skipped]:
        real = os.path.realpath(folder)
        if real in self.visited:  # a symlink loop
            return
        self.visited.add(real)
        try:
            entries = _sorted_entries(folder)
        except OSError as exc:
            yield _folder_error(folder, exc)
            return
        for entry in entries:
            yield from self._entry(entry)

    def _entry(self, entry: os.DirEntry) -> Iterator[Path | ErrorRow | Skipped]:
        path = Path(entry.path)
        if not _wanted(path.relative_to(self.root).as_posix(), self.include, self.exclude) and not _is_dir(entry):
            return
        try:
            problem = _entry_refusal(entry)
        except FileNotFoundError:  # gone since the folder was listed (rotated away), or a dangling link
            return
        if problem is not None:
            yield ErrorRow(source=os_text(path), offset=None, stage="ingest",
                           message=f"{os_text(path)}: skipped, {problem}")
        elif (outside := self._outside(entry)) is not None:
            yield Skipped(os_text(path), f"a link out of {os_text(self.root)}, to {os_text(outside)}: not "
                                         "followed (--follow-links reads it)")
        elif _is_dir(entry):
            yield from self.files(path)
        else:
            yield path

    def _outside(self, entry: os.DirEntry) -> str | None:
        """Where a link that leads out of the folder points (None: no link, or it stays inside)."""
        if self.inside is None or not _is_link(entry):
            return None
        target = os.path.realpath(entry.path)
        return None if target == self.inside or target.startswith(self.inside.rstrip("/") + "/") else target


def _sorted_entries(folder: Path) -> list[os.DirEntry]:
    with os.scandir(folder) as it:
        return sorted(it, key=lambda e: rotation_sort_key(e.name))


def _is_link(entry: os.DirEntry) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _entry_refusal(entry: os.DirEntry) -> str | None:
    """Plain files and folders pass on the DirEntry's cached type; links, special files and
    anything on a kernel filesystem are looked at closely."""
    try:
        plain = not entry.is_symlink() and (entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False))
        if plain and not _on_pseudo_fs(entry.path, entry.stat(follow_symlinks=False).st_dev):
            return None
        os.stat(entry.path)  # FileNotFoundError: gone, or a link to nothing
    except FileNotFoundError:
        raise
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return refusal(Path(entry.path))


def _wanted(relative: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    name = relative.rsplit("/", 1)[-1]

    def hit(patterns: Sequence[str]) -> bool:
        return any(fnmatch(name, p) or fnmatch(relative, p) for p in patterns)

    if include and not hit(include):
        return False
    return not hit(exclude)


def _folder_error(folder: Path, exc: OSError) -> ErrorRow:
    if isinstance(exc, PermissionError):
        hint = "permission denied; run as a user who can read it, or --exclude it"
    else:
        hint = f"cannot list it ({exc.strerror or exc}); check the folder"
    return ErrorRow(source=str(folder), offset=None, stage="ingest", message=f"{folder}: {hint}")

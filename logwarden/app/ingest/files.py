"""Which files to read: expand the user's paths (files and folders) into a deterministic list.

Owns: recursion, include/exclude globs, rotation-aware ordering (oldest rotated file first),
what a rotated name looks like, de-duplication, refusing paths that are not regular files
(a FIFO or a device would be read forever), and turning an unreadable folder into an `ErrorRow`.
It does not open files or judge their content (that is `reader.sniff_binary`): nothing is
skipped by its name alone.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Sequence
from fnmatch import fnmatch
from pathlib import Path

from logwarden.app.events import ErrorRow
from logwarden.errors import InputError

# auth.log.2.gz → ("auth.log", 2); auth.log → ("auth.log", 0)
_ROTATED = re.compile(r"^(?P<base>.+?)\.(?P<n>\d{1,4})(?P<ext>\.(?:gz|bz2|xz|zst))?$")
# logrotate's dateext: auth.log-20240101, auth.log-2024010112(.gz)
_DATEEXT = re.compile(r"^.+-\d{8}(?:\d{2})?(?:\.(?:gz|bz2|xz|zst))?$")


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


def iter_files(paths: Sequence[str | Path], *, include: Sequence[str] = (),
               exclude: Sequence[str] = ()) -> Iterator[Path | ErrorRow]:
    """Yield every file under `paths` (absolute), sorted and de-duplicated.

    Explicitly named files are always yielded; files found inside folders are filtered by the
    globs, matched against both the file name and its path relative to the given folder.
    A folder that cannot be listed yields an `ErrorRow`; a path that does not exist raises
    `InputError` at once, before anything is yielded.
    """
    roots = [_checked_root(p) for p in paths]
    return _found_files(roots, include, exclude)


def _found_files(roots: list[Path], include: Sequence[str],
                 exclude: Sequence[str]) -> Iterator[Path | ErrorRow]:
    seen: set[str] = set()
    for root in roots:
        if root.is_dir():
            found = _walk(root, root, include, exclude, visited=set())
        else:
            found = iter([root])
        for item in found:
            if isinstance(item, Path):
                real = os.path.realpath(item)
                if real in seen:
                    continue
                seen.add(real)
            yield item


def _checked_root(path: str | Path) -> Path:
    root = Path(os.path.abspath(os.path.expanduser(str(path))))
    try:
        mode = root.stat().st_mode
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or folder. Check the path (globs are expanded by "
                         f"the shell, not by logwarden).") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError(f"{path}: not a regular file or folder (a FIFO, socket or device would be "
                         f"read forever). Save the data to a file first, or pipe one snippet to "
                         f"`logwarden triage -`.")
    return root


def _walk(folder: Path, root: Path, include: Sequence[str], exclude: Sequence[str],
          visited: set[str]) -> Iterator[Path | ErrorRow]:
    real = os.path.realpath(folder)
    if real in visited:  # a symlink loop
        return
    visited.add(real)
    try:
        entries = _sorted_entries(folder)
    except OSError as exc:
        yield _folder_error(folder, exc)
        return
    for entry in entries:
        path = Path(entry.path)
        if _is_dir(entry):
            yield from _walk(path, root, include, exclude, visited)
        elif _is_file(entry) and _wanted(path.relative_to(root).as_posix(), include, exclude):
            yield path


def _sorted_entries(folder: Path) -> list[os.DirEntry]:
    with os.scandir(folder) as it:
        return sorted(it, key=lambda e: rotation_sort_key(e.name))


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


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

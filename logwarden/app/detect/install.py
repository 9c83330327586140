"""Installing and removing rule packs under `LOGWARDEN_HOME/sigma/` (`logwarden rules update|remove`).

A pack comes from someone else (SigmaHQ's release, a colleague's zip), so installing it must not
be a way to delete or fill anything:
- its name is a strict slug (`sigmahq`, `my-pack_2`): never `..`, a path or a hidden name, and the
  folder it names is checked to lie directly in `LOGWARDEN_HOME/sigma/`;
- its rule files are read within `packfiles`' bounds (no zip bomb, no `/dev/zero`, no link out
  of the source, no zip member named `../x`) and written into a staging folder that logwarden
  made (`sigma/.incoming-*`), with a marker file;
- it is compiled there first: a pack of which no rule loads is not installed, and the one
  installed before stays;
- then the old pack is moved into the staging folder, the new one renamed into place, and only
  the staging folder — logwarden's own — is deleted.

Owns: names, staging, the swap and removal. Knows nothing of how rules are compiled (it is given
a `check` callable) or of the command line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from logwarden.app.detect.packfiles import PackFiles, read_pack_files
from logwarden.app.safetext import os_text
from logwarden.errors import InputError

PACKS_FOLDER = "sigma"
MARKER = ".logwarden-pack"  # written into every pack logwarden installs
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024  # SigmaHQ's release zip is ~10 MB
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def check_pack_name(name: str) -> str:
    """`name` when it is a pack name logwarden accepts, else `InputError`."""
    if not _SLUG.match(name):
        raise InputError(f"--name {os_text(name)!r}: a pack name is 1-64 lower-case letters, digits, '-' or '_', "
                         "starting with a letter or digit (no '.', '/' or '..')")
    return name


def default_pack_name(source: str) -> str:
    """A slug from the source's last path or URL part (`~/rules/My Pack.zip` → `my-pack`)."""
    stem = PurePosixPath(source.rstrip("/").split("?", 1)[0]).name
    stem = stem[:-4] if stem.lower().endswith(".zip") else stem
    slug = re.sub(r"[^a-z0-9_-]+", "-", stem.lower()).strip("-_")[:64]
    return slug or "pack"


def packs_folder(home: Path) -> Path:
    return home / PACKS_FOLDER


def pack_path(home: Path, name: str) -> Path:
    """Where the pack `name` lives; checked to be a direct child of the packs folder."""
    folder = packs_folder(home)
    target = folder / check_pack_name(name)
    if Path(os.path.realpath(target.parent)) != Path(os.path.realpath(folder)) or target.name != name:
        raise InputError(f"pack {name!r} would not lie inside {folder}; refused")
    return target


def install_pack(source: str, *, home: Path, name: str, check: Callable[[Path], dict],
                 download: Callable[[str, Path], None] | None = None) -> dict:
    """Stage, check and install the pack at `source` (folder, .zip, .yml, or an http(s) URL with
    `download`) as `name`. Returns `check`'s report with `installed` and `refused` files added.
    `check(folder)` compiles the staged pack and returns counts (`loaded` among them)."""
    target = pack_path(home, name)
    folder = packs_folder(home)
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=".incoming-"))
    try:
        staged = staging / name
        found = _stage(source, staging, staged, download)
        report = check(staged)
        if not report.get("loaded"):
            raise InputError(f"{os_text(source)}: no rule of this pack loads ({report.get('errors', 0)} errors; "
                             "`logwarden rules --sigma PATH --state error` says why); it was not installed")
        _swap(staged, target, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # made here: the staging copy, or the old pack
    report["installed"] = str(target)
    report["refused"] = [{"file": file, "reason": why} for file, why in found.refused]
    return report


def remove_pack(*, home: Path, name: str) -> list[Path]:
    """Remove the installed pack `name` (its folder, or a `.zip` an older logwarden installed)."""
    target = pack_path(home, name)
    present = [p for p in (target, target.with_name(f"{name}.zip")) if os.path.lexists(p)]
    if not present:
        raise InputError(f"no installed pack named {name!r}; `logwarden rules` lists the packs in use")
    staging = Path(tempfile.mkdtemp(dir=packs_folder(home), prefix=".removing-"))
    try:
        for path in present:
            os.rename(path, staging / path.name)  # a link moves as a link: nothing outside is touched
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return present


def _stage(source: str, staging: Path, staged: Path,
           download: Callable[[str, Path], None] | None) -> PackFiles:
    """The pack's rule files, within bounds, written under `staged` with the marker."""
    if source.startswith(("http://", "https://")):
        if download is None:
            raise InputError(f"{source}: downloads are not available here")
        path = staging / "download.zip"
        download(source, path)
    else:
        path = Path(source).expanduser()
    found = read_pack_files(path)
    if not found.files and found.refused:
        file, why = found.refused[0]
        raise InputError(f"{os_text(source)}: no rule file could be read ({len(found.refused)} refused, e.g. {file} "
                         f"{why}); it was not installed")
    if not found.files:
        raise InputError(f"{os_text(source)} holds no Sigma rules (.yml/.yaml files); it was not installed")
    staged.mkdir()
    for origin, data in found.files:
        destination = staged / _relative_name(origin, path)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(data)
    marker = {"source": os_text(source), "installed_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    (staged / MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")
    return found


def _relative_name(origin: str, root: Path) -> PurePosixPath:
    """A rule file's place inside the pack: its path under the folder, its zip member name, or
    its own name, with every `..`, absolute or empty part dropped (a zip member named
    `../../x.yml` stays inside)."""
    if origin == str(root):  # a single .yml file
        inner = root.name
    elif root.is_dir():
        inner = origin[len(str(root)):]
    else:  # a zip: "archive!member"
        inner = origin[len(str(root)) + 1:]
    parts = [p for p in re.split(r"[/\\]", inner) if p not in ("", ".", "..")]
    return PurePosixPath(*parts) if parts else PurePosixPath("rule.yml")


def _swap(staged: Path, target: Path, staging: Path) -> None:
    """The staged pack in place of the old one; the old one (a folder, a zip, a link) moved into
    the staging folder, so deleting that folder is the only deletion."""
    old = [p for p in (target, target.with_name(f"{target.name}.zip")) if os.path.lexists(p)]
    moved = []
    for path in old:
        aside = staging / f".old-{path.name}"
        os.rename(path, aside)
        moved.append((aside, path))
    try:
        os.rename(staged, target)
    except OSError:
        for aside, path in moved:  # put the old pack back
            os.rename(aside, path)
        raise

"""Reading a rule pack's files without trusting the pack: whoever wrote it may have meant harm.

A pack is a folder, a zip or one `.yml` file. What a hostile one may hold, and what happens:
- a zip bomb: members are read with a cap on each one's size, on the whole, on the number of
  rule files and on each member's compression ratio (a header's sizes are not believed: what is
  inflated is counted);
- a link to `/dev/zero`, a FIFO, a link out of the pack or a symlink loop: only regular files
  inside the pack's own tree are read (links are followed only when they stay inside it; folders
  reached through links are not walked), each at most `MAX_FILE_BYTES`;
- a YAML "billion laughs": anchors and aliases are allowed (a rule may use them) but a document
  whose aliases would expand past `MAX_YAML_NODES` nodes is refused before it is built;
- a lone surrogate in a `"\\ud800"` escape: every string comes out `safetext.clean`.
A file that breaks a rule is refused (`PackFiles.refused`, reported as that file's error) and the
others are read; a pack past the whole-pack bounds raises `InputError`.

Owns those bounds. Knows nothing of Sigma's meaning (pack.py, translate.py).
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from logwarden.app.ingest.files import special_kind
from logwarden.app.safetext import clean_value, os_text
from logwarden.errors import InputError

RULE_SUFFIXES = (".yml", ".yaml")
MAX_FILE_BYTES = 4 * 1024 * 1024  # SigmaHQ's largest rule is ~300 KB
MAX_PACK_BYTES = 128 * 1024 * 1024  # SigmaHQ's ~4,000 rules are ~30 MB
MAX_PACK_FILES = 50_000
MAX_ZIP_RATIO = 100  # YAML deflates ~5:1; a bomb's members ~1000:1
MAX_YAML_NODES = 100_000  # a Sigma rule has a few hundred

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(slots=True)
class PackFiles:
    """The rule files read (display source, bytes) in order, and those refused (source, why)."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    total: int = 0

    def add(self, source: str, data: bytes) -> None:
        self.total += len(data)
        if self.total > MAX_PACK_BYTES:
            raise InputError(f"{source}: the pack holds more than {MAX_PACK_BYTES >> 20} MiB of rules; "
                             "a rule pack that large is refused")
        if len(self.files) >= MAX_PACK_FILES:
            raise InputError(f"{source}: the pack holds more than {MAX_PACK_FILES:,} rule files; refused")
        self.files.append((source, data))


def read_pack_files(path: Path) -> PackFiles:
    """Every rule file of a folder, zip or single `.yml` file, in order, within the bounds."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputError(f"Sigma rule pack {os_text(path)} does not exist; give a folder, a .zip or a .yml file") from None
    except OSError as exc:
        raise InputError(f"Sigma rule pack {os_text(path)} cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        return _read_folder(path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"Sigma rule pack {os_text(path)} is {special_kind(st.st_mode)}, not a folder, a .zip or "
                         f"a .yml file of Sigma rules")
    if path.suffix.lower() == ".zip":
        return _read_zip(path)
    found = PackFiles()
    found.add(str(path), _read_regular(path, MAX_FILE_BYTES))
    return found


def rule_files(root: Path) -> Iterator[tuple[Path, str | None]]:
    """(path, why it is refused or None) for every `.yml`/`.yaml` under `root`; links are
    followed only to regular files that stay inside `root`; linked folders are not walked."""
    real_root = os.path.realpath(root)
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))
        for name in sorted(names):
            if name.endswith(RULE_SUFFIXES):
                path = Path(folder) / name
                yield path, _refusal(path, real_root)


def _refusal(path: Path, real_root: str) -> str | None:
    real = os.path.realpath(path)
    if not (real == real_root or real.startswith(real_root + os.sep)):
        return f"links out of the pack (to {os_text(real)}); not read"
    try:
        st = os.stat(real)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return f"is {special_kind(st.st_mode)}, not a rule file; not read"
    if st.st_size > MAX_FILE_BYTES:
        return f"is larger than {MAX_FILE_BYTES >> 20} MiB; not read"
    return None


def _read_folder(root: Path) -> PackFiles:
    found = PackFiles()
    for path, problem in sorted(rule_files(root)):
        if problem is None:
            try:
                found.add(str(path), _read_regular(path, MAX_FILE_BYTES))
                continue
            except (OSError, ValueError) as exc:
                problem = f"cannot be read ({exc})"
        found.refused.append((os_text(path), problem))
    return found


def _read_regular(path: Path, limit: int) -> bytes:
    """At most `limit` bytes: more is an error (a file may grow between stat and read)."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit >> 20} MiB")
    return data


def _read_zip(path: Path) -> PackFiles:
    found = PackFiles()
    try:
        with zipfile.ZipFile(path) as archive:
            members = sorted((m for m in archive.infolist() if _is_rule_member(m)), key=lambda m: m.filename)
            if len(members) > MAX_PACK_FILES:
                raise InputError(f"{os_text(path)}: the zip holds {len(members):,} rule files, more than "
                                 f"{MAX_PACK_FILES:,}; refused")
            for member in members:
                source = f"{path}!{member.filename}"
                data, problem = _read_member(archive, member)
                if problem is None:
                    found.add(source, data)
                else:
                    found.refused.append((os_text(source), problem))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError) as exc:
        raise InputError(f"{os_text(path)} is not a readable zip of Sigma rules: {exc}") from exc
    return found


def _is_rule_member(member: zipfile.ZipInfo) -> bool:
    name = member.filename
    return name.endswith(RULE_SUFFIXES) and "__MACOSX" not in name and not member.is_dir()


def _read_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> tuple[bytes, str | None]:
    """The member's bytes, read in steps and stopped at the size or ratio bound (headers lie)."""
    if stat.S_ISLNK(member.external_attr >> 16):
        return b"", "is a symbolic link inside the zip; not read"
    limit = min(MAX_FILE_BYTES, max(member.compress_size, 1) * MAX_ZIP_RATIO)
    chunks, size = [], 0
    with archive.open(member) as stream:
        while chunk := stream.read(64 * 1024):
            size += len(chunk)
            if size > limit:
                why = "larger than" if limit == MAX_FILE_BYTES else "inflates to more than"
                return b"", f"{why} {limit:,} bytes (a zip bomb?); not read"
            chunks.append(chunk)
    return b"".join(chunks), None


# --- YAML ---------------------------------------------------------------------------------------


def load_yaml_documents(text: str) -> list[Any]:
    """Every document of a YAML text (safe types only), with aliases that would expand past
    `MAX_YAML_NODES` refused (`ValueError`) before anything is built, strings `clean`ed."""
    if "&" in text and "*" in text:  # anchors and aliases: count what they would expand to
        for node in yaml.compose_all(text, Loader=_Loader):
            if node is not None and _expanded_size(node) > MAX_YAML_NODES:
                raise ValueError(f"its aliases expand to more than {MAX_YAML_NODES:,} YAML nodes "
                                 "(a \"billion laughs\" document); refused")
    return [clean_value(doc) for doc in yaml.load_all(text, Loader=_Loader)]


def _expanded_size(root: yaml.Node) -> int:
    """Nodes the document would have with every alias expanded, counted once per node object
    (an alias is the same node object again) and without recursion."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path: seeing one again is a recursive document
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children = _children(node)
        if children_done or not children:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[id(node)] > MAX_YAML_NODES:
                return sizes[id(node)]
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise ValueError("a YAML alias refers to a node that contains it (a recursive document); refused")
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []

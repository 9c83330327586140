"""The shared, read-only SigmaHQ copy (/work/shared/sigma: rules + regression suite) for the Sigma tests.

Found through `LOGWARDEN_SHARED`, else `<repo>/../shared`; a missing copy fails with a message
(never a skip: these tests are the proof that SigmaHQ's rules run here)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _repo import REPO  # noqa: E402

PACK_FOLDERS = ("rules", "rules-emerging-threats", "rules-threat-hunting", "rules-placeholder")


def shared_dir() -> Path:
    base = Path(os.environ.get("LOGWARDEN_SHARED") or REPO.parent / "shared")
    return base


def sigma_dir() -> Path:
    path = shared_dir() / "sigma"
    if not (path / "rules").is_dir():
        pytest.fail(f"SigmaHQ's rules are not at {path}: set LOGWARDEN_SHARED to the folder holding sigma/")
    return path


def sigmahq_pack_paths() -> list[Path]:
    return [sigma_dir() / name for name in PACK_FOLDERS]

"""Runs & sources page: each run's metrics, the tracked files with offsets and lag, error rows.

Lag is the file's content size now minus the stored offset: bytes written since the last
analysis (a compressed file's uncompressed size, as its offset counts; a negative value means the
file was truncated or replaced). Knows nothing of how runs are made.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from logwarden.app.ingest import content_size
from logwarden.app.store import RunInfo, SourceState
from logwarden.ui import data

METRICS = ("files", "lines", "windows", "windows_llm", "llm_calls", "llm_failures", "records", "errors",
           "compression_ratio", "tokens_per_s", "mean_ttft_s", "lines_per_s", "elapsed_s")


def render() -> None:
    st.title("Runs & sources")
    url = data.db_url()
    st.subheader("Runs")
    st.dataframe(runs_table(data.runs(url)), hide_index=True, width="stretch", key="runs_table",
                 column_config={"compression_ratio": st.column_config.NumberColumn(format="%.1f×"),
                                "tokens_per_s": st.column_config.NumberColumn(format="%.1f"),
                                "mean_ttft_s": st.column_config.NumberColumn(format="%.2f"),
                                "lines_per_s": st.column_config.NumberColumn(format="%.0f"),
                                "elapsed_s": st.column_config.NumberColumn(format="%.1f")})
    st.subheader("Sources")
    st.dataframe(sources_table(data.sources(url)), hide_index=True, width="stretch", key="sources_table")
    st.subheader("Errors")
    errors = data.errors(url)
    if not errors:
        st.caption("No error rows.")
        return
    st.dataframe(pd.DataFrame([{"when": e.created_at, "stage": e.stage, "source": e.source, "line": e.line_no,
                                "offset": e.offset, "message": e.message, "run": (e.run_id or "")[:12]}
                               for e in errors]), hide_index=True, width="stretch", key="errors_table")


def runs_table(runs: list[RunInfo]) -> pd.DataFrame:
    return pd.DataFrame([_run_row(r) for r in runs], columns=["started", "command", "status", "duration_s", *METRICS, "id"])


def _run_row(r: RunInfo) -> dict[str, Any]:
    metrics = r.metrics or {}
    duration = (r.finished_at - r.started_at).total_seconds() if r.finished_at else None
    return {"started": r.started_at, "command": r.command, "status": r.status, "duration_s": duration,
            **{name: metrics.get(name) for name in METRICS}, "id": r.id[:12]}


def sources_table(sources: list[SourceState]) -> pd.DataFrame:
    return pd.DataFrame([_source_row(s) for s in sources],
                        columns=["path", "inode", "format", "offset", "size", "lag_bytes", "last_line", "updated"])


def _source_row(s: SourceState) -> dict[str, Any]:
    size = _current_size(s.path, s.inode)
    return {"path": s.path, "inode": s.inode, "format": s.format, "offset": s.offset, "size": size,
            "lag_bytes": None if size is None else size - s.offset, "last_line": s.line_no, "updated": s.updated_at}


def _current_size(path: str, inode: int) -> int | None:
    """Size of the same file (same inode) now, in the bytes its offset counts (a compressed file's
    content, not its compressed size); None when it is gone, rotated away or cannot be told."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    if inode and stat.st_ino != inode:
        return None
    return content_size(Path(path))


render()

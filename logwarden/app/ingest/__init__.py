"""Ingestion: turn paths, folders and streams into `LogLine`s with exact byte offsets.

Owns: walking files and folders (include/exclude globs, rotated and compressed files), sniffing
binary content, decoding bytes without losing a line, truncating monster lines, and offsets that a
tailer can resume from. Knows nothing about log formats (app/parse) or persisted offsets (app/store).
"""

from logwarden.app.ingest.files import iter_files, rotation_sort_key
from logwarden.app.ingest.reader import (
    DEFAULT_MAX_LINE_BYTES,
    TailRead,
    read_complete_lines,
    read_lines,
    read_stream,
    sniff_binary,
)

__all__ = [
    "DEFAULT_MAX_LINE_BYTES", "TailRead", "iter_files", "read_complete_lines", "read_lines",
    "read_stream", "rotation_sort_key", "sniff_binary",
]

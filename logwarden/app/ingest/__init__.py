"""Ingestion: turn paths, folders and streams into `LogLine`s with exact byte offsets.

Owns: walking files and folders (include/exclude globs, rotated and compressed files), sniffing
binary content, decoding bytes without losing a line, truncating monster lines, offsets that a
tailer can resume from, and file identity by content (a rotated, compressed or copied file is the
source it was; a truncated one is a new generation). Knows nothing about log formats (app/parse) or persisted offsets (app/store).
"""

from logwarden.app.ingest.files import Skipped, is_rotated_name, iter_files, rotation_sort_key
from logwarden.app.ingest.identity import (
    FINGERPRINT_BYTES,
    Fingerprint,
    SourceKey,
    fingerprint_of,
    identify,
    kept_part,
    key_of,
    next_generation,
    source_name,
    undecided,
)
from logwarden.app.ingest.reader import (
    DEFAULT_MAX_LINE_BYTES,
    TailRead,
    content_size,
    is_compressed,
    lines_within,
    read_complete_lines,
    read_head,
    read_lines,
    read_stream,
    sniff_binary,
)

__all__ = [
    "DEFAULT_MAX_LINE_BYTES", "FINGERPRINT_BYTES", "Fingerprint", "TailRead", "fingerprint_of", "identify",
    "is_compressed", "is_rotated_name", "iter_files", "kept_part", "SourceKey", "key_of", "lines_within",
    "next_generation",
    "read_complete_lines", "Skipped", "content_size", "read_head", "read_lines", "read_stream", "rotation_sort_key", "sniff_binary",
    "source_name", "undecided",
]

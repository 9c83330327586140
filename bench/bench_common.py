"""Shared by the benchmarks: where the embedded model's converted folder (and tokenizer) lives."""

from __future__ import annotations

from pathlib import Path


def embedded_tokenizer_folder() -> Path:
    from logwarden.app.config import get_settings
    from logwarden.engine.embedded import PACKS, ensure_converted

    return ensure_converted(PACKS["embedded"], get_settings().model_cache)

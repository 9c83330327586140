"""The model for the triage page, loaded once per server process and shared by all sessions.

Options come from the settings (engine, model, adapter, quant, threads), like the CLI's defaults.
Knows nothing of pages; never imported unless the analyst asks for the model.
"""

from __future__ import annotations

import streamlit as st

from logwarden.app.backends import EngineOptions, open_engine
from logwarden.app.config import Settings
from logwarden.engine.api import Engine


def engine_options() -> EngineOptions:
    return EngineOptions.from_settings(Settings(), max_batch=1)


@st.cache_resource(show_spinner="Loading the model (first time only)…")
def shared_engine(engine: str, model: str, adapter: str | None, quant: str, threads: int | None) -> Engine:
    return open_engine(EngineOptions(engine=engine, model=model, adapter=adapter, quant=quant, threads=threads,
                                     max_batch=1, cache_dir=Settings().model_cache))


def get_engine() -> Engine:
    o = engine_options()
    return shared_engine(o.engine, o.model, o.adapter, o.quant, o.threads)

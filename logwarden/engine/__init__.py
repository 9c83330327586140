"""engine: turns prompts into schema-valid JSON with a local Qwen (transformers) or a remote
OpenAI-compatible server. It knows nothing of logs, files, SQLite or Streamlit."""

from logwarden.engine.api import Engine, Generation, GenStats, ModelUsage, Request, Sampling, TextStream

__all__ = ["Engine", "Generation", "GenStats", "ModelUsage", "Request", "Sampling", "TextStream"]

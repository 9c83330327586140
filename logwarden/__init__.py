"""logwarden: a local-LLM security log analyser.

Data flow (see README): app.ingest → app.parse → app.mine → app.detect → prompts → engine
→ app.postprocess → app.store → app.export / ui.
"""

__version__ = "0.1.0"

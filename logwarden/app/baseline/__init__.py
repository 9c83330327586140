"""Baselines of normal, learned from the logs themselves without labels, kept in the store.

The package's front door: `Baseline` (observe.py: judge a window, learn from it, flush to the
store), its `MODES`, and the `ProfileRows` a store provides. The profiles are in web.py (sites,
endpoints; values.py for parameter values), templates.py (message kinds) and entities.py
(first-seen activity per host); rows.py says which class each stored kind is, legacy.py reads
rows written before their keys were readable, deviation.py turns what differs into signals.
"""

from logwarden.app.baseline.observe import MODES, Baseline, ProfileRows

__all__ = ["MODES", "Baseline", "ProfileRows"]

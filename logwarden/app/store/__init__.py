"""The SQLite (any SQLAlchemy URL) store: records, evidence, windows, sources/offsets, runs,
errors and reviews, with versioned migrations. See `store.Store` for the API.

Does not know how records are produced (pipeline), shown (ui) or exported (export).
"""

from logwarden.app.store.aggregates import IndicatorCount, TechniqueCount, TimeCount
from logwarden.app.store.deliveries import DeliveryStore
from logwarden.app.store.incidents import IncidentFilter, IncidentStore
from logwarden.app.store.migrations import LATEST_VERSION
from logwarden.app.store.store import Store, open_store
from logwarden.app.store.types import ErrorInfo, FeedbackInfo, RecordFilter, ReviewInfo, RunInfo, SourceState, WindowRow
from logwarden.app.store.writes import Transaction

__all__ = [
    "LATEST_VERSION", "DeliveryStore", "ErrorInfo", "FeedbackInfo", "IncidentFilter", "IncidentStore", "IndicatorCount", "RecordFilter", "ReviewInfo", "RunInfo", "SourceState",
    "Store", "TechniqueCount", "TimeCount", "Transaction", "WindowRow", "open_store",
]

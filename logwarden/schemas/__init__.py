"""The data contract: what the model must emit (`LLMAssessment`) and what is stored (`RiskRecord`).

Everything else — the JSON schema for constrained decoding, validation, storage columns, exports,
the UI — derives from these models. Both forbid extra fields.
"""

from logwarden.schemas.assessment import (
    CATEGORIES,
    RISK_LEVELS,
    SCHEMA_VERSION,
    Category,
    LLMAssessment,
    RiskLevel,
    assessment_json_schema,
    risk_rank,
)
from logwarden.schemas.record import (
    Evidence,
    ExemplarLine,
    Indicators,
    RiskRecord,
    Technique,
    record_id,
)

__all__ = [
    "CATEGORIES", "RISK_LEVELS", "SCHEMA_VERSION", "Category", "LLMAssessment", "RiskLevel",
    "assessment_json_schema", "risk_rank", "Evidence", "ExemplarLine", "Indicators", "RiskRecord",
    "Technique", "record_id",
]

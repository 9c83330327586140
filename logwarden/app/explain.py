"""The model's narrative of a stored record, on demand (`logwarden records explain ID`, the record
page's Explain button): its evidence lines go through triage's path — digest, the grammar that
admits only the ids the digest shows, grounding — and the answer streams as it is written.

Owns: turning a record's evidence back into a snippet and the explanation's report. Knows nothing
of terminals or pages; nothing is stored (the record keeps its own text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logwarden.app.grounding import ground
from logwarden.app.triage import PartsStream, Triage, assess
from logwarden.schemas import RiskRecord

if TYPE_CHECKING:
    from logwarden.app.run_options import RunOptions
    from logwarden.engine.api import Engine


@dataclass(slots=True)
class Explanation:
    record: RiskRecord
    triage: Triage
    stream: PartsStream

    def report(self) -> dict:
        """After the stream is read: the answer, what of it is grounded in the evidence, the stats."""
        generation = self.stream.generation
        answer = _parsed(generation.text) if generation is not None else None
        findings = (answer or {}).get("findings", [])
        grounded = [ground(f.get("anomaly", ""), self.triage.parts[0].text).text for f in findings]
        return {"record_id": self.record.id, "answer": answer, "grounded_anomalies": grounded,
                "model_error": generation.error if generation is not None else "the stream ended early",
                "stats": generation.stats.as_dict() if generation is not None else None}


def explain(record: RiskRecord, engine: Engine, options: RunOptions) -> Explanation:
    """Start streaming the model's explanation of `record` (iterate `.stream`)."""
    lines = [e.text for e in record.evidence.exemplars] or [record.anomaly]
    assessment = assess("\n".join(lines), options, engine)
    assert assessment.stream is not None  # an engine was given: the answer streams
    return Explanation(record, assessment.triage, assessment.stream)


def _parsed(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None

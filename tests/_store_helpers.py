"""Test factory for `RiskRecord`s: a realistic SSH brute-force record whose fields can be overridden.

The id is derived (as the pipeline does) from source, inode and line span unless given, so
records built for different spans are distinct and the same span gives the same id.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from logwarden.schemas import Evidence, ExemplarLine, Indicators, RiskRecord, Technique, record_id
from logwarden.schemas.record import RISK_SCORES

BASE_TS = datetime(2026, 11, 29, 10, 0, 0, tzinfo=timezone.utc)


def make_record(**overrides: Any) -> RiskRecord:
    fields: dict[str, Any] = {
        "source": "/var/log/auth.log",
        "inode": 1234,
        "host": "bastion-1",
        "line_start": 10,
        "line_end": 29,
        "first_ts": BASE_TS,
        "last_ts": BASE_TS + timedelta(minutes=3),
        "line_count": 20,
        "risk_level": "high",
        "category": "brute_force",
        "techniques": [Technique(id="T1110.001", name="Password Guessing", tactic="Credential Access")],
        "indicators": Indicators(ips=["203.0.113.7"], users=["root", "admin"], hosts=["bastion-1"]),
        "anomaly": "20 failed SSH password attempts for root and admin from one address in 3 minutes.",
        "trace": "203.0.113.7 (external) → sshd on bastion-1, users root, admin; no success seen.",
        "recommendation": "Block 203.0.113.7 at the edge; confirm no session succeeded; enforce key auth.",
        "evidence": Evidence(
            line_numbers=list(range(10, 30)),
            exemplars=[ExemplarLine(line_no=10, text="Nov 29 10:00:00 bastion-1 sshd[811]: Failed password "
                                                       "for root from 203.0.113.7 port 50122 ssh2")],
        ),
        "detections": ["ssh_brute_force"],
        "decided_by": "rules+llm",
        "model": "embedded",
        "prompt_version": "analyze_v1",
    }
    fields.update(overrides)
    fields.setdefault("risk_score", RISK_SCORES[fields["risk_level"]])
    fields.setdefault("id", record_id(source=fields["source"], inode=fields["inode"],
                                      line_start=fields["line_start"], line_end=fields["line_end"],
                                      prompt_version=fields["prompt_version"]))
    return RiskRecord(**fields)

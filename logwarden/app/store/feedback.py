"""Feedback on the model's judgements (`model_feedback`) and the triage answers it can judge (`triage_answers`).

An analyst accepts or rejects what the model wrote — a record's verdict and text, an incident's story,
a triage answer — with a reason of `schemas/feedback.py`. The row keeps the text judged, as it was
then, with its sha256 (`judged`, `judged_sha256`): the model may rewrite a record or a story later
(a new review, a regrouping), and a judgement must stay tied to the text it judged. Retrieval reads
the rows back (`list_feedback`): what was judged, the lines it was about (`context`: a record's
evidence lines, a triage snippet), the verdict and why.

Owns: what counts as a model judgement (a record the model decided or co-decided, a story the model
wrote, a stored triage answer), its judged text, and the rows. Does not open connections (`Store`
gives them) or know terminals and pages.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select

from logwarden.app.store.convert import row_to_record
from logwarden.app.store.tables import IncidentRow, ModelFeedback, Record, TriageAnswer
from logwarden.app.store.types import FeedbackInfo
from logwarden.errors import InputError
from logwarden.schemas import RiskRecord
from logwarden.schemas.feedback import FEEDBACK_KINDS, feedback_reason

LIST_LIMIT = 100
TRIAGE_PREFIX = "tri-"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def record_judged(record: RiskRecord) -> str:
    """What the model judged in a record, as one canonical JSON text: its level, category, techniques,
    texts and (a baseline deviation's) verdict. The same record gives the same text, byte for byte."""
    return _canonical({"risk_level": record.risk_level, "category": record.category,
                       "techniques": [t.id for t in record.techniques], "anomaly": record.anomaly,
                       "trace": record.trace, "recommendation": record.recommendation, "verdict": record.verdict})


def story_judged(row: Mapping[str, Any]) -> str:
    """What the model wrote of an incident's story (an `Incident` dumped, or its row), canonical JSON."""
    return _canonical({name: row[name] for name in ("title", "summary", "stages", "next_steps")})


def triage_id(snippet: str, answer: str) -> str:
    """The same answer to the same snippet is the same triage answer (stored once)."""
    return TRIAGE_PREFIX + sha256(snippet + "\0" + answer)[:16]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def add_triage_answer(conn: Connection, *, snippet: str, answer: str, verdict: str, model: str | None,
                      record_ids: list[str], now: datetime) -> str:
    found = triage_id(snippet, answer)
    if conn.execute(select(TriageAnswer.id).where(TriageAnswer.id == found)).first() is None:
        conn.execute(insert(TriageAnswer).values(id=found, snippet=snippet, snippet_sha256=sha256(snippet),
                                                 answer=answer, verdict=verdict, model=model,
                                                 record_ids=record_ids, created_at=now))
    return found


def resolve_triage(conn: Connection, prefix: str) -> str | None:
    """The full id of the one triage answer whose id is or starts with `prefix` (with or without `tri-`)."""
    prefix = prefix.strip()
    if not prefix:
        return None
    wanted = prefix if prefix.startswith(TRIAGE_PREFIX) else TRIAGE_PREFIX + prefix
    ids = list(conn.execute(select(TriageAnswer.id).where(TriageAnswer.id.startswith(wanted, autoescape=True))
                            .order_by(TriageAnswer.id).limit(3)).scalars())
    if wanted in ids or len(ids) == 1:
        return wanted if wanted in ids else ids[0]
    if ids:
        raise InputError(f"The id prefix {prefix!r} matches several triage answers ({', '.join(ids)}); "
                         "give more of the id.")
    return None


def judgement(conn: Connection, kind: str, target_id: str) -> dict[str, Any]:
    """The model's judgement `kind` (record, story, triage) of the exact id `target_id`: the judged text,
    its context and model. An InputError when there is none, or when the rules, not the model, wrote it."""
    if kind == "record":
        row = conn.execute(select(Record.__table__).where(Record.id == target_id)).mappings().first()
        if row is None:
            raise InputError(f"No record {target_id!r}; list record ids with `logwarden records list`.")
        record = row_to_record(row)
        if record.decided_by == "rules":
            raise InputError(f"Record {target_id[:12]} was decided by the rules alone: it holds no model judgement "
                             "to accept or reject (review it with `logwarden records review`).")
        lines = "\n".join(line.text for line in record.evidence.exemplars)
        return {"judged": record_judged(record), "context": lines or None, "model": record.model}
    if kind == "story":
        story = conn.execute(select(IncidentRow.__table__).where(IncidentRow.id == target_id)).mappings().first()
        if story is None:
            raise InputError(f"No incident {target_id!r}; list them with `logwarden incidents list`.")
        if story["story_by"] != "llm":
            raise InputError(f"Incident {target_id} has no story by the model (its title is the rules'): nothing "
                             "to accept or reject (review it with `logwarden incidents review`).")
        return {"judged": story_judged(story), "context": None, "model": story["model"]}
    if kind == "triage":
        answer = conn.execute(select(TriageAnswer.__table__).where(TriageAnswer.id == target_id)).mappings().first()
        if answer is None:
            raise InputError(f"No triage answer {target_id!r}; `logwarden triage` with a model prints the id "
                             "of the answer it stores (`logwarden feedback list` shows those judged).")
        return {"judged": answer["answer"], "context": answer["snippet"], "model": answer["model"]}
    raise InputError(f"Feedback is on a {', '.join(FEEDBACK_KINDS[:-1])} or {FEEDBACK_KINDS[-1]}, not {kind!r}.")


def add_feedback(conn: Connection, kind: str, target_id: str, *, verdict: str, reason: str | None,
                 note: str | None, reviewer: str | None, now: datetime) -> FeedbackInfo:
    try:
        reason = feedback_reason(verdict, reason)
    except ValueError as exc:
        raise InputError(str(exc)[0].upper() + str(exc)[1:] + ".") from None
    judged = judgement(conn, kind, target_id)
    values = {"kind": kind, "target_id": target_id, "judged_sha256": sha256(judged["judged"]), **judged,
              "verdict": verdict, "reason": reason, "note": note, "reviewer": reviewer, "created_at": now}
    row_id = conn.execute(insert(ModelFeedback).values(**values)).inserted_primary_key[0]
    return FeedbackInfo(id=row_id, **values)


def list_feedback(conn: Connection, *, kind: str | None, target_id: str | None, limit: int) -> list[FeedbackInfo]:
    """Newest first."""
    stmt = select(ModelFeedback.__table__).order_by(ModelFeedback.id.desc()).limit(limit)
    if kind is not None:
        stmt = stmt.where(ModelFeedback.kind == kind)
    if target_id is not None:
        stmt = stmt.where(ModelFeedback.target_id == target_id)
    return [FeedbackInfo(**row) for row in conn.execute(stmt).mappings()]

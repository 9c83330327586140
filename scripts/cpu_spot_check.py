"""CPU spot check: a few real prompts answered by the embedded model, base and with the shipped
security-v2 adapter, fp32 on CPU through the real LocalEngine and each prompt's own grammar.

The prompts are what the pipeline sends (recorded with `RecordingEngine`): the first prompt of a
few sample_logs files and realdata held-out files, and one triage line. For each answer: finished
and valid, its evidence ids against the ids its prompt admits, the entities its texts name that
the digest lacks (what post-processing would remove), new tokens and seconds.

    PYTHONPATH=. python scripts/cpu_spot_check.py [--threads 2] [--out .mdl/cpu_spot_check.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from logwarden.app.backends import resolve_adapter
from logwarden.app.config import get_settings
from logwarden.app.grounding import ground
from logwarden.app.pipeline import Pipeline, RunOptions
from logwarden.app.postprocess import AssessmentError, parse_assessment
from logwarden.app.store import open_store
from logwarden.app.triage import prepare
from logwarden.engine.load import load_engine
from logwarden.schemas.assessment import schema_refs
from logwarden.train.realdata import realdata_dir
from logwarden.train.replay import RecordingEngine

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ("auth.log", "messages", "windows_security.jsonl")
HELDOUT = ("csic2010/anomal_test_rest_dedup.txt",
           "evtx_to_mitre/TA0006-Credential_Access/T1110.xxx-Brut_force/ID4768-4771-Kerberos_brutforce_with_non_existing_users.jsonl")
TRIAGE = ('203.0.113.9 - - [02/Mar/2026:10:00:00 +0000] "GET /item.php?id=1%20UNION%20SELECT%20user,password%20FROM'
          '%20users-- HTTP/1.1" 200 512 "-" "sqlmap/1.7"')


def first_prompts(paths: list[Path], count) -> list:
    """The first request the pipeline sends for each file (every window sent, rare lines uncapped)."""
    picks = []
    for path in paths:
        engine = RecordingEngine(count)
        store = open_store("sqlite:///:memory:")
        Pipeline(store, engine, RunOptions(llm_policy="all", max_prompts_per_window=None)).analyze([path])
        picks.append((path.name, next(iter(engine.requests.values()))))
    return picks


def check(request, generation) -> dict:
    row = {"finished": generation.finished, "new_tokens": generation.stats.new_tokens, "text": generation.text}
    try:
        answer = parse_assessment(generation.text)
    except AssessmentError as exc:
        return row | {"valid": False, "error": str(exc)[:200]}
    digest = request.user
    texts = [f.anomaly for f in answer.findings] + [answer.recommendation]
    admitted = set(schema_refs(request.schema) or [])
    return row | {"valid": True, "findings": len(answer.findings),
                  "evidence_admitted": all(set(f.evidence) <= admitted for f in answer.findings),
                  "ungrounded": sorted({e for t in texts for e in ground(t, digest).ungrounded})}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / ".mdl" / "cpu_spot_check.json")
    args = ap.parse_args()
    report = {}
    for name, adapter in (("base", "none"), ("security-v2", None)):
        engine = load_engine(model="embedded", adapter=resolve_adapter("embedded", adapter), quant="fp32", threads=args.threads, max_batch=8,
                             cache_dir=get_settings().model_cache)
        picks = first_prompts([ROOT / "sample_logs" / s for s in SAMPLES] + [realdata_dir() / h for h in HELDOUT],
                              engine.count_tokens)
        picks.append(("triage", prepare(TRIAGE, count_tokens=engine.count_tokens).requests()[0]))
        start = time.perf_counter()
        generations = engine.generate([request for _, request in picks], max_new_tokens=320)
        report[name] = {"seconds": round(time.perf_counter() - start, 1),
                        "prompt_tokens": [g.stats.prompt_tokens for g in generations],
                        "answers": {label: check(request, g) for (label, request), g in zip(picks, generations)}}
        print(json.dumps({name: report[name]}, indent=1, ensure_ascii=False), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()

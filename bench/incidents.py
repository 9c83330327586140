"""Incidents measured against labels (EVAL.md, "Incidents").

    python bench/incidents.py                          # rules-only grouping on every corpus
    python bench/incidents.py --stories 8 --threads 2  # and the embedded model's stories (CPU)

Each corpus is analysed rules-only into a fresh SQLite store (analyze groups what it stores), then
scored against its labels:
- otrf (realdata): a labelled unit is one recorded attack; its recording is the dataset's own id
  (the first word of `source_label`: the SDWIN id, or the compound scenario's uuid, shared by its files);
- sample_logs: a unit's actor is the attacker address its note names (else the unit alone), since the
  generated day mixes several attackers' stories;
- loghub (realdata): benign system logs only; an incident there above low is a false alarm;
- evtx_to_mitre (realdata): 258 separate attack samples, many from the same lab hosts and accounts
  (a test of busy pivots); a sample (a file) is a recording.
Per recording: how many incidents hold its records, completeness (the share of its grouped records
in its biggest incident). Per incident: purity (the share of its labelled records from its main
recording). Benign: incidents made only of benign-labelled records, above low. With --stories, the
model's stories: written, rejected, ids invented (rejected) and cited ids stored that are not the
incident's (the bar: 0), entities removed as ungrounded.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from logwarden.app.pipeline import Pipeline  # noqa: E402
from logwarden.app.run_options import RunOptions  # noqa: E402
from logwarden.app.store import open_store  # noqa: E402
from logwarden.schemas import risk_rank  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STORY_SAMPLES = 8
STORY_CORPORA = ("otrf", "sample_logs")
_ADDRESS = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")


def load_units(labels: Path, prefix: str) -> dict[str, list[dict]]:
    units: dict[str, list[dict]] = defaultdict(list)
    for line in labels.read_text().splitlines():
        unit = json.loads(line)
        if unit["file"].startswith(prefix):
            units[unit["file"][len(prefix):]].append(unit)
    return units


def unit_of(record, root: Path, units: dict[str, list[dict]]) -> dict | None:
    """The labelled unit holding most of the record's evidence lines."""
    try:
        relative = str(Path(record.source.split(":", 1)[-1]).resolve().relative_to(root.resolve()))
    except ValueError:
        return None
    lines = record.evidence.line_numbers or list(range(record.line_start, record.line_end + 1))
    overlap = [(sum(u["line_start"] <= n <= u["line_end"] for n in lines), i) for i, u in
               enumerate(units.get(relative, []))]
    best = max(overlap, default=(0, -1))
    return units[relative][best[1]] if best[0] else None


def recording_key(unit: dict, corpus: str) -> str:
    if unit["category"] == "benign":
        return "benign"
    if corpus == "otrf":
        return (unit.get("source_label") or unit["file"]).split()[0]
    if corpus == "evtx_to_mitre":  # one attack sample a file
        return unit["file"]
    found = _ADDRESS.findall(unit.get("note", ""))
    return found[0] if found else f"{unit['file']}:{unit['line_start']}"


def analyse(paths: list[Path], db: str) -> None:
    from logwarden.app.config import get_settings

    store = open_store(db)  # LOGWARDEN_INCIDENT_* settings apply, as in analyze
    options = RunOptions.from_settings(get_settings(), rules_only=True)
    Pipeline(store, None, options, command="bench incidents").analyze(paths)
    store.close()


def stories(db: str, limit: int, threads: int | None) -> dict:
    from logwarden.app.backends import EngineOptions, open_engine
    from logwarden.app.config import get_settings
    from logwarden.app.incidents.story import StoryWriter
    from logwarden.app.review import Budget

    store = open_store(db)
    engine = open_engine(EngineOptions.from_settings(get_settings(), threads=threads))
    started = time.perf_counter()
    stats = StoryWriter(store, engine, budget=Budget()).write(store.incidents.query(limit=10**6), limit=limit)
    found = stats.as_dict() | {"wall_s": round(time.perf_counter() - started, 1)}
    store.close()
    return found


def score(db: str, corpus: str, root: Path, units: dict[str, list[dict]]) -> dict:
    store = open_store(db)
    incidents = store.incidents.query(limit=10**6)
    members = {i.id: store.incidents.members(i.id) for i in incidents}
    truth = {r.id: recording_key(u, corpus) for rs in members.values() for r in rs
             if (u := unit_of(r, root, units)) is not None}
    store.close()
    expected = {recording_key(u, corpus) for us in units.values() for u in us} - {"benign"}
    per_recording: dict[str, Counter] = defaultdict(Counter)
    purities, benign_high, unlabelled = [], 0, 0
    for incident in incidents:
        keys = [truth[r.id] for r in members[incident.id] if r.id in truth]
        unlabelled += len(members[incident.id]) - len(keys)
        for key in keys:
            per_recording[key][incident.id] += 1
        if keys:
            purities.append((Counter(keys).most_common(1)[0][1] / len(keys), len(keys)))
        if keys and set(keys) == {"benign"} and risk_rank(incident.risk_level) > risk_rank("low"):
            benign_high += 1
    found = summary(incidents, members, per_recording, purities, benign_high, unlabelled)
    return found | {"recordings_labelled": len(expected),
                    "recordings_without_incident": sorted(expected - set(per_recording))}


def summary(incidents, members, per_recording, purities, benign_high, unlabelled) -> dict:
    recordings = {key: {"records": sum(c.values()), "incidents": len(c),
                        "completeness": round(max(c.values()) / sum(c.values()), 3)}
                  for key, c in sorted(per_recording.items()) if key != "benign"}
    weighted = sum(p * n for p, n in purities) / max(1, sum(n for _, n in purities))
    invented_stored = sum(1 for i in incidents if not set(i.cited) <= set(i.record_ids))
    return {
        "incidents": len(incidents), "records_grouped": sum(len(m) for m in members.values()),
        "unlabelled_records": unlabelled,
        "purity_weighted": round(weighted, 3),
        "pure_incidents": f"{sum(p == 1 for p, _ in purities)}/{len(purities)}",
        "completeness_mean": round(sum(r["completeness"] for r in recordings.values()) / max(1, len(recordings)), 3),
        "incidents_per_recording_mean": round(sum(r["incidents"] for r in recordings.values())
                                              / max(1, len(recordings)), 2),
        "benign_incidents_above_low": benign_high,
        "by_level": dict(Counter(i.risk_level for i in incidents)),
        "llm_stories_stored": sum(i.story_by == "llm" for i in incidents),
        "stored_stories_citing_ids_not_theirs": invented_stored,
        "ungrounded_entities_removed_in_stored": sum(len(i.ungrounded) for i in incidents),
        "story_samples": [{"id": i.id, "title": i.title, "summary": i.summary, "stages": i.stages,
                           "next_steps": i.next_steps, "cited": len(i.cited), "records": len(i.record_ids)}
                          for i in incidents if i.story_by == "llm"][:STORY_SAMPLES],
        "recordings": recordings,
    }


def synthetic(n: int, folder: Path) -> dict:
    """Regrouping time for a store of `n` synthetic records (200 hosts, 2,000 addresses, one day)."""
    import random
    from datetime import datetime, timedelta, timezone

    from logwarden.app.incidents import IncidentOptions
    from logwarden.app.incidents.regroup import regroup
    from logwarden.schemas import Indicators, RiskRecord, record_id

    rng, start = random.Random(7), datetime(2026, 1, 1, tzinfo=timezone.utc)
    records = []
    for i in range(n):
        ts = start + timedelta(seconds=rng.randrange(86_400))
        records.append(RiskRecord(
            id=record_id(source="/s", inode=1, line_start=i + 1, line_end=i + 1, prompt_version="bench"),
            source="/s", host=f"h{rng.randrange(200)}", line_start=i + 1, line_end=i + 1, first_ts=ts, last_ts=ts,
            line_count=1, risk_level="medium", risk_score=55, category="brute_force", anomaly="a", trace="t",
            recommendation="r", decided_by="rules", prompt_version="bench",
            indicators=Indicators(ips=[f"10.{rng.randrange(8)}.{rng.randrange(250)}.1"], users=[f"u{rng.randrange(500)}"])))
    store = open_store(f"sqlite:///{folder}/synthetic.db")
    store.upsert_records(records)
    started = time.perf_counter()
    first = regroup(store, IncidentOptions())
    took = time.perf_counter() - started
    started = time.perf_counter()
    regroup(store, IncidentOptions())
    again = time.perf_counter() - started
    store.close()
    return {"records": n, "incidents": len(first.incidents), "regroup_s": round(took, 1), "again_s": round(again, 1)}


def corpora(realdata: Path, sample_logs: Path) -> list[tuple[str, list[Path], Path, dict]]:
    labels = realdata / "labels.jsonl"
    samples = sorted(p for p in sample_logs.iterdir() if p.is_file() and p.suffix != ".md"
                     and p.name != "labels.jsonl")
    return [
        ("otrf", [realdata / "otrf"], realdata / "otrf", load_units(labels, "otrf/")),
        ("loghub", [realdata / "loghub"], realdata / "loghub", load_units(labels, "loghub/")),
        ("evtx_to_mitre", [realdata / "evtx_to_mitre"], realdata / "evtx_to_mitre",
         load_units(labels, "evtx_to_mitre/")),
        ("sample_logs", samples, sample_logs, load_units(sample_logs / "labels.jsonl", "")),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--realdata", type=Path, default=Path("/work/shared/realdata"))
    parser.add_argument("--sample-logs", type=Path, default=REPO / "sample_logs")
    parser.add_argument("--only", choices=("otrf", "loghub", "evtx_to_mitre", "sample_logs"), action="append")
    parser.add_argument("--stories", type=int, default=0, help="incidents per corpus the model writes a story for")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="keep the stores in this folder")
    parser.add_argument("--synthetic", type=int, default=0, help="also time a whole-store regrouping of N records")
    args = parser.parse_args()
    report = {}
    with tempfile.TemporaryDirectory(prefix="lw-incidents-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for name, paths, root, units in corpora(args.realdata, args.sample_logs):
            if args.only and name not in args.only:
                continue
            for stale in folder.glob(f"{name}.db*"):  # a fresh store each time
                stale.unlink()
            db = f"sqlite:///{folder}/{name}.db"
            analyse(paths, db)
            story = stories(db, args.stories, args.threads) if args.stories and name in STORY_CORPORA else None
            report[name] = score(db, name, root, units) | ({"stories": story} if story else {})
        if args.synthetic:
            report["synthetic"] = synthetic(args.synthetic, folder)
    print(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()

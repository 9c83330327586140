#!/usr/bin/env python3
"""Sigma engine benchmark: logwarden's detector vs pySigma's SQLite backend (the Zircolite approach),
the same SigmaHQ Windows rules on the same events, in the same run, on one core.

The events: every SigmaHQ regression sample (.evtx), the Windows sources of /work/shared/realdata
(OTRF, EVTX-to-MITRE) and deterministic benign Sysmon/Security noise (process creation, network,
image loads, file and registry writes, DNS, logons) up to `--events`. All are parsed once by
logwarden's parsers; neither engine is charged for parsing.
- logwarden: `Detector(rules).scan(batch)` over 2,000-event batches (what the pipeline does per window).
- baseline: the rules converted once by `pysigma-backend-sqlite` (with pySigma's Sysmon and Windows
  logsource pipelines, as Zircolite does) into SQL; charged: loading the events into an in-memory
  SQLite table (columns COLLATE NOCASE, REGEXP registered, as Zircolite builds it) and running
  every query.

(Not `bench/sigma.py`: a script of that name shadows pySigma's `sigma` package for every script in
bench/, whose folder Python puts first on the import path.)

Usage: python bench/sigma_engines.py [--events 200000] [--seed 7] [--profile] [--json out.json]
       python bench/sigma_engines.py --realdata     # both engines' recall on realdata's Windows units
Set LOGWARDEN_SHARED if the shared data is not at <repo>/../shared.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import random
import re
import sqlite3
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = Path(os.environ.get("LOGWARDEN_SHARED") or ROOT.parent / "shared")
SIGMA = SHARED / "sigma"
PACKS = [SIGMA / name for name in ("rules", "rules-emerging-threats", "rules-threat-hunting", "rules-placeholder")]
BATCH = 2000


# --- events -------------------------------------------------------------------------------------


def read_events(path: Path) -> list:
    from logwarden.app.events import ErrorRow
    from logwarden.app.ingest import TailRead
    from logwarden.app.parse import parse_stream

    lines = [line for line in TailRead(path, max_line_bytes=64 * 1024 * 1024) if not isinstance(line, ErrorRow)]
    _decision, events = parse_stream(lines, path=str(path))
    return [e for e in events if e.format == "windows"]


def real_events() -> tuple[list, dict[str, int]]:
    sources = {"regression .evtx": sorted((SIGMA / "regression_data").rglob("*.evtx")),
               "realdata otrf": sorted((SHARED / "realdata" / "otrf").rglob("*.json")),
               "realdata evtx_to_mitre": sorted((SHARED / "realdata" / "evtx_to_mitre").rglob("*.jsonl"))}
    events, counts = [], {}
    for name, files in sources.items():
        found = [e for f in files for e in read_events(f)]
        counts[name] = len(found)
        events += found
    return events, counts


_IMAGES = [
    ("C:\\Windows\\System32\\svchost.exe", "C:\\Windows\\system32\\svchost.exe -k netsvcs -p -s Schedule",
     "C:\\Windows\\System32\\services.exe"),
    ("C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe",
     '"C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe" --type=renderer --lang=en-US --field-trial-handle=1804',
     "C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe"),
    ("C:\\Windows\\System32\\conhost.exe", "\\??\\C:\\Windows\\system32\\conhost.exe 0xffffffff -ForceV1",
     "C:\\Windows\\System32\\cmd.exe"),
    ("C:\\Windows\\System32\\RuntimeBroker.exe", "C:\\Windows\\System32\\RuntimeBroker.exe -Embedding",
     "C:\\Windows\\System32\\svchost.exe"),
    ("C:\\Windows\\System32\\backgroundTaskHost.exe",
     '"C:\\Windows\\system32\\backgroundTaskHost.exe" -ServerName:BackgroundTaskHost.WebAccountProvider',
     "C:\\Windows\\System32\\svchost.exe"),
    ("C:\\Program Files\\Microsoft Office\\root\\Office16\\OUTLOOK.EXE",
     '"C:\\Program Files\\Microsoft Office\\root\\Office16\\OUTLOOK.EXE" /recycle', "C:\\Windows\\explorer.exe"),
    ("C:\\Users\\{user}\\AppData\\Local\\Programs\\Microsoft VS Code\\Code.exe",
     '"C:\\Users\\{user}\\AppData\\Local\\Programs\\Microsoft VS Code\\Code.exe" --type=utility --utility-sub-type=node',
     "C:\\Users\\{user}\\AppData\\Local\\Programs\\Microsoft VS Code\\Code.exe"),
    ("C:\\Program Files\\Git\\cmd\\git.exe", "git.exe status --porcelain", "C:\\Windows\\System32\\cmd.exe"),
    ("C:\\Windows\\System32\\taskhostw.exe", "taskhostw.exe {222A245B-E637-4AE9-A93F-A59CA119A75E}",
     "C:\\Windows\\System32\\svchost.exe"),
    ("C:\\ProgramData\\Microsoft\\Windows Defender\\Platform\\4.18.24010.12-0\\MsMpEng.exe",
     '"C:\\ProgramData\\Microsoft\\Windows Defender\\Platform\\4.18.24010.12-0\\MsMpEng.exe"',
     "C:\\Windows\\System32\\services.exe"),
    ("C:\\Windows\\System32\\SearchProtocolHost.exe",
     '"C:\\Windows\\system32\\SearchProtocolHost.exe" Global\\UsGthrFltPipeMssGthrPipe_S-1-5-21-1',
     "C:\\Windows\\System32\\SearchIndexer.exe"),
    ("C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe",
     '"C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe" --type=gpu-process --no-sandbox',
     "C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe"),
    ("C:\\Windows\\System32\\wbem\\WmiPrvSE.exe", "C:\\Windows\\system32\\wbem\\wmiprvse.exe -Embedding",
     "C:\\Windows\\System32\\svchost.exe"),
    ("C:\\Users\\{user}\\AppData\\Local\\Microsoft\\OneDrive\\OneDrive.exe",
     '"C:\\Users\\{user}\\AppData\\Local\\Microsoft\\OneDrive\\OneDrive.exe" /background', "C:\\Windows\\explorer.exe"),
]
_DLLS = ["ntdll.dll", "kernel32.dll", "KernelBase.dll", "user32.dll", "combase.dll", "msvcrt.dll", "advapi32.dll",
         "sechost.dll", "rpcrt4.dll", "ole32.dll", "shell32.dll", "ws2_32.dll", "crypt32.dll", "bcrypt.dll"]
_DOMAINS = ["www.microsoft.com", "login.microsoftonline.com", "outlook.office365.com", "github.com", "update.googleapis.com",
            "clients4.google.com", "teams.microsoft.com", "settings-win.data.microsoft.com", "ocsp.digicert.com"]
_USERS = ["alice", "bob", "carol", "dave", "erin"]
_REG = ["HKLM\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Explorer\\FolderDescriptions",
        "HKU\\S-1-5-21-1-2-3-1001\\Software\\Microsoft\\Windows\\CurrentVersion\\Explorer\\RecentDocs\\.docx",
        "HKLM\\System\\CurrentControlSet\\Services\\bam\\State\\UserSettings\\S-1-5-21-1-2-3-1001",
        "HKU\\S-1-5-21-1-2-3-1001\\Software\\Microsoft\\Office\\16.0\\Common\\Roaming\\Identities"]


def _sysmon(rng: random.Random, event_id: int, data: dict) -> dict:
    return {"EventID": event_id, "Channel": "Microsoft-Windows-Sysmon/Operational", "Provider": "Microsoft-Windows-Sysmon",
            "Computer": f"WS{rng.randrange(40):02d}.corp.example.com",
            "TimeCreated": f"2026-11-{1 + rng.randrange(28):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:00Z",
            "EventData": {"RuleName": "-", "UtcTime": "2026-11-01 10:00:00.000",
                          "ProcessGuid": "{%08X-0000-0000-0000-000000000000}" % rng.randrange(1 << 32),
                          "ProcessId": rng.randrange(100, 20000), **data}}


def noise_record(rng: random.Random) -> dict:
    user = rng.choice(_USERS)
    image, command, parent = (s.replace("{user}", user) for s in rng.choice(_IMAGES))
    roll = rng.random()
    if roll < 0.30:
        return _sysmon(rng, 1, {"Image": image, "CommandLine": command, "ParentImage": parent,
                                "ParentCommandLine": parent, "CurrentDirectory": "C:\\Windows\\system32\\",
                                "User": f"CORP\\{user}", "IntegrityLevel": rng.choice(["Medium", "High", "System"]),
                                "OriginalFileName": image.rsplit("\\", 1)[1], "Company": "Microsoft Corporation",
                                "Hashes": "SHA256=%064X,IMPHASH=%032X" % (rng.randrange(1 << 64), rng.randrange(1 << 64))})
    if roll < 0.50:
        return _sysmon(rng, 3, {"Image": image, "User": f"CORP\\{user}", "Protocol": "tcp", "Initiated": "true",
                                "SourceIp": f"10.1.{rng.randrange(255)}.{rng.randrange(255)}",
                                "SourcePort": rng.randrange(49152, 65535), "DestinationIp": f"52.{rng.randrange(255)}.1.7",
                                "DestinationHostname": rng.choice(_DOMAINS), "DestinationPort": rng.choice([443, 80, 53])})
    if roll < 0.65:
        return _sysmon(rng, 7, {"Image": image, "ImageLoaded": f"C:\\Windows\\System32\\{rng.choice(_DLLS)}",
                                "Signed": "true", "Signature": "Microsoft Windows", "SignatureStatus": "Valid"})
    if roll < 0.75:
        return _sysmon(rng, 11, {"Image": image, "TargetFilename":
                                 f"C:\\Users\\{user}\\AppData\\Local\\Temp\\tmp{rng.randrange(1 << 20):05X}.tmp"})
    if roll < 0.85:
        return _sysmon(rng, 13, {"Image": image, "EventType": "SetValue", "TargetObject": rng.choice(_REG),
                                 "Details": f"DWORD (0x{rng.randrange(1 << 16):08x})"})
    if roll < 0.90:
        return _sysmon(rng, 22, {"Image": image, "QueryName": rng.choice(_DOMAINS), "QueryStatus": "0",
                                 "QueryResults": "type:  5 edge.microsoft.com;::ffff:13.107.21.200;"})
    event_id = rng.choice([4624, 4634, 4672, 4688])
    data = {"SubjectUserName": user, "SubjectDomainName": "CORP", "TargetUserName": user, "LogonType": "3",
            "IpAddress": f"10.1.{rng.randrange(255)}.{rng.randrange(255)}", "LogonProcessName": "Kerberos",
            "AuthenticationPackageName": "Kerberos"}
    if event_id == 4688:
        data = {"SubjectUserName": user, "SubjectDomainName": "CORP", "NewProcessName": image, "CommandLine": command,
                "ParentProcessName": parent, "TokenElevationType": "%%1938"}
    return {"EventID": event_id, "Channel": "Security", "Provider": "Microsoft-Windows-Security-Auditing",
            "Computer": f"DC{rng.randrange(4)}.corp.example.com", "TimeCreated": "2026-11-02T10:00:00Z", "EventData": data}


def noise_events(n: int, seed: int) -> list:
    from logwarden.app.events import LogLine
    from logwarden.app.parse import parse_lines

    rng = random.Random(seed)
    lines = [LogLine(source="noise.jsonl", inode=0, offset=0, line_no=i, text=json.dumps(noise_record(rng)))
             for i in range(1, n + 1)]
    return list(parse_lines(lines, "windows"))


# --- the two engines ------------------------------------------------------------------------------


def windows_rules():
    from logwarden.app.detect import RuleSet, load_ruleset

    cache = _cache_dir()
    started = time.perf_counter()
    full = load_ruleset(PACKS, cache_dir=cache)
    load_s = time.perf_counter() - started
    rules = [r for r in full.rules if r.logsource[0] == "windows"]
    return RuleSet(rules=rules, profile=full.profile), full, load_s


def run_logwarden(ruleset, events: list, profile: bool) -> tuple[float, float, Counter, str]:
    from logwarden.app.detect import Detector

    detector = Detector(ruleset)
    profiler = cProfile.Profile() if profile else None
    hits: Counter = Counter()
    started, cpu_started = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    for i in range(0, len(events), BATCH):
        for signal in detector.scan(events[i:i + BATCH]):
            hits[signal.rule_id] += len(signal.line_numbers)
    if profiler:
        profiler.disable()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    report = ""
    if profiler:
        import io

        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
        report = out.getvalue()
    return elapsed, cpu, hits, report


def sqlite_queries(ruleset) -> tuple[dict[str, str], int]:
    """rule id → SQL, by pySigma's SQLite backend with the Sysmon + Windows logsource pipelines
    (converted once, then cached beside the compiled packs: conversion is not what is measured)."""
    import hashlib

    from sigma.backends.sqlite import sqliteBackend
    from sigma.collection import SigmaCollection
    from sigma.pipelines.sysmon import sysmon_pipeline
    from sigma.pipelines.windows import windows_logsource_pipeline

    key = hashlib.sha256("|".join(sorted(r.key for r in ruleset.rules)).encode()).hexdigest()[:16]
    cached = _cache_dir() / f"sqlite-queries-{key}.json"
    if cached.is_file():
        data = json.loads(cached.read_text())
        return data["queries"], data["failed"]
    backend = sqliteBackend(sysmon_pipeline() + windows_logsource_pipeline(), collate_nocase=True)
    queries, failed = {}, 0
    for rule in ruleset.rules:
        path = rule.ir.source.split("!", 1)[0]
        try:
            collection = SigmaCollection.from_yaml(Path(path).read_text(encoding="utf-8"))
            [query] = backend.convert(collection)
        except Exception:  # rules the backend cannot express are left out of the baseline
            failed += 1
            continue
        queries[rule.id] = query
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps({"queries": queries, "failed": failed}))
    return queries, failed


def _cache_dir() -> Path:
    return Path(os.environ.get("LOGWARDEN_HOME", Path.home() / ".local/share/logwarden")) / "cache" / "sigma"


def _flat(event) -> dict:
    row = {k: v for k, v in event.fields.items() if not isinstance(v, (dict, list))}
    row["Provider_Name"] = event.fields.get("Provider")
    row["_line"] = event.line_no
    return row


def _regexp(pattern: str, value) -> bool:
    if value is None:
        return False
    try:
        return re.search(pattern, str(value)) is not None
    except re.error:
        return False


def _rows(events: list) -> tuple[list[str], list[list[str | None]]]:
    """Zircolite's table: one row an event, one column a field (SQLite column names ignore case:
    ProcessId and ProcessID are one column)."""
    flat = [_flat(e) for e in events]
    spelled: dict[str, str] = {}
    for row in flat:
        for key in row:
            spelled.setdefault(key.lower(), key)
    columns = sorted(spelled.values())
    rows = []
    for row in flat:
        cased = {spelled[k.lower()]: v for k, v in row.items()}
        rows.append([None if cased.get(c) is None else str(cased[c]) for c in columns])
    return columns, rows


def _load(columns: list[str], rows: list[list[str | None]]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.create_function("regexp", 2, _regexp, deterministic=True)
    db.execute("CREATE TABLE logs (" + ", ".join(f'"{c}" TEXT COLLATE NOCASE' for c in columns) + ")")
    db.executemany(f"INSERT INTO logs VALUES ({', '.join('?' for _ in columns)})", rows)
    db.commit()
    return db


def run_sqlite(queries: dict[str, str], events: list) -> tuple[float, float, float, Counter]:
    columns, rows = _rows(events)  # flattening is parsing's job: not charged, as logwarden is not
    started, cpu_started = time.perf_counter(), time.process_time()
    db = _load(columns, rows)
    load_s, load_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    _add_missing_columns(db, queries)
    hits: Counter = Counter()
    started, cpu_started = time.perf_counter(), time.process_time()
    for rule_id, query in queries.items():
        try:
            hits[rule_id] = len(db.execute(query).fetchall())
        except sqlite3.Error:
            continue
    return load_s, time.perf_counter() - started, load_cpu + time.process_time() - cpu_started, hits


def _add_missing_columns(db: sqlite3.Connection, queries: dict[str, str]) -> None:
    """A rule naming a field no event has reads NULL there (Zircolite adds such columns too); untimed."""
    for query in queries.values():
        for _ in range(50):
            try:
                db.execute(f"EXPLAIN {query}")
                break
            except sqlite3.OperationalError as exc:
                missing = re.match(r"no such column: (.+)", str(exc))
                if not missing:
                    break
                db.execute(f'ALTER TABLE logs ADD COLUMN "{missing.group(1).strip(chr(34))}" TEXT COLLATE NOCASE')


# --- realdata: the same rules through SQLite, scored like `logwarden eval` ------------------------


def realdata_recall(ruleset, *, include_shipped: bool) -> dict:
    """Recall of the SQLite baseline on realdata's Windows units (OTRF, EVTX-to-MITRE), and of
    logwarden's detector on the same parsed events, with `logwarden eval`'s scoring: a unit is
    detected when a hit in its lines has the rule's level ≥ its risk_min. (logwarden's own number
    in EVAL.md comes from `logwarden eval` through the whole pipeline; this is the signal-level view
    of both engines on identical events.)"""
    from logwarden.app.detect import Detector
    from logwarden.app.detect.taxonomy import risk_of, rule_category
    from logwarden.app.evaluate import ScoredRecord, load_labels, score

    labels = SHARED / "realdata" / "labels.jsonl"
    units = [u for u in load_labels(labels) if u.file.startswith(("otrf/", "evtx_to_mitre/"))]
    queries, _failed = sqlite_queries(ruleset)
    by_id = {r.id: r for r in ruleset.rules}
    sql_records, lw_records = [], []
    for file in sorted({u.file for u in units}):
        events = read_events(SHARED / "realdata" / file)
        if not events:
            continue
        detector = Detector(ruleset)
        for i in range(0, len(events), BATCH):
            lw_records += [ScoredRecord(file, tuple(s.line_numbers), s.category, s.level)
                           for s in detector.scan(events[i:i + BATCH])]
        for rule_id, lines in _sqlite_hits(queries, events).items():
            rule = by_id[rule_id]
            sql_records.append(ScoredRecord(file, tuple(lines), rule_category(rule.ir.tags, rule.ir.custom.get("category")),
                                            risk_of(rule.ir.level)))
    out = {}
    for name, records in (("logwarden Detector", lw_records), ("pySigma SQLite backend", sql_records)):
        report = score(units, records)
        per = {}
        for source in ("otrf", "evtx_to_mitre"):
            picked = [r for r in report.units if r.unit.file.startswith(source + "/")]
            per[source] = (sum(r.detected for r in picked), len(picked))
        out[name] = per | {"category": report.overall.category_correct}
    return out


def _sqlite_hits(queries: dict[str, str], events: list) -> dict[str, list[int]]:
    db = _load(*_rows(events))
    _add_missing_columns(db, queries)
    hits = {}
    for rule_id, query in queries.items():
        try:
            lines = [int(row[0]) for row in db.execute(query.replace("SELECT *", 'SELECT "_line"', 1))]
        except sqlite3.Error:
            continue
        if lines:
            hits[rule_id] = lines
    return hits


# --- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-baseline", action="store_true", help="Only logwarden (for profiling).")
    parser.add_argument("--realdata", action="store_true",
                        help="Instead: recall of both engines on realdata's labelled Windows units.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not (SIGMA / "rules").is_dir():
        sys.exit(f"SigmaHQ rules not found under {SIGMA}; set LOGWARDEN_SHARED")

    ruleset, full, load_s = windows_rules()
    if args.realdata:
        for name, per in realdata_recall(ruleset, include_shipped=False).items():
            cells = [f"{k} {d}/{n} ({100 * d / n:.1f}%)" for k, v in per.items() if k != "category" for d, n in [v]]
            print(f"| {name} | " + " | ".join(cells) + f" | right category {per['category']} |")
        return
    real, counts = real_events()
    noise = noise_events(max(0, args.events - len(real)), args.seed)
    events = real + noise
    rng = random.Random(args.seed)
    rng.shuffle(events)
    print(f"{len(events):,} events: {', '.join(f'{k} {v:,}' for k, v in counts.items())}, benign noise {len(noise):,}")
    print(f"rules: {len(ruleset.rules):,} SigmaHQ Windows rules active (pack load {load_s:.1f} s, "
          f"{sum(1 for r in ruleset.rules if not r.clauses)} without a literal gate)")

    lw_s, lw_cpu, lw_hits, report = run_logwarden(ruleset, events, args.profile)
    if args.no_baseline:
        print(f"logwarden: {len(events) / lw_cpu:,.0f} events per CPU second, {len(events) / lw_s:,.0f} events/s wall "
              f"({lw_cpu:.1f} s CPU, {lw_s:.1f} s)\n{report}")
        return
    queries, failed = sqlite_queries(ruleset)
    load_db_s, query_s, sql_cpu, sql_hits = run_sqlite(queries, events)
    sql_s = load_db_s + query_s
    both = set(queries)
    agree = sum(1 for r in both if (lw_hits[r] > 0) == (sql_hits[r] > 0))
    rows = [("logwarden Detector", len(ruleset.rules), lw_s, lw_cpu),
            ("pySigma SQLite backend (load + queries)", len(queries), sql_s, sql_cpu)]
    n = len(events)
    print("\n| engine | rules | wall | CPU | events/s (wall) | events per CPU s (one core) | ratio (CPU) |")
    print("|---|---|---|---|---|---|---|")
    for name, count, secs, cpu in rows:
        print(f"| {name} | {count:,} | {secs:.1f} s | {cpu:.1f} s | {n / secs:,.0f} | {n / cpu:,.0f} | "
              f"{rows[1][3] / cpu:.2f}× |")
    print(f"\nSQLite: load {load_db_s:.1f} s, {len(queries):,} queries {query_s:.1f} s ({failed} rules the backend "
          f"could not convert). Rules that fired: logwarden {sum(1 for v in lw_hits.values() if v)}, "
          f"SQLite {sum(1 for v in sql_hits.values() if v)}; fired-or-not agrees on {agree:,}/{len(both):,} rules.")
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    if report:
        print(report)
    if args.json:
        args.json.write_text(json.dumps({"events": len(events), "sources": counts | {"noise": len(noise)},
                                         "logwarden": {"rules": len(ruleset.rules), "seconds": lw_s, "cpu_s": lw_cpu},
                                         "sqlite": {"rules": len(queries), "load_s": load_db_s, "query_s": query_s,
                                                    "cpu_s": sql_cpu},
                                         "load_average": os.getloadavg()[0]}, indent=2))


if __name__ == "__main__":
    main()

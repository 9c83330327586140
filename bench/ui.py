#!/usr/bin/env python3
"""UI benchmark: time to render the overview and a filtered records page with Streamlit's AppTest,
on a store of 100,000 records against the same pages on 1,000 records, in the same run.

Each page is timed cold (st.cache_data cleared, so every aggregate hits SQLite) and warm (the
rerun a widget click causes, served from the cache). Records are synthetic but shaped like the
pipeline's (sources, levels, categories, techniques, indicators, evidence), spread over 30 days.

Usage: python bench/ui.py [--sizes 1000,100000] [--dir /tmp/lw-ui-bench] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
APP = ROOT / "logwarden" / "ui" / "app.py"
CHUNK = 5000
START = datetime(2026, 10, 30, tzinfo=timezone.utc)
LEVELS = ("info", "low", "medium", "high", "critical")
LEVEL_WEIGHTS = (30, 25, 25, 15, 5)
CATEGORY_TECHNIQUES = {
    "brute_force": ("T1110.001", "Password Guessing", "Credential Access"),
    "web_attack": ("T1190", "Exploit Public-Facing Application", "Initial Access"),
    "reconnaissance": ("T1595.002", "Vulnerability Scanning", "Reconnaissance"),
    "privilege_escalation": ("T1548.003", "Sudo and Sudo Caching", "Privilege Escalation"),
    "malware_execution": ("T1059.001", "PowerShell", "Execution"),
    "account_persistence": ("T1136.001", "Local Account", "Persistence"),
    "system_failure": None, "policy_violation": ("T1078.003", "Local Accounts", "Defense Evasion"),
}


def make_records(n: int, seed: int = 7):
    from logwarden.schemas import Evidence, ExemplarLine, Indicators, RiskRecord, Technique, record_id
    from logwarden.schemas.record import RISK_SCORES

    rng = random.Random(seed)
    categories = list(CATEGORY_TECHNIQUES)
    for i in range(n):
        source, level, category = f"/var/log/host-{i % 40:02d}/auth.log", rng.choices(LEVELS, LEVEL_WEIGHTS)[0], rng.choice(categories)
        ip, user, host = f"203.0.{rng.randrange(64)}.{rng.randrange(1, 255)}", f"user{rng.randrange(200)}", f"host-{i % 40:02d}"
        tech = CATEGORY_TECHNIQUES[category]
        ts = START + timedelta(seconds=rng.randrange(30 * 86400))
        line = 1 + i * 10
        yield RiskRecord(
            id=record_id(source=source, inode=1, line_start=line, line_end=line + 9, prompt_version="analyze_v1"),
            source=source, inode=1, host=host, line_start=line, line_end=line + 9, first_ts=ts - timedelta(minutes=2),
            last_ts=ts, line_count=10, risk_level=level, risk_score=RISK_SCORES[level], category=category,
            techniques=[Technique(id=tech[0], name=tech[1], tactic=tech[2])] if tech else [],
            indicators=Indicators(ips=[ip], users=[user], hosts=[host]),
            anomaly=f"{category.replace('_', ' ')}: 10 matching lines for src_ip={ip} user={user}",
            trace=f"{ip} -> sshd on {host}, user {user}", recommendation=f"Block {ip}; review {user} on {host}.",
            evidence=Evidence(line_numbers=list(range(line, line + 10)),
                              exemplars=[ExemplarLine(line_no=line, text=f"Failed password for {user} from {ip} port 22 ssh2")]),
            detections=[f"lw-{category}"], decided_by="rules", prompt_version="analyze_v1")


def fill(folder: Path, n: int) -> tuple[str, float]:
    from logwarden.app.store import open_store

    db = folder / f"ui-{n}.db"
    url = f"sqlite:///{db}"
    store = open_store(url)
    if store.count_records() == n:
        return url, 0.0
    started, chunk = time.perf_counter(), []
    for record in make_records(n):
        chunk.append(record)
        if len(chunk) == CHUNK:
            store.upsert_records(chunk)
            chunk = []
    if chunk:
        store.upsert_records(chunk)
    store.close()
    return url, time.perf_counter() - started


def timed_run(at) -> float:
    started = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - started
    if at.exception:
        raise SystemExit(f"page raised: {[e.value for e in at.exception]}")
    return elapsed


def measure(url: str, repeat: int) -> dict[str, dict[str, float]]:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["LOGWARDEN_DB"] = url
    times: dict[str, dict[str, list[float]]] = {"overview": {"cold": [], "warm": []},
                                                 "records_filtered": {"cold": [], "warm": []}}
    for _ in range(repeat):
        st.cache_data.clear()
        at = AppTest.from_file(str(APP), default_timeout=600)
        times["overview"]["cold"].append(timed_run(at))
        times["overview"]["warm"].append(timed_run(at))
        at.switch_page("views/records.py").run()
        at.selectbox(key="rec_min_risk").select("high")
        at.text_input(key="rec_text").set_value("203.0.1")
        st.cache_data.clear()
        times["records_filtered"]["cold"].append(timed_run(at))
        times["records_filtered"]["warm"].append(timed_run(at))
        assert at.dataframe, "the filtered records page shows no table"
    return {page: {kind: statistics.median(v) for kind, v in kinds.items()} for page, kinds in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--dir", default="/tmp/lw-ui-bench")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    for n in sizes:
        url, fill_s = fill(folder, n)
        print(f"{n:>7,} records: filled in {fill_s:.1f}s" if fill_s else f"{n:>7,} records: reusing {url}", flush=True)
        results[n] = measure(url, args.repeat)
    report(results, sizes)
    if args.json:
        Path(args.json).write_text(json.dumps({str(k): v for k, v in results.items()}, indent=2))


def report(results: dict[int, dict[str, dict[str, float]]], sizes: list[int]) -> None:
    base, big = sizes[0], sizes[-1]
    print(f"\n{'page':<18} {'cache':<5} " + " ".join(f"{n:>10,}" for n in sizes) + f"  ratio {big:,}/{base:,}")
    for page in ("overview", "records_filtered"):
        for kind in ("cold", "warm"):
            cells = " ".join(f"{results[n][page][kind]:>9.3f}s" for n in sizes)
            ratio = results[big][page][kind] / results[base][page][kind]
            print(f"{page:<18} {kind:<5} {cells}  {ratio:.2f}x")


if __name__ == "__main__":
    main()

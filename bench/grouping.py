"""Incident grouping at scale (issue 44): 10k / 60k / 200k stored records regrouped, against the
grouping of an older commit measured in the same run.

    python bench/grouping.py                                   # 10k, 60k, 200k; old code on 10k only
    python bench/grouping.py --sizes 10000,20000 --old-max 20000 --old-rev 16e247c

The records look like what made grouping slow in the field: a sweep (one address per record, on a
few hosts: the host chains are busy and link nothing) and, every tenth record, a small brute-force
story (five records sharing an address and an account). Each size is stored once in a fresh
SQLite file; each arm runs in a child process on its own copy (`regroup` around every record, as
`analyze` does after storing them, then once more, as a re-run does) and reports seconds, peak RSS
and a digest of the incidents it stored, so the two arms are checked to group alike. The old arm
is the `logwarden/` tree of `--old-rev` (git archive), stopped after `--old-timeout` seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASE_TS = datetime(2026, 11, 29, 0, 0, 0, tzinfo=timezone.utc)
STORY_EVERY = 10  # one record in ten belongs to a five-record story
STORY_SIZE = 5
HOSTS = 8


def make_records(n: int):
    from logwarden.schemas import Evidence, ExemplarLine, Indicators, RiskRecord, record_id

    for i in range(n):
        story = i % STORY_EVERY == 0
        key = i // (STORY_EVERY * STORY_SIZE) if story else i
        ip = f"10.{(key >> 16) & 255}.{(key >> 8) & 255}.{key & 255}" if not story else \
            f"198.{18 + ((key >> 16) & 1)}.{(key >> 8) & 255}.{key & 255}"
        users = [f"user{key % 5000}"] if story else []
        host = f"web{i % HOSTS:02d}"
        start = BASE_TS + timedelta(seconds=i * 2)
        text = f"{start:%b %d %H:%M:%S} {host} sshd[{i}]: Failed password for {users[0] if users else 'root'} from {ip}"
        yield RiskRecord(
            id=record_id(source=f"{host}:/var/log/auth.log", inode=1, line_start=i + 1, line_end=i + 1,
                         prompt_version="rules"),
            source=f"{host}:/var/log/auth.log", inode=1, host=host, line_start=i + 1, line_end=i + 1,
            first_ts=start, last_ts=start + timedelta(seconds=1), line_count=1, risk_level="medium",
            risk_score=50, category="brute_force" if story else "reconnaissance",
            indicators=Indicators(ips=[ip], users=users, hosts=[]),
            anomaly="Failed logins.", trace=f"{ip} → sshd on {host}.", recommendation="Block the address.",
            evidence=Evidence(line_numbers=[i + 1], exemplars=[ExemplarLine(line_no=i + 1, text=text)]),
            detections=["ssh_failed"], decided_by="rules", model=None, prompt_version="rules")


def seed(db: Path, n: int) -> None:
    from logwarden.app.store import open_store

    with open_store(f"sqlite:///{db}") as store:
        batch = []
        for record in make_records(n):
            batch.append(record)
            if len(batch) == 5000:
                store.upsert_records(batch)
                batch = []
        store.upsert_records(batch)


def worker(db: Path) -> None:
    """One arm: regroup the whole span twice; prints seconds, peak RSS and the incidents' digest."""
    from logwarden.app.incidents import IncidentOptions
    from logwarden.app.incidents.regroup import Span, regroup
    from logwarden.app.store import RecordFilter, open_store

    with open_store(f"sqlite:///{db}") as store:
        span = Span()  # what a run that stored them all would pass: their first and last records
        span.add(store.query_records(RecordFilter(), order_by="first_ts", descending=False, limit=1))
        span.add(store.query_records(RecordFilter(), order_by="last_ts", limit=1))
        options = IncidentOptions()
        t0 = time.perf_counter()
        first = regroup(store, options, around=span)
        t1 = time.perf_counter()
        regroup(store, options, around=span)
        t2 = time.perf_counter()
        stored = sorted((i.id, tuple(sorted(i.record_ids))) for i in store.incidents.query(limit=10**9))
    digest = hashlib.sha256(json.dumps(stored).encode()).hexdigest()[:16]
    print(json.dumps({"first_s": t1 - t0, "again_s": t2 - t1, "incidents": len(first.incidents),
                      "stored": len(stored), "digest": digest,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run_arm(tree: Path, db: Path, timeout: float) -> dict | None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    try:
        done = subprocess.run([sys.executable, __file__, "--worker", str(db)], env=env, capture_output=True,
                              text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def old_tree(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "logwarden"], capture_output=True, check=True)
    tar = into / "old.tar"
    tar.write_bytes(archive.stdout)
    with tarfile.open(tar) as fh:
        fh.extractall(into / "old", filter="data")
    return into / "old"


def describe(arm: dict | None, timeout: float) -> str:
    if arm is None:
        return f"> {timeout:.0f} s (stopped)"
    return f"{arm['first_s']:.1f} s + again {arm['again_s']:.1f} s, {arm['rss_mb']:.0f} MB, {arm['incidents']} incidents"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,60000,200000")
    parser.add_argument("--old-rev", default="16e247c", help="the commit whose grouping is the baseline")
    parser.add_argument("--old-max", type=int, default=10000, help="largest size the old code is run on")
    parser.add_argument("--old-timeout", type=float, default=600.0)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(Path(args.worker))
        return
    sys.path.insert(0, str(REPO))
    print(f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; old = {args.old_rev}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        old = old_tree(args.old_rev, work)
        for n in map(int, args.sizes.split(",")):
            db = work / f"seed{n}.db"
            seed(db, n)
            shutil.copy(db, work / "new.db")
            new = run_arm(REPO, work / "new.db", 3600)
            line = f"{n:>7} records  new: {describe(new, 3600)}"
            if n <= args.old_max:
                shutil.copy(db, work / "old.db")
                before = run_arm(old, work / "old.db", args.old_timeout)
                line += f"  old: {describe(before, args.old_timeout)}"
                if before and new:
                    same = "same incidents" if before["digest"] == new["digest"] else "INCIDENTS DIFFER"
                    line += (f"  ratio old/new {before['first_s'] / new['first_s']:.1f}×, again "
                             f"{before['again_s'] / new['again_s']:.1f}× ({same})")
                elif new:
                    line += f"  ratio > {args.old_timeout / new['first_s']:.0f}×"
            print(line, flush=True)


if __name__ == "__main__":
    main()

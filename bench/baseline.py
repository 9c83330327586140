#!/usr/bin/env python3
"""Web baseline benchmark: learn per-site endpoint profiles from ≥1M generated access-log lines,
then judge another ≥1M against them; profile size (rows, JSON bytes) and lines/s, against a
baseline measured in the same run (the same lines through the access-log parser alone: what
learning and judging add on top of reading).

Usage: python -P bench/baseline.py [--lines 1000000] [--sites 20] [--json out.json]
The traffic: `--sites` shops, each with 40–120 endpoints (ids in paths, 1–8 parameters each, values
drawn from per-parameter shapes: numbers, enumerations, names, emails, free text), ~20,000 clients
a site; 1 request in 1,000 of the judged half carries a renamed parameter or an odd value.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import string
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAMP = "10/Mar/2024:06:55:46 +0000"
WORDS = ["alpha", "bravo", "casa", "delta", "eco", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]


def make_sites(rng: random.Random, sites: int) -> list[dict]:
    shapes = ("number", "enum", "name", "email", "text", "token")
    out = []
    for s in range(sites):
        endpoints = []
        for e in range(rng.randint(40, 120)):
            path = f"/{rng.choice(WORDS)}/{rng.choice(WORDS)}{e}" + ("/{id}" if rng.random() < 0.3 else "") + ".php"
            params = [(f"{rng.choice(WORDS)[:4]}{p}", rng.choice(shapes), [rng.choice(WORDS) for _ in range(4)])
                      for p in range(rng.randint(1, 8))]
            endpoints.append((rng.choice(("GET", "GET", "POST")), path, params))
        out.append({"host": f"shop{s}.example.com", "endpoints": endpoints})
    return out


def value(rng: random.Random, shape: str, choices: list[str]) -> str:
    if shape == "number":
        return str(rng.randint(1, 5000))
    if shape == "enum":
        return rng.choice(choices)
    if shape == "name":
        return rng.choice(WORDS).capitalize() + "+" + rng.choice(WORDS).capitalize()
    if shape == "email":
        return f"{rng.choice(WORDS)}{rng.randint(1, 99)}%40{rng.choice(WORDS)}.com"
    if shape == "token":
        return "".join(rng.choices(string.ascii_letters + string.digits, k=24))
    return "+".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))


def write_log(path: Path, sites: list[dict], lines: int, seed: int, odd_every: int = 0) -> int:
    rng, odd = random.Random(seed), 0
    with open(path, "w", encoding="utf-8") as out:
        for i in range(lines):
            site = sites[rng.randrange(len(sites))]
            method, route, params = site["endpoints"][rng.randrange(len(site["endpoints"]))]
            pairs = [(name, value(rng, shape, choices)) for name, shape, choices in params]
            if odd_every and i % odd_every == 0:
                odd += 1
                pairs[0] = (pairs[0][0] + "X", pairs[0][1]) if i % 2 else (pairs[0][0], "%27" + "A" * 300)
            target = route.replace("{id}", str(rng.randint(1, 99999))) + "?" + "&".join(f"{n}={v}" for n, v in pairs)
            client = f"10.{rng.randrange(80)}.{rng.randrange(250)}.{rng.randrange(1, 250)}"
            out.write(f'{site["host"]}:443 {client} - - [{STAMP}] "{method} {target} HTTP/1.1" 200 '
                      f'{rng.randint(200, 9000)} "-" "Mozilla/5.0"\n')
    return odd


def parse_only(path: Path) -> float:
    """The same lines through the parser alone (lines/s)."""
    from logwarden.app.ingest import read_lines
    from logwarden.app.parse import parse_stream

    started = time.perf_counter()
    _, events = parse_stream(read_lines(path), path=str(path))
    count = sum(1 for _ in events)
    return count / (time.perf_counter() - started)


def main() -> int:
    from logwarden.app.baseline.learn import learn_paths
    from logwarden.app.pipeline import Pipeline
    from logwarden.app.run_options import RunOptions
    from logwarden.app.store import open_store
    from logwarden.cli.main import tune_gc

    tune_gc()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--sites", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lw-bench-baseline-") as tmp:
        folder = Path(tmp)
        sites = make_sites(random.Random(1), args.sites)
        (folder / "history").mkdir()
        (folder / "today").mkdir()
        write_log(folder / "history" / "access.log.1", sites, args.lines, seed=2)
        odd = write_log(folder / "today" / "access.log", sites, args.lines, seed=3, odd_every=1000)
        parse_rate = parse_only(folder / "history" / "access.log.1")
        store = open_store(f"sqlite:///{folder / 'bench.db'}")
        started = time.perf_counter()
        learned = learn_paths(store, [folder / "history"])
        learn_s = time.perf_counter() - started
        summary = store.baseline_summary()
        started = time.perf_counter()
        metrics = Pipeline(store, None, RunOptions(rules_only=True, baseline="judge"), command="bench").analyze(
            [folder / "today"])
        judge_s = time.perf_counter() - started
    result = {
        "machine": f"{platform.machine()} cores={__import__('os').cpu_count()}", "lines": args.lines,
        "parse_only_lines_per_s": parse_rate,
        "learn_lines_per_s": learned.lines / learn_s, "learn_ratio_vs_parse": learned.lines / learn_s / parse_rate,
        "judge_lines_per_s": metrics.lines / judge_s, "judge_ratio_vs_parse": metrics.lines / judge_s / parse_rate,
        "profile": summary, "profile_bytes": sum(s["bytes"] for s in summary),
        "profile_rows": sum(s["rows"] for s in summary), "odd_requests": odd, "deviations": metrics.deviations,
        "records": metrics.records, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print(f"parse only (baseline)           {parse_rate:>10,.0f} lines/s")
    print(f"baseline learn (history)        {result['learn_lines_per_s']:>10,.0f} lines/s  "
          f"{result['learn_ratio_vs_parse']:.2f}x of parse only")
    print(f"analyze, rules + baselines      {result['judge_lines_per_s']:>10,.0f} lines/s  "
          f"{result['judge_ratio_vs_parse']:.2f}x of parse only")
    print(f"profile: {result['profile_rows']:,} rows, {result['profile_bytes'] / 2**20:,.1f} MiB of JSON "
          f"({args.sites} sites); peak RSS {result['peak_rss_mib']:,.0f} MiB")
    print(f"odd requests planted {odd:,}; deviations reported {metrics.deviations:,}; records {metrics.records:,}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

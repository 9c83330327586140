"""Speculative decoding on the llama.cpp engine: the embedded 1.5B alone against the 1.5B with the
embedded 0.5B drafting (`--draft-model embedded`), on real triage lines, in the same run.

Each configuration is one long-lived worker process (this script with `--worker`), loaded as
`logwarden triage` loads it (`load_llamacpp`, the system prefix warmed) so its RSS is its own; the
main process hands them the lines in turn — A then B on one line, B then A on the next — so the
shared CPU's load falls on both alike. Every line is new to both (the system prefix is cached, the
line's digest is not), greedy, under the triage schema's grammar, `max_new_tokens` as shipped.

Per answer: wall seconds (request → answer), new tokens, decode tokens/s (llama.cpp's timings),
drafted and accepted tokens; then the medians, the speed-up (alone wall ÷ draft wall), the
acceptance rate (accepted ÷ drafted), peak RSS of each worker, whether every answer was the same
text byte for byte, and the load average before and after.

    python bench/speculative.py [--draft-tokens 8] [--threads N] [--json]     # ~3-6 min on 2 shared cores
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Real triage lines from sample_logs/ (auth.log, access.log, audit.log), one of each shape.
LINES = (
    "Mar 12 02:13:12 web01 sshd[3180]: Invalid user oracle from 203.0.113.66 port 57299",
    "Mar 12 01:30:25 web01 sshd[2988]: Failed password for rkumar from 10.0.8.15 port 45587 ssh2",
    '192.0.2.150 - - [12/Mar/2024:10:05:32 +0000] "GET /products.php?id=-1021%20UNION%20ALL%20SELECT%20NULL%2CNULL'
    '%2CCONCAT%280x716b6a6271%2C0x2641ec6e11f473749ccd%2C0x7170767a71%29--%20- HTTP/1.1" 500 7339 "-" '
    '"sqlmap/1.7.2#stable (https://sqlmap.org)"',
    "Mar 12 00:56:01 web01 sudo:   rkumar : TTY=pts/0 ; PWD=/home/rkumar ; USER=root ; "
    "COMMAND=/usr/bin/tail -n 200 /var/log/apache2/error.log",
    '203.0.113.9 - - [02/Mar/2026:10:00:00 +0000] "GET /item.php?id=1%20UNION%20SELECT%20user,password%20FROM'
    '%20users-- HTTP/1.1" 200 512 "-" "sqlmap/1.7"',
    "Mar  2 10:01:07 bastion sshd[9211]: Failed password for invalid user admin from 198.51.100.77 port 51122 ssh2",
)
CONFIGS = ("alone", "draft")


def worker(config: str, draft_tokens: int, threads: int | None) -> None:
    """Load the model as triage does, then answer one line per stdin line, one JSON line each."""
    from logwarden.app.config import get_settings
    from logwarden.app.triage import prepare
    from logwarden.engine.api import Sampling
    from logwarden.engine.load import load_llamacpp
    from logwarden.prompts import USER_LEAD, system_prompt

    settings = get_settings()
    engine = load_llamacpp(model="embedded-1.5b", threads=threads, cache_dir=settings.model_cache,
                           draft_model="embedded" if config == "draft" else None, draft_tokens=draft_tokens)
    engine.warm_prefix(system_prompt(), USER_LEAD)
    print(json.dumps({"ready": True, "rss_mb": _rss_mb()}), flush=True)
    for raw in sys.stdin:
        line = json.loads(raw)["line"]
        requests = prepare(line, count_tokens=engine.count_tokens).requests()
        began = time.perf_counter()
        answers = engine.generate(requests, max_new_tokens=settings.max_new_tokens, sampling=Sampling(temperature=0.0))
        wall = time.perf_counter() - began
        print(json.dumps({"wall_s": wall, "text": [a.text for a in answers], "errors": [a.error for a in answers],
                          "stats": [a.stats.as_dict() for a in answers], "rss_mb": _rss_mb()}), flush=True)


def _rss_mb() -> dict[str, float]:
    """Resident and peak resident memory of this process (/proc/self/status), in MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {"rss": int(fields["VmRSS"].split()[0]) / 1024, "peak": int(fields["VmHWM"].split()[0]) / 1024}


def start(config: str, args: argparse.Namespace) -> subprocess.Popen:
    command = [sys.executable, __file__, "--worker", config, "--draft-tokens", str(args.draft_tokens)]
    if args.threads:
        command += ["--threads", str(args.threads)]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    ready = json.loads(_read(process))
    assert ready.get("ready"), ready
    return process


def _read(process: subprocess.Popen) -> str:
    assert process.stdout is not None
    answer = process.stdout.readline()
    if not answer:
        raise SystemExit(f"worker {process.args} ended early (exit {process.wait()})")
    return answer


def ask(process: subprocess.Popen, line: str) -> dict:
    assert process.stdin is not None
    process.stdin.write(json.dumps({"line": line}) + "\n")
    process.stdin.flush()
    return json.loads(_read(process))


def run(args: argparse.Namespace) -> dict:
    load_before = os.getloadavg()
    workers = {config: start(config, args) for config in CONFIGS}
    rows = []
    for n, line in enumerate(LINES):
        order = CONFIGS if n % 2 == 0 else tuple(reversed(CONFIGS))
        answers = {config: ask(workers[config], line) for config in order}
        rows.append({"line": line[:60], "first": order[0], **answers})
    peaks = {}
    for config, process in workers.items():
        assert process.stdin is not None
        peaks[config] = rows[-1][config]["rss_mb"]["peak"]
        process.stdin.close()
        process.wait()
    return summary(rows, peaks, load_before, os.getloadavg(), args)


def summary(rows: list[dict], peaks: dict[str, float], load_before: tuple, load_after: tuple,
            args: argparse.Namespace) -> dict:
    def per(config: str, key: str) -> list[float]:
        return [sum(s[key] for s in row[config]["stats"]) for row in rows]

    walls = {c: [row[c]["wall_s"] for row in rows] for c in CONFIGS}
    drafted, accepted = sum(per("draft", "drafted_tokens")), sum(per("draft", "accepted_tokens"))
    return {
        "lines": len(rows), "draft_tokens": args.draft_tokens, "threads": args.threads,
        "identical": all(row["alone"]["text"] == row["draft"]["text"] for row in rows),
        "errors": [e for row in rows for c in CONFIGS for e in row[c]["errors"] if e],
        "median_wall_s": {c: round(statistics.median(walls[c]), 2) for c in CONFIGS},
        "total_wall_s": {c: round(sum(walls[c]), 2) for c in CONFIGS},
        "new_tokens": {c: int(sum(per(c, "new_tokens"))) for c in CONFIGS},
        "median_tokens_per_s": {c: round(statistics.median(_rates(rows, c)), 2) for c in CONFIGS},
        "speed_up": round(sum(walls["alone"]) / sum(walls["draft"]), 3),
        "drafted": int(drafted), "accepted": int(accepted),
        "acceptance": round(accepted / drafted, 3) if drafted else None,
        "peak_rss_mb": {c: round(peaks[c]) for c in CONFIGS},
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after],
        "rows": [{"line": r["line"], "first": r["first"],
                  **{c: {"wall_s": round(r[c]["wall_s"], 2), "new_tokens": sum(s["new_tokens"] for s in r[c]["stats"]),
                         "tokens_per_s": round(_rate(r[c]["stats"]), 2),
                         "drafted": sum(s["drafted_tokens"] for s in r[c]["stats"]),
                         "accepted": sum(s["accepted_tokens"] for s in r[c]["stats"])} for c in CONFIGS},
                  "same_text": r["alone"]["text"] == r["draft"]["text"]} for r in rows],
    }


def _rates(rows: list[dict], config: str) -> list[float]:
    return [_rate(row[config]["stats"]) for row in rows]


def _rate(stats: list[dict]) -> float:
    """Decode tokens/s over a line's parts (llama.cpp's own per-answer rate, weighted by tokens)."""
    tokens = sum(s["new_tokens"] for s in stats)
    seconds = sum(s["new_tokens"] / s["tokens_per_s"] for s in stats if s["tokens_per_s"])
    return tokens / seconds if seconds else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draft-tokens", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print the whole result, every line's figures too")
    parser.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.draft_tokens, args.threads)
        return
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()

"""How many llama.cpp slots pay off on this CPU: aggregate decode speed of N concurrent requests
on N slots (N from `--slots`), threads from `--threads`, schema on, every prompt already in its
slot's cache so only decoding is measured. The 1-slot row is the baseline of the same run.

    python bench/llamacpp_slots.py --threads 1 --slots 1 2 4 8     # ~5 min on 2 shared cores
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logwarden.app.config import get_settings  # noqa: E402
from logwarden.engine.api import Request  # noqa: E402
from logwarden.engine.load import load_engine  # noqa: E402
from logwarden.prompts import system_prompt  # noqa: E402
from logwarden.schemas import assessment_json_schema  # noqa: E402


def users(n: int) -> list[str]:
    return [f"window: host=web-0{i} program=sshd lines={37 * (i + 1)}\ntemplates:\n  [{31 * (i + 1)}] Failed password "
            f"for <user> from <ip> port <num> ssh2  ips: 203.0.113.{i + 1}({31 * (i + 1)})" for i in range(n)]


def measure(slots: int, threads: int | None, new_tokens: int) -> tuple[float, float]:
    engine = load_engine(engine="llamacpp", adapter=None, threads=threads, max_batch=slots, slots=slots,
                         cache_dir=get_settings().model_cache)
    requests = [Request(system_prompt(), u) for u in users(slots)]
    schema = assessment_json_schema()
    with ThreadPoolExecutor(slots) as pool:  # one per slot, so each slot keeps its own prompt
        list(pool.map(lambda r: engine.generate([r], schema=schema, max_new_tokens=1), requests))
        began = time.perf_counter()
        done = list(pool.map(lambda r: engine.generate([r], schema=schema, max_new_tokens=new_tokens)[0], requests))
    wall = time.perf_counter() - began
    engine.close()
    return sum(g.stats.new_tokens for g in done) / wall, sum(g.stats.tokens_per_s for g in done) / len(done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--new-tokens", type=int, default=48)
    args = parser.parse_args()
    base = None
    for slots in args.slots:
        aggregate, each = measure(slots, args.threads, args.new_tokens)
        base = base or aggregate
        print(f"slots={slots} threads={args.threads}: {aggregate:.1f} tok/s all sequences, {each:.1f} each, "
              f"{aggregate / base:.2f}x the first row (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()

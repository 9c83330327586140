"""Triage time to first token on the llama.cpp engine, taken apart: what the 1.5 s goal is spent on.

`logwarden triage`'s own path (`app.triage.prepare` + `Triage.stream`, the embedded GGUF, its
default adapter, schema on) for four requests in one process, in this order:

  cold                 line A, nothing cached
  prefix cached        line B: the system prompt (and the digest's common start) reused
  same line again      line B once more: all but one token cached, so its TTFT is the floor
                       (grammar set-up + one decode step) that no prompt change removes
  prefix cached, A     line A again after B

For each: prompt tokens, cached and uncached ones, TTFT, and the prefill rate they imply
(uncached ÷ (TTFT − floor)). The baseline is the floor measured in the same run; the last lines
say how many uncached tokens 1.5 s allows at this run's rate.

    python bench/triage_ttft.py [--threads N]       # ~1-3 min on 2 shared cores

Timings move with the machine's load: print `uptime` with them; the token counts do not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LINE_A = ('203.0.113.9 - - [02/Mar/2026:10:00:00 +0000] "GET /item.php?id=1%20UNION%20SELECT%20user,password%20FROM'
          '%20users-- HTTP/1.1" 200 512 "-" "sqlmap/1.7"')
LINE_B = "Mar  2 10:01:07 bastion sshd[9211]: Failed password for invalid user admin from 198.51.100.77 port 51122 ssh2"
GOAL_S = 1.5


def measure(engine, case: str, line: str) -> dict:
    from logwarden.app.triage import prepare

    stream = prepare(line, count_tokens=engine.count_tokens).stream(engine)
    pieces = sum(1 for _ in stream)
    stats = stream.generation.stats
    return {"case": case, "prompt_tokens": stats.prompt_tokens, "cached": stats.cached_prefix_tokens,
            "uncached": stats.prompt_tokens - stats.cached_prefix_tokens, "ttft_s": stats.ttft_s,
            "new_tokens": stats.new_tokens, "pieces": pieces, "finished": stream.generation.finished,
            "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--adapter", default=None, help="as `--adapter` of the CLI (default: the model's default)")
    args = parser.parse_args()
    from logwarden.app.backends import resolve_adapter
    from logwarden.app.config import get_settings
    from logwarden.engine.load import load_engine

    began = time.perf_counter()
    engine = load_engine(engine="llamacpp", adapter=resolve_adapter("embedded", args.adapter), threads=args.threads, max_batch=4,
                         cache_dir=get_settings().model_cache)
    load_s = time.perf_counter() - began
    rows = [measure(engine, case, line) for case, line in
            (("cold", LINE_A), ("prefix cached", LINE_B), ("same line again", LINE_B), ("prefix cached, A", LINE_A))]
    floor = rows[2]["ttft_s"]
    for row in rows:
        row["prefill_tok_s"] = row["uncached"] / (row["ttft_s"] - floor) if row["ttft_s"] > floor and row["uncached"] > 1 else None
        row["x_floor"] = row["ttft_s"] / floor if floor else None
    rates = [r["prefill_tok_s"] for r in rows if r["prefill_tok_s"]]
    rate = sum(rates) / len(rates)
    print(json.dumps({"load_s": load_s, "describe": engine.describe(), "rows": rows}, default=str), file=sys.stderr)
    print(f"{'case':<18} {'prompt':>6} {'cached':>6} {'uncached':>8} {'TTFT s':>7} {'x floor':>7} {'prefill tok/s':>13}")
    for r in rows:
        tps = f"{r['prefill_tok_s']:.1f}" if r["prefill_tok_s"] else "-"
        print(f"{r['case']:<18} {r['prompt_tokens']:>6} {r['cached']:>6} {r['uncached']:>8} {r['ttft_s']:>7.2f} "
              f"{r['x_floor']:>7.1f} {tps:>13}")
    print(f"\nfloor (grammar + one step) {floor:.2f} s; mean prefill {rate:.1f} tokens/s; at that rate {GOAL_S} s "
          f"allows {max(0.0, (GOAL_S - floor) * rate):.0f} uncached tokens; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

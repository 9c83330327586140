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

`--processes`: what a user sees — every triage a new process (`echo LINE | logwarden triage -
--no-store --json`, this checkout's CLI), an sshd line and an access line, `--rounds` times in turn:

  restored   the command as shipped: the system prefix's KV restored from the model cache
             (one untimed call first writes the state file if it is missing)
  no state   a fresh process on the same engine without `warm_prefix` (how triage ran before):
             its request prefills the whole prompt
  q4_k_m     the same, on the shipped GGUF + runtime LoRA (`--quant q4_k_m`): before issue 33

TTFT is the engine's own (request → first answer piece); `process s` is the command's wall time.

    python bench/triage_ttft.py --processes [--rounds 3] [--threads N]   # ~3-6 min

Timings move with the machine's load: print `uptime` with them; the token counts do not.
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

LINE_A = ('203.0.113.9 - - [02/Mar/2026:10:00:00 +0000] "GET /item.php?id=1%20UNION%20SELECT%20user,password%20FROM'
          '%20users-- HTTP/1.1" 200 512 "-" "sqlmap/1.7"')
LINE_B = "Mar  2 10:01:07 bastion sshd[9211]: Failed password for invalid user admin from 198.51.100.77 port 51122 ssh2"
GOAL_S = 1.5
GOALS_S = {"sshd": 1.0, "access": 1.5}  # issue 33: a fresh process, prefix restored, idle machine
# The triage command's path without warm_prefix: load, prepare, stream; stats as JSON.
NO_STATE = """
import json, sys
from logwarden.app.config import get_settings
from logwarden.app.triage import prepare
from logwarden.engine.load import load_engine
quant, threads = sys.argv[1], (int(sys.argv[2]) if sys.argv[2] != "-" else None)
engine = load_engine(engine="llamacpp", quant=quant, threads=threads, cache_dir=get_settings().model_cache)
stream = prepare(sys.stdin.read(), count_tokens=engine.count_tokens).stream(engine)
text = "".join(stream)
print(json.dumps({"stats": stream.generation.stats.as_dict()}))
"""


def measure(engine, case: str, line: str) -> dict:
    from logwarden.app.triage import prepare

    stream = prepare(line, count_tokens=engine.count_tokens).stream(engine)
    pieces = sum(1 for _ in stream)
    stats = stream.generation.stats
    return {"case": case, "prompt_tokens": stats.prompt_tokens, "cached": stats.cached_prefix_tokens,
            "uncached": stats.prompt_tokens - stats.cached_prefix_tokens, "ttft_s": stats.ttft_s,
            "new_tokens": stats.new_tokens, "pieces": pieces, "finished": stream.generation.finished,
            "load": os.getloadavg()[0]}


def cli_command() -> list[str]:
    """This checkout's `logwarden` (its pyproject's entry point: an installed script may be another
    checkout's)."""
    import tomllib

    module, function = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["logwarden"].split(":")
    return [sys.executable, "-c", f"import sys; sys.argv[0] = 'logwarden'; from {module} import {function}; {function}()"]


def fresh_process(arm: str, line: str, threads: int | None) -> dict:
    """One triage in a new process; its stats and wall time."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if arm == "restored":
        command = [*cli_command(), "triage", "-", "--no-store", "--json"]
        command += ["--threads", str(threads)] if threads else []
    else:
        command = [sys.executable, "-c", NO_STATE, "q4_k_m" if arm == "q4_k_m" else "auto", str(threads or "-")]
    began = time.perf_counter()
    done = subprocess.run(command, input=line, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{arm} failed ({done.returncode}): {done.stderr[-2000:]}")
    stats = json.loads(done.stdout)["stats"]
    return {"arm": arm, "ttft_s": stats["ttft_s"], "prompt": stats["prompt_tokens"],
            "cached": stats["cached_prefix_tokens"], "process_s": wall, "load": os.getloadavg()[0]}


def main_processes(args) -> None:
    lines = {"sshd": LINE_B, "access": LINE_A}
    fresh_process("restored", LINE_B, args.threads)  # writes the prefix state if it is missing
    rows = []
    for round_ in range(args.rounds):
        for arm in ("restored", "no state", "q4_k_m"):
            for kind, line in lines.items():
                rows.append({"line": kind, "round": round_ + 1, **fresh_process(arm, line, args.threads)})
                r = rows[-1]
                print(f"round {r['round']} {arm:<9} {kind:<6} TTFT {r['ttft_s']:6.2f} s  prompt {r['prompt']:>4} "
                      f"cached {r['cached']:>4}  process {r['process_s']:6.1f} s  load {r['load']:.1f}", flush=True)
    print(json.dumps(rows), file=sys.stderr)
    print(f"\n{'line':<7} {'arm':<9} {'TTFT s (median)':>15} {'process s':>9} {'vs restored':>11}")
    for kind in lines:
        best = statistics.median(r["ttft_s"] for r in rows if r["line"] == kind and r["arm"] == "restored")
        for arm in ("restored", "no state", "q4_k_m"):
            mine = [r for r in rows if r["line"] == kind and r["arm"] == arm]
            ttft = statistics.median(r["ttft_s"] for r in mine)
            print(f"{kind:<7} {arm:<9} {ttft:>15.2f} {statistics.median(r['process_s'] for r in mine):>9.1f} "
                  f"{ttft / best:>10.1f}x")
        print(f"{kind:<7} goal: restored TTFT <= {GOALS_S[kind]} s on an idle machine")
    print(f"load average {min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--adapter", default=None, help="as `--adapter` of the CLI (default: the model's default)")
    parser.add_argument("--processes", action="store_true", help="every triage a fresh CLI process (see above)")
    parser.add_argument("--rounds", type=int, default=3, help="--processes: rounds of every arm and line")
    args = parser.parse_args()
    if args.processes:
        main_processes(args)
        return
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

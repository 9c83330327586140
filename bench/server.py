"""In-process engine vs the OpenAI-compatible server backend, on the same log file and the same
model (the embedded Qwen2.5-Coder 0.5B), measured in one run.

Arms (each a full `Pipeline.analyze` of the same files into a fresh in-memory store):
  local      LocalEngine (transformers, fp32 on CPU, batches of --max-batch) — the baseline
  server-c1  OpenAIEngine, concurrency 1, against llama.cpp's llama-server (xllamacpp) serving
             the same GGUF, --slots parallel slots
  server-c8  the same server, concurrency 8
Prints a table with ratios against `local` and writes JSON. Server and engine get the same
number of CPU threads (--threads) so neither wins by taking more cores.

    python bench/server.py [PATHS...] [--threads 2] [--llm-policy signals] [--json out.json]
    python bench/server.py --arms server-c1,server-c8       # without the local engine
With no PATHS it writes a small mixed log set with bench/gen_mixed_log.py (--lines).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

from logwarden.app.pipeline import Pipeline  # noqa: E402
from logwarden.app.run_options import RunOptions  # noqa: E402
from logwarden.app.store import open_store  # noqa: E402
from logwarden.engine.api import Engine  # noqa: E402

ARMS = ("local", "server-c1", "server-c8")


@dataclass
class ArmResult:
    arm: str
    wall_s: float
    windows_llm: int
    llm_failures: int
    new_tokens: int
    prompt_tokens: int
    mean_ttft_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.wall_s if self.wall_s else 0.0

    @property
    def windows_per_min(self) -> float:
        return 60 * self.windows_llm / self.wall_s if self.wall_s else 0.0


def run_pipeline(arm: str, engine: Engine, paths: list[Path], options: RunOptions) -> ArmResult:
    store = open_store("sqlite://")  # in memory: storage is not what is measured
    began = time.perf_counter()
    metrics = Pipeline(store, engine, options, command=f"bench {arm}").analyze(paths)
    wall = time.perf_counter() - began
    usage = metrics.usage
    calls = max(usage.calls, 1)
    return ArmResult(arm, wall, metrics.windows_llm, metrics.llm_failures, usage.new_tokens,
                     usage.prompt_tokens, usage.ttft_s_sum / calls)


def run_local(paths: list[Path], options: RunOptions, threads: int) -> ArmResult:
    from logwarden.app.config import get_settings
    from logwarden.engine.load import load_engine

    began = time.perf_counter()
    engine = load_engine(model="embedded", adapter=None, threads=threads, max_batch=options.max_batch,
                         cache_dir=get_settings().model_cache)  # the GGUF the server serves
    load_s = time.perf_counter() - began
    result = run_pipeline("local", engine, paths, options)
    result.extra = {"load_s": round(load_s, 2), "engine": engine.describe()}
    return result


def run_server_arms(arms: list[str], paths: list[Path], options: RunOptions, *, threads: int,
                    slots: int, log: Path) -> list[ArmResult]:
    from _server_helpers import LlamaServer, embedded_gguf

    from logwarden.engine.openai_backend import OpenAIEngine

    results = []
    for arm in arms:
        concurrency = int(arm.removeprefix("server-c"))
        # a fresh server per arm: its prompt cache would otherwise hand the second arm every
        # window's whole prompt for free (the same file gives the same prompts)
        with LlamaServer(embedded_gguf(), parallel=slots, threads=threads, log=log) as server, \
                OpenAIEngine([server.url], model="embedded", concurrency=concurrency, timeout_s=900) as engine:
            result = run_pipeline(arm, engine, paths, options)
            result.extra = {"server_start_s": round(server.startup_s, 2), "slots": slots,
                            "concurrency": concurrency, "engine": engine.describe()}
        results.append(result)
    return results


def default_paths(lines: int) -> list[Path]:
    from gen_mixed_log import generate

    out = Path(tempfile.mkdtemp(prefix="lw-bench-server-"))
    written = generate(out, lines=lines, seed=1, attack_every=max(lines // 8, 50))
    return [p for p in written if p.name != "labels.jsonl"]  # ground truth, not a log


def table(results: list[ArmResult]) -> str:
    base = next((r for r in results if r.arm == "local"), results[0])
    rows = ["| arm | wall s | windows (LLM) | failures | new tokens | tokens/s | windows/min | mean TTFT s | speed vs "
            f"{base.arm} |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ratio = base.wall_s / r.wall_s if r.wall_s else 0.0
        rows.append(f"| {r.arm} | {r.wall_s:.1f} | {r.windows_llm} | {r.llm_failures} | {r.new_tokens} | "
                    f"{r.tokens_per_s:.1f} | {r.windows_per_min:.1f} | {r.mean_ttft_s:.2f} | {ratio:.2f}× |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated subset of {', '.join(ARMS)}")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for the engine and for the server")
    parser.add_argument("--slots", type=int, default=8, help="llama-server parallel slots")
    parser.add_argument("--llm-policy", default="signals", choices=("signals", "suspicious", "all"))
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=320)
    parser.add_argument("--lines", type=int, default=2000, help="generated lines when no PATHS are given")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    unknown = set(arms) - set(ARMS)
    if unknown:
        parser.error(f"unknown arms: {', '.join(sorted(unknown))}")
    paths = args.paths or default_paths(args.lines)
    options = RunOptions(llm_policy=args.llm_policy, max_batch=args.max_batch, max_new_tokens=args.max_new_tokens)
    results: list[ArmResult] = []
    if "local" in arms:
        results.append(run_local(paths, options, args.threads))
    server_arms = [a for a in arms if a.startswith("server-")]
    if server_arms:
        log = Path(tempfile.gettempdir()) / "lw-bench-llama-server.log"
        results += run_server_arms(server_arms, paths, options, threads=args.threads, slots=args.slots, log=log)
    print(table(results))
    if args.json:
        payload = [{**r.__dict__, "tokens_per_s": r.tokens_per_s, "windows_per_min": r.windows_per_min}
                   for r in results]
        args.json.write_text(json.dumps({"paths": [str(p) for p in paths], "threads": args.threads,
                                         "llm_policy": args.llm_policy, "results": payload}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

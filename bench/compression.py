#!/usr/bin/env python3
"""Prompt compression and model calls per 1,000 lines: logwarden's windows + digests against naive
fixed 10-line chunking, measured in the same run with the embedded model's real tokenizer.

No generation happens: the engine stand-in counts the exact prompt tokens of every request the
pipeline would send (system prefix + fenced digest) and answers a fixed benign assessment, so the
numbers are the pipeline's real LLM policy, windows and prompts. Naive chunking sends the system
prefix + 10 raw lines per call.

Usage: python bench/compression.py [--sample sample_logs] [--mixed-lines 1000000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

BENIGN = '{"findings":[],"recommendation":"none"}'
CHUNK = 10


class PromptCounter:
    """Engine stand-in: counts prompt tokens with the real tokenizer; no model is run."""

    model_name = "prompt-counter"
    adapter_name = None

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.calls = 0
        self.prompt_tokens = 0

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, requests, **_):
        from logwarden.engine.api import Generation, GenStats

        out = []
        for request in requests:
            n = self.count_tokens(request.system) + self.count_tokens(request.user)
            self.calls += 1
            self.prompt_tokens += n
            out.append(Generation(text=BENIGN, stats=GenStats(prompt_tokens=n), finished=True))
        return out

    def describe(self) -> dict:
        return {"model": self.model_name}


def log_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix not in (".md",) and p.name != "labels.jsonl"
                  and not p.name.startswith("."))


def raw_lines(files: list[Path]) -> list[str]:
    from logwarden.app.events import LogLine
    from logwarden.app.ingest import read_lines

    return [item.text for path in files for item in read_lines(path) if isinstance(item, LogLine)]


def naive(lines: list[str], counter: PromptCounter, system_tokens: int) -> dict:
    calls = (len(lines) + CHUNK - 1) // CHUNK
    raw_tokens = sum(counter.count_tokens("\n".join(lines[i:i + CHUNK])) for i in range(0, len(lines), CHUNK))
    return {"calls": calls, "prompt_tokens": raw_tokens + calls * system_tokens, "raw_tokens": raw_tokens}


def logwarden_run(files: list[Path], counter: PromptCounter) -> dict:
    from logwarden.app.pipeline import Pipeline
    from logwarden.app.run_options import RunOptions
    from logwarden.app.store import open_store

    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        metrics = Pipeline(store, counter, RunOptions(llm_policy="suspicious")).analyze(files)
    return {"calls": counter.calls, "prompt_tokens": counter.prompt_tokens, "windows": metrics.windows,
            "skipped_by_policy": metrics.windows_skipped_by_policy, "lines": metrics.lines}


def measure(name: str, files: list[Path], tokenizer, system_tokens: int) -> dict:
    lines = raw_lines(files)
    base = naive(lines, PromptCounter(tokenizer), system_tokens)
    ours = logwarden_run(files, PromptCounter(tokenizer))
    per_k = lambda calls: 1000 * calls / max(len(lines), 1)  # noqa: E731
    row = {
        "dataset": name, "lines": len(lines), "raw_tokens": base["raw_tokens"],
        "naive_calls_per_1000_lines": per_k(base["calls"]),
        "naive_prompt_tokens": base["prompt_tokens"],
        "naive_compression": base["raw_tokens"] / base["prompt_tokens"],
        "logwarden_windows": ours["windows"], "logwarden_skipped_by_policy": ours["skipped_by_policy"],
        "logwarden_calls_per_1000_lines": per_k(ours["calls"]),
        "logwarden_prompt_tokens": ours["prompt_tokens"],
        "logwarden_compression": base["raw_tokens"] / max(ours["prompt_tokens"], 1),
    }
    row["calls_ratio_naive_over_logwarden"] = base["calls"] / max(ours["calls"], 1)
    row["prompt_tokens_ratio_naive_over_logwarden"] = base["prompt_tokens"] / max(ours["prompt_tokens"], 1)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path, default=ROOT / "sample_logs")
    parser.add_argument("--mixed-lines", type=int, default=1_000_000, help="0 = skip the mixed log")
    parser.add_argument("--mixed-dir", type=Path, default=Path(tempfile.gettempdir()) / "lw-bench")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from bench_common import embedded_tokenizer_folder
    from transformers import AutoTokenizer

    from logwarden.prompts import system_prompt

    tokenizer = AutoTokenizer.from_pretrained(embedded_tokenizer_folder())
    system_tokens = len(tokenizer(system_prompt(), add_special_tokens=False)["input_ids"])
    rows = [measure("sample_logs", log_files(args.sample), tokenizer, system_tokens)]
    if args.mixed_lines:
        from ingest import ensure_logs

        rows.append(measure(f"mixed {args.mixed_lines:,} lines", ensure_logs(args.mixed_dir / "logs", args.mixed_lines),
                            tokenizer, system_tokens))
    print(f"system prefix: {system_tokens} tokens (naive chunking re-sends it every call; logwarden caches its KV)")
    print(f"{'dataset':<24}{'lines':>10}{'naive calls/1k':>16}{'lw calls/1k':>13}{'naive compr.':>14}{'lw compr.':>11}"
          f"{'tokens naive/lw':>17}")
    for r in rows:
        print(f"{r['dataset']:<24}{r['lines']:>10,}{r['naive_calls_per_1000_lines']:>16.1f}"
              f"{r['logwarden_calls_per_1000_lines']:>13.2f}{r['naive_compression']:>14.2f}"
              f"{r['logwarden_compression']:>11.1f}{r['prompt_tokens_ratio_naive_over_logwarden']:>17.1f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

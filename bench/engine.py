"""CPU engine benchmark: the llama.cpp engine vs the transformers engine vs llama-server running
free on the same GGUF (the peer), one run, the same real prompts, each side in its own process.

Prompts: the first pipeline prompts of sample_logs (the eval's labelled files, the "suspicious"
policy), recorded by running the real pipeline with a recording engine — so they are today's
digests and system prompt, whatever the prompt code says. Triage: one log line through
`app.triage.prepare` + `Triage.stream`, cold and then with the system prefix cached.

  llamacpp      embedded GGUF + the shipped adapter (GGUF LoRA), schema on, `--slots` slots:
                the batch of all prompts, one streamed answer, two triages; peak RSS of its process
  llamacpp-base the same GGUF without the adapter: one streamed answer (what the LoRA costs)
  transformers  fp32 + the peft adapter, schema on: the first `--transformers-requests` prompts
                as one batch, one streamed answer, triage
  peer          llama-server (tests/_server_helpers.py, the xllamacpp wheel's server in a child
                process) on the same GGUF, no adapter, no grammar, `ignore_eos`: free-running
                decode speed of one request at a time, measured before and after the others

    python bench/engine.py --threads 1                       # ~15-25 min on 2 shared cores
    python bench/engine.py --threads 1 --requests 4 --transformers-requests 2   # a quick look

Ratios compare numbers measured in this run only; print `uptime` load with them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "tests"))

TRIAGE_LINES = [
    '203.0.113.9 - - [02/Mar/2026:10:00:00 +0000] "GET /item.php?id=1%20UNION%20SELECT%20user,password%20FROM'
    '%20users-- HTTP/1.1" 200 512 "-" "sqlmap/1.7"',
    "Mar  2 10:01:07 bastion sshd[9211]: Failed password for invalid user admin from 198.51.100.77 port 51122 ssh2",
]


# ---- prompts -------------------------------------------------------------------------------

def record_prompts(n: int, count_tokens) -> list[dict]:
    """The first `n` prompts the pipeline sends for sample_logs' labelled files."""
    from logwarden.app.evaluate import labelled_files, load_labels, run_eval
    from logwarden.train.replay import RecordingEngine

    labels = ROOT / "sample_logs" / "labels.jsonl"
    units = load_labels(labels)
    engine = RecordingEngine(count_tokens)
    run_eval(units, labels.parent, labelled_files(units, labels.parent), engine=engine, llm_policy="suspicious")
    rows = [{"system": r.system, "user": r.user} for r in engine.requests.values()]
    step = max(1, len(rows) // n)  # spread over the files, not only the first one
    return rows[::step][:n]


def _requests(rows: list[dict]):
    from logwarden.engine.api import Request

    return [Request(r["system"], r["user"]) for r in rows]


# ---- phases (each in its own process) ------------------------------------------------------

def phase_llamacpp(args: argparse.Namespace, rows: list[dict]) -> dict:
    from logwarden.app.backends import resolve_adapter
    from logwarden.app.config import get_settings
    from logwarden.engine.load import load_engine

    began = time.perf_counter()
    engine = load_engine(engine="llamacpp", adapter=resolve_adapter("embedded", None), threads=args.threads,
                         max_batch=args.slots,
                         cache_dir=get_settings().model_cache)
    out: dict[str, Any] = {"load_s": time.perf_counter() - began, "describe": engine.describe()}
    out["triage"] = triage_ttft(engine)
    out["batch"] = batch(engine, _requests(rows), args.max_new_tokens)
    out["stream"] = stream_one(engine, _requests(rows)[0], args.max_new_tokens)
    out["peak_rss_mb"] = _rss_mb()
    out["torch_imported"] = "torch" in sys.modules
    return out


def phase_llamacpp_base(args: argparse.Namespace, rows: list[dict]) -> dict:
    from logwarden.app.config import get_settings
    from logwarden.engine.load import load_engine

    engine = load_engine(engine="llamacpp", adapter=None, threads=args.threads, max_batch=1,
                         cache_dir=get_settings().model_cache)
    return {"stream": stream_one(engine, _requests(rows)[0], args.max_new_tokens, warm=True)}


def phase_transformers(args: argparse.Namespace, rows: list[dict]) -> dict:
    from logwarden.app.backends import resolve_adapter
    from logwarden.app.config import get_settings
    from logwarden.engine.load import load_engine

    began = time.perf_counter()
    engine = load_engine(engine="transformers", adapter=resolve_adapter("embedded", None), threads=args.threads,
                         max_batch=8,
                         cache_dir=get_settings().model_cache)
    out: dict[str, Any] = {"load_s": time.perf_counter() - began, "describe": engine.describe()}
    out["triage"] = triage_ttft(engine)
    out["batch"] = batch(engine, _requests(rows)[: args.transformers_requests], args.max_new_tokens)
    out["stream"] = stream_one(engine, _requests(rows)[0], args.max_new_tokens)
    out["peak_rss_mb"] = _rss_mb()
    return out


def phase_peer(args: argparse.Namespace, rows: list[dict]) -> dict:
    """llama-server's own decode speed: one request at a time, no grammar, no adapter."""
    import httpx
    from _server_helpers import LlamaServer

    from logwarden.app.config import get_settings
    from logwarden.engine.load import resolve_gguf

    source = resolve_gguf("embedded", cache_dir=get_settings().model_cache)
    speeds = []
    with LlamaServer(source.path / source.gguf_file, parallel=1, threads=args.threads or 2) as server:
        for row in rows[:2]:
            body = {"messages": [{"role": "system", "content": row["system"]}, {"role": "user", "content": row["user"]}],
                    "max_tokens": min(args.max_new_tokens, 160), "temperature": 0, "ignore_eos": True}
            reply = httpx.post(f"{server.url}/chat/completions", json=body, timeout=600).json()
            speeds.append(reply["timings"]["predicted_per_second"])
    return {"decode_tps": statistics.mean(speeds), "runs": speeds}


PHASES = {"llamacpp": phase_llamacpp, "llamacpp-base": phase_llamacpp_base, "transformers": phase_transformers,
          "peer": phase_peer}


# ---- measurements ------------------------------------------------------------------------------

def batch(engine: Any, requests: list, max_new_tokens: int) -> dict:
    from logwarden.schemas import assessment_json_schema

    schema = assessment_json_schema()
    began = time.perf_counter()
    generations = engine.generate(requests, schema=schema, max_new_tokens=max_new_tokens)
    wall = time.perf_counter() - began
    new = sum(g.stats.new_tokens for g in generations)
    return {"requests": len(requests), "wall_s": wall, "aggregate_tps": new / wall, "new_tokens": new,
            "prompt_tokens": sum(g.stats.prompt_tokens for g in generations),
            "cached_prefix_tokens": sum(g.stats.cached_prefix_tokens for g in generations),
            "ttft_s": statistics.mean(g.stats.ttft_s for g in generations),
            "finished": sum(g.finished for g in generations), "valid": sum(_valid(g.text) for g in generations),
            "verdicts": [_verdict(g.text) for g in generations]}


def stream_one(engine: Any, request: Any, max_new_tokens: int, warm: bool = False) -> dict:
    from logwarden.schemas import assessment_json_schema

    if warm:  # the prompt into the cache: what is left to measure is decoding
        engine.generate([request], schema=assessment_json_schema(), max_new_tokens=1)
    stream = engine.stream(request, schema=assessment_json_schema(), max_new_tokens=max_new_tokens)
    pieces = sum(1 for _ in stream)
    stats = stream.generation.stats
    return {"decode_tps": stats.tokens_per_s, "ttft_s": stats.ttft_s, "new_tokens": stats.new_tokens,
            "pieces": pieces, "cached_prefix_tokens": stats.cached_prefix_tokens, "prompt_tokens": stats.prompt_tokens}


def triage_ttft(engine: Any) -> dict:
    """`logwarden triage`'s path: the first line cold, the second with the system prefix cached."""
    from logwarden.app.triage import prepare

    out = {}
    for label, line in zip(("cold", "cached_prefix"), TRIAGE_LINES):
        stream = prepare(line, count_tokens=engine.count_tokens).stream(engine)
        for _ in stream:
            pass
        stats = stream.generation.stats
        out[label] = {"ttft_s": stats.ttft_s, "prompt_tokens": stats.prompt_tokens,
                      "cached_prefix_tokens": stats.cached_prefix_tokens, "new_tokens": stats.new_tokens,
                      "total_s": stats.total_s}
    return out


def _valid(text: str) -> bool:
    from logwarden.schemas import LLMAssessment

    try:
        LLMAssessment.model_validate_json(text)
        return True
    except ValueError:
        return False


def _verdict(text: str) -> list[str] | None:
    try:
        answer = json.loads(text)
        return [answer.get("category"), answer.get("risk_level")]
    except ValueError:
        return None


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---- the run ---------------------------------------------------------------------------------

def run_phase(name: str, args: argparse.Namespace, prompts_file: Path) -> dict:
    """Each phase in a fresh process: its own peak RSS, no engine's memory or threads left behind."""
    command = [sys.executable, __file__, "--phase", name, "--prompts", str(prompts_file),
               "--max-new-tokens", str(args.max_new_tokens), "--slots", str(args.slots),
               "--transformers-requests", str(args.transformers_requests)]
    if args.threads:
        command += ["--threads", str(args.threads)]
    began = time.perf_counter()
    print(f"[{time.strftime('%H:%M:%S')}] {name} … (load {os.getloadavg()[0]:.1f})", flush=True)
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["phase_s"] = time.perf_counter() - began
    return result


def report(r: dict, load: list[float]) -> dict:
    lc, tf, base = r["llamacpp"], r["transformers"], r["llamacpp-base"]
    peer = statistics.mean([r["peer"]["decode_tps"], r["peer-after"]["decode_tps"]])
    rows = [
        ("decode tok/s, one request (stream)", lc["stream"]["decode_tps"], tf["stream"]["decode_tps"], peer),
        ("decode tok/s, one request, no adapter", base["stream"]["decode_tps"], None, peer),
        ("decode tok/s, whole batch (aggregate)", lc["batch"]["aggregate_tps"], tf["batch"]["aggregate_tps"], None),
        ("triage TTFT, cold (s)", lc["triage"]["cold"]["ttft_s"], tf["triage"]["cold"]["ttft_s"], None),
        ("triage TTFT, prefix cached (s)", lc["triage"]["cached_prefix"]["ttft_s"],
         tf["triage"]["cached_prefix"]["ttft_s"], None),
        ("peak RSS (MiB)", lc["peak_rss_mb"], tf["peak_rss_mb"], None),
        ("load (s)", lc["load_s"], tf["load_s"], None),
    ]
    print(f"\nload average during the run: {min(load):.1f}–{max(load):.1f} (1-min, sampled per phase)")
    print(f"{'metric':40} {'llama.cpp':>10} {'transf.':>10} {'peer':>8} {'vs transf.':>11} {'vs peer':>8}")
    for name, ours, theirs, peer_value in rows:
        vs_t = _ratio(name, ours, theirs)
        vs_p = _ratio(name, ours, peer_value)
        print(f"{name:40} {ours:10.2f} {_f(theirs):>10} {_f(peer_value):>8} {vs_t:>11} {vs_p:>8}")
    agree = sum(a == b for a, b in zip(lc["batch"]["verdicts"], tf["batch"]["verdicts"]))
    print(f"schema-valid: llama.cpp {lc['batch']['valid']}/{lc['batch']['requests']}, transformers "
          f"{tf['batch']['valid']}/{tf['batch']['requests']}; same verdict (category, risk) on the shared "
          f"prompts: {agree}/{tf['batch']['requests']}; cached prefix tokens in the batch: "
          f"{lc['batch']['cached_prefix_tokens']} of {lc['batch']['prompt_tokens']} prompt tokens")
    return {"rows": [{"metric": n, "llamacpp": a, "transformers": b, "peer": c} for n, a, b, c in rows],
            "verdicts_agree": agree, "load_average": load}


def _ratio(name: str, ours: float | None, theirs: float | None) -> str:
    if not ours or not theirs:
        return ""
    lower_is_better = "(s)" in name or "MiB" in name
    return f"{(theirs / ours if lower_is_better else ours / theirs):.2f}x"


def _f(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--transformers-requests", type=int, default=4,
                        help="transformers decodes ~5 tok/s here: its batch is the first N prompts")
    parser.add_argument("--max-new-tokens", type=int, default=320)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--prompts", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "logwarden-bench-engine.json")
    args = parser.parse_args()
    if args.phase:  # a child: one phase, one JSON line on stdout
        rows = [json.loads(line) for line in args.prompts.read_text().splitlines()]
        print(json.dumps(PHASES[args.phase](args, rows), default=str))
        return
    from logwarden.app.config import get_settings
    from logwarden.engine.embedded import PACKS, ensure_converted
    from logwarden.engine.gguf_meta import read_metadata
    from logwarden.engine.gguf_tokenizer import token_counter
    from logwarden.engine.load import resolve_gguf

    source = resolve_gguf("embedded", cache_dir=get_settings().model_cache)
    ensure_converted(PACKS["embedded"], get_settings().model_cache)  # the transformers side's folder, once
    rows = record_prompts(args.requests, token_counter(read_metadata(source.path / source.gguf_file)).count)
    prompts_file = args.json.with_suffix(".prompts.jsonl")
    prompts_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(rows)} prompts recorded; {_uptime()}", flush=True)
    results, load = {}, []
    for name in ("peer", "llamacpp", "llamacpp-base", "transformers", "peer-after"):
        load.append(os.getloadavg()[0])
        results[name] = run_phase(name.removesuffix("-after"), args, prompts_file)
    load.append(os.getloadavg()[0])
    result = {"results": results, "summary": report(results, load), "args": vars(args),
              "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "uptime": _uptime()}
    args.json.write_text(json.dumps(result, indent=2, default=str))
    print(f"wrote {args.json}")


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()

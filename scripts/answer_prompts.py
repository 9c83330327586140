"""Answer recorded prompts with the embedded model here (CPU), in the same answers format as
scripts/device_job.py, e.g. to top up a GPU run's answers for prompts that changed since. Each
prompt row may carry its own `schema` (as `RecordingEngine` writes them); it is honoured.

    PYTHONPATH=. python scripts/answer_prompts.py --prompts new.jsonl --out answers_base.jsonl --adapter none
    PYTHONPATH=. python scripts/answer_prompts.py --prompts new.jsonl --out answers_adapter.jsonl

`--quant nf4` quantizes the embedded weights as the GPU run did (bitsandbytes' CPU backend: same
NF4 format, different kernels, so greedy answers can differ in places); default fp32.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from device_job import generate  # noqa: E402

from logwarden.app.backends import resolve_adapter  # noqa: E402
from logwarden.app.config import get_settings  # noqa: E402
from logwarden.engine.embedded import PACKS, ensure_converted  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=Path, required=True, help="JSONL of {system, user}")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--adapter", default=None, help="adapter folder, or none (default: the shipped one)")
    ap.add_argument("--max-batch", type=int, default=4)
    ap.add_argument("--quant", default="fp32")
    ap.add_argument("--max-new-tokens", type=int, default=320)
    args = ap.parse_args()
    args.decoder = "eager"
    prompts = [json.loads(line) for line in args.prompts.read_text().splitlines() if line.strip()]
    folder = ensure_converted(PACKS["embedded"], get_settings().model_cache)
    adapter = resolve_adapter("embedded", args.adapter)
    report = generate(folder, Path(adapter) if adapter else None, {args.prompts.stem: prompts}, args.out, args)
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main()

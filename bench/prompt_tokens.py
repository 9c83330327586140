#!/usr/bin/env python3
"""Prompt and answer tokens with the embedded model's real tokenizer: what the pipeline sends for
sample_logs (llm-policy suspicious), one triage line's uncached part, and the training targets'
answer length (what an adapter learns to write). No generation.

Runs against any logwarden tree, so a before/after comparison is one command per tree:

    PYTHONPATH=. python bench/prompt_tokens.py                       # this tree
    git archive 215dc8d | tar -x -C /tmp/before && PYTHONPATH=/tmp/before python bench/prompt_tokens.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ('203.0.113.9 - - [02/Mar/2026:10:00:00 +0000] "GET /item.php?id=1%20UNION%20SELECT%20user,password%20FROM'
          '%20users-- HTTP/1.1" 200 512 "-" "sqlmap/1.7"')


def main() -> None:
    import logwarden

    tree = Path(logwarden.__file__).resolve().parent.parent
    sys.path.insert(0, str(tree / "tests"))
    from _engine_helpers import embedded_folder
    from transformers import AutoTokenizer

    from logwarden.app.evaluate import labelled_files, load_labels, run_eval
    from logwarden.app.triage import prepare
    from logwarden.prompts import system_prompt
    from logwarden.train.dataset import examples
    from logwarden.train.replay import RecordingEngine

    tok = AutoTokenizer.from_pretrained(embedded_folder())
    count = lambda text: len(tok(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    labels = tree / "sample_logs" / "labels.jsonl"
    units = load_labels(labels)
    engine = RecordingEngine(count)
    run = run_eval(units, labels.parent, labelled_files(units, labels.parent), engine=engine, llm_policy="suspicious")
    users = [count(r.user) for r in engine.requests.values()]
    triage = prepare(TRIAGE, count_tokens=count)
    answers = [(count(e.assistant), json.loads(e.assistant)) for e in examples(200, seed=7, split="val", count_tokens=count)]
    quiet = [n for n, a in answers if not a.get("findings") and a.get("category", "benign") == "benign"]
    print(json.dumps({
        "tree": str(tree), "system_prompt_tokens": count(system_prompt()),
        "sample_logs": {"prompts": len(users), "user_tokens": sum(users), "mean": round(statistics.mean(users), 1),
                        "max": max(users), "windows_sent": run.metrics["windows_llm"],
                        "rare_line_coverage": run.metrics.get("rare_line_coverage")},
        "triage_one_line_user_tokens": count(triage.prompt),
        "target_answer_tokens": {"mean": round(statistics.mean(n for n, _ in answers), 1),
                                 "nothing_abnormal_mean": round(statistics.mean(quiet), 1) if quiet else None,
                                 "examples": len(answers)},
    }, indent=1))


if __name__ == "__main__":
    main()

"""Score the answers generated on the GPU box (scripts/device_job.py) here, through the real pipeline.

For sample_logs: runs `logwarden.app.evaluate.run_eval` three times in one process — rules only,
rules + base model, rules + base + adapter — the model runs replaying the answers generated for
exactly these prompts (`ReplayEngine`). For the held-out generated set: rebuilds each validation
window from its seed key, merges the replayed answer with the window's signals through
`postprocess.build_records`, and scores the window as one labelled unit (attack: detected at
min(truth, medium), right category; benign: false positive above low). Prints JSON.

    python scripts/device_score.py --results DIR [--labels sample_logs/labels.jsonl] [--val .mdl/ds/val.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from logwarden.app.evaluate import LabelledUnit, ScoredRecord, labelled_files, load_labels, run_eval, score
from logwarden.app.postprocess import Provenance, build_records, result_of
from logwarden.engine.api import Generation, GenStats
from logwarden.schemas import risk_rank
from logwarden.train.dataset import example_at
from logwarden.train.replay import ReplayEngine


def counter():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _engine_helpers import embedded_folder
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(embedded_folder())
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


def sample_logs(labels: Path, results: Path, count) -> dict:
    units, folder = load_labels(labels), labels.resolve().parent
    files = labelled_files(units, folder)
    runs = {"rules-only": run_eval(units, folder, files)}
    for name in ("base", "adapter"):
        engine = ReplayEngine.from_file(results / f"answers_{name}.jsonl", count, model_name="embedded",
                                        adapter_name="security-v1" if name == "adapter" else None)
        runs[name] = run_eval(units, folder, files, engine=engine, name=name)
    return {name: run.report.as_dict() for name, run in runs.items()}


def generated(val_path: Path, results: Path, count, limit: int) -> dict:
    rows = [json.loads(line) for line in val_path.read_text().splitlines() if line.strip()][:limit]
    answers = {name: {json.loads(l)["user"]: json.loads(l) for l in (results / f"answers_{name}.jsonl").read_text().splitlines()}
               for name in ("base", "adapter")}
    out, rendered_rows = {}, [(row, example_at(row["meta"]["key"], count)) for row in rows]
    # rules may have changed since the answers were generated: the answer stays keyed by its prompt
    out["windows_changed_since_generation"] = sum(ex.user != row["user"] for row, (ex, _) in rendered_rows)
    for name in ("rules-only", "base", "adapter"):
        units, records = [], []
        for row, (_, rendered) in rendered_rows:
            unit, recs = _score_window(row, rendered, answers.get(name, {}).get(row["user"]))
            units.append(unit)
            records += recs
        out[name] = score(units, records).as_dict()["overall"]
    return out


def _score_window(row: dict, rendered, answer: dict | None):
    key, truth, risk = row["meta"]["key"], row["meta"]["category"], row["meta"]["risk"]
    risk_min = risk if risk_rank(risk) <= risk_rank("medium") else "medium"
    unit = LabelledUnit(file=key, line_start=rendered.window.line_start, line_end=rendered.window.line_end,
                        category=truth, risk_min="info" if truth == "benign" else risk_min,
                        risk_max="low" if truth == "benign" else None)
    llm = None
    if answer is not None:
        llm = result_of(Generation(answer["text"], GenStats(), finished=answer["finished"], error=answer.get("error")))
    records = build_records(rendered.window, rendered.signals, llm, Provenance("embedded", None, "analyze_v1"))
    return unit, [ScoredRecord(key, tuple(r.evidence.line_numbers), r.category, r.risk_level) for r in records]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--labels", type=Path, default=Path("sample_logs/labels.jsonl"))
    ap.add_argument("--val", type=Path, default=Path(".mdl/ds/val.jsonl"))
    ap.add_argument("--val-limit", type=int, default=300)
    args = ap.parse_args()
    count = counter()
    report = {"sample_logs": sample_logs(args.labels, args.results, count),
              "generated_val": generated(args.val, args.results, count, args.val_limit)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

"""Score the answers generated on the GPU box (scripts/device_job.py) here, through the real pipeline.

Three sets, each scored for rules only, rules + base model and rules + base + adapter, the model
runs replaying the answers generated for exactly these prompts (`ReplayEngine`):
- sample_logs: `run_eval` as `logwarden eval` runs it (llm-policy suspicious, default prompts per window);
- the realdata held-out side (data/realdata_split.json): `run_eval` with every window sent and as
  many prompts as its rare lines need (how the prompts were recorded), per source too;
- the generated validation split: each window rebuilt from its seed key, its prompts' replayed
  answers merged with its signals by `postprocess.build_records`, the window scored as one unit
  (attack: detected at min(truth, medium), right category; benign: false positive above low).
Besides recall, category, top-risk category and FP rate, every model run reports its rare-line
coverage and ungrounded-entity rate. Prints JSON, or with `--markdown` the tables for EVAL.md.

    python scripts/device_score.py --results DIR [--labels sample_logs/labels.jsonl] [--val .mdl/ds/val.jsonl] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from logwarden.app.evaluate import (
    LabelledUnit,
    ScoredRecord,
    filter_units,
    labelled_files,
    load_labels,
    run_eval,
    score,
)
from logwarden.app.postprocess import Provenance, assess_window, result_of
from logwarden.engine.api import Generation, GenStats
from logwarden.prompts import PROMPT_VERSION, user_prompt
from logwarden.schemas import risk_rank
from logwarden.train.dataset import examples_at
from logwarden.train.realdata import load_split, realdata_dir, side_of
from logwarden.train.replay import ReplayEngine

CONFIGS = ("base", "adapter")
METRIC_KEYS = ("llm_calls", "windows_split", "rare_lines_llm", "rare_lines_shown", "rare_line_coverage",
               "entities_named", "entities_ungrounded", "ungrounded_rate", "new_tokens")


def counter():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _engine_helpers import embedded_folder
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(embedded_folder())
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


def answers_of(results: Path, name: str) -> dict[str, dict]:
    path = results / f"answers_{name}.jsonl"
    return {row["user"]: row for row in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if row}


def _runs(units, folder: Path, files, results: Path, count, **eval_kw) -> dict:
    runs = {"rules-only": run_eval(units, folder, files)}
    for name in CONFIGS:
        engine = ReplayEngine(answers_of(results, name), count, model_name="embedded",
                              adapter_name="adapter" if name == "adapter" else None)
        runs[name] = run_eval(units, folder, files, engine=engine, name=name, **eval_kw)
    return {name: run.report.as_dict() | {"metrics": {k: run.metrics.get(k) for k in METRIC_KEYS}}
            for name, run in runs.items()}


def sample_logs(labels: Path, results: Path, count) -> dict:
    units, folder = load_labels(labels), labels.resolve().parent
    return _runs(units, folder, labelled_files(units, folder), results, count, llm_policy="suspicious")


def heldout(results: Path, count, split: Path | None = None) -> dict:
    folder = realdata_dir()
    units = filter_units(load_labels(folder / "labels.jsonl"), side_of(load_split(split) if split else load_split()),
                         "heldout")
    return _runs(units, folder, labelled_files(units, folder), results, count, llm_policy="all",
                 max_prompts_per_window=None)


def generated(val_path: Path, results: Path, count, limit: int) -> dict:
    """Each validation window (its seed key) rebuilt, its prompts' answers replayed, scored as one unit."""
    rows = [json.loads(line) for line in val_path.read_text().splitlines() if line.strip()][:limit]
    windows = list(dict.fromkeys(row["meta"]["window"] for row in rows))
    rebuilt = {key: examples_at(key, count) for key in windows}
    recorded = {row["user"] for row in rows}
    out = {"windows": len(windows),
           "prompts_changed_since_generation": sum(e.user not in recorded for ex, _ in rebuilt.values() for e in ex)}
    answers = {name: answers_of(results, name) for name in CONFIGS}
    for name in ("rules-only", *CONFIGS):
        units, records, named, missing = [], [], 0, 0
        for key, (_, rendered) in rebuilt.items():
            unit, recs, outcome = _score_window(key, rendered, answers.get(name))
            units.append(unit)
            records += recs
            named, missing = named + outcome.entities, missing + outcome.ungrounded
        out[name] = score(units, records).as_dict()["overall"] | {
            "entities_named": named, "entities_ungrounded": missing, "ungrounded_rate": missing / named if named else None}
    return out


def _score_window(key: str, rendered, answers: dict | None):
    truth, risk = rendered.scenario.category, rendered.scenario.risk
    risk_min = risk if risk_rank(risk) <= risk_rank("medium") else "medium"
    unit = LabelledUnit(file=key, line_start=rendered.window.line_start, line_end=rendered.window.line_end,
                        category=truth, risk_min="info" if truth == "benign" else risk_min,
                        risk_max="low" if truth == "benign" else None)
    results = None
    if answers is not None:
        results = []
        for part in rendered.parts:
            row = answers.get(user_prompt(part.text))
            generation = Generation(row["text"], GenStats(), finished=row["finished"], error=row.get("error")) if row \
                else Generation("", GenStats(), finished=False, error="no answer was generated for this prompt")
            results.append(result_of(generation, digest=part.text, lines_of=part.lines_of))
    outcome = assess_window(rendered.window, rendered.signals, results, Provenance("embedded", None, PROMPT_VERSION))
    return unit, [ScoredRecord(key, tuple(r.evidence.line_numbers), r.category, r.risk_level) for r in outcome.records], outcome


# ---- the tables -----------------------------------------------------------------------------------

def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _cells(s: dict) -> list[str]:
    return [f"{_pct(s['recall'])} ({s['detected']}/{s['attacks']})",
            f"{_pct(s['category_accuracy'])} ({s['category_correct']}/{s['attacks']})",
            f"{_pct(s['category_top_accuracy'])} ({s['category_top_correct']}/{s['attacks']})",
            f"{_pct(s['fp_rate'])} ({s['false_positives']}/{s['benign']})"]


def markdown(report: dict) -> str:
    head = "| run | recall | category | top-risk category | FP rate | ungrounded | rare lines seen |\n|---|---|---|---|---|---|---|"
    out = []
    for title, runs in (("sample_logs", report["sample_logs"]), ("realdata held-out", report["heldout"])):
        out += [f"### {title}", "", head]
        for name, run in runs.items():
            m = run.get("metrics", {})
            extra = [f"{_pct(m.get('ungrounded_rate'))} ({m.get('entities_ungrounded')}/{m.get('entities_named')})",
                     f"{_pct(m.get('rare_line_coverage'))} ({m.get('rare_lines_shown')}/{m.get('rare_lines_llm')})"] \
                if name != "rules-only" else ["-", "-"]
            out.append("| " + " | ".join([name, *_cells(run["overall"]), *extra]) + " |")
        out.append("")
    out += ["### realdata held-out, per source (recall / top-risk category / FP rate)", "",
            "| source | " + " | ".join(report["heldout"]) + " |", "|---|" + "---|" * len(report["heldout"])]
    for source in report["heldout"]["rules-only"]["per_source"]:
        cells = []
        for run in report["heldout"].values():
            s = run["per_source"][source]
            cells.append(f"{_pct(s['recall'])} / {_pct(s['category_top_accuracy'])} / {_pct(s['fp_rate'])}")
        out.append(f"| {source} | " + " | ".join(cells) + " |")
    out += ["", "### generated validation windows", "", head]
    for name in ("rules-only", *CONFIGS):
        s = report["generated_val"][name]
        out.append("| " + " | ".join([name, *_cells(s), _pct(s.get("ungrounded_rate")) if name != "rules-only" else "-",
                                      "-"]) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--labels", type=Path, default=Path("sample_logs/labels.jsonl"))
    ap.add_argument("--val", type=Path, default=Path(".mdl/ds/val.jsonl"))
    ap.add_argument("--val-limit", type=int, default=10**9)
    ap.add_argument("--split", type=Path, default=None, help="default: data/realdata_split.json")
    ap.add_argument("--markdown", action="store_true", help="print the EVAL.md tables instead of JSON")
    args = ap.parse_args()
    count = counter()
    report = {"sample_logs": sample_logs(args.labels, args.results, count),
              "heldout": heldout(args.results, count, args.split),
              "generated_val": generated(args.val, args.results, count, args.val_limit)}
    print(markdown(report) if args.markdown else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

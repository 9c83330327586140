"""Score the answers generated on the GPU box (scripts/device_job.py) here, through the real pipeline.

Three sets, each scored for rules only, rules + base model and rules + base + adapter, the model
runs replaying the answers generated for exactly these prompts (`ReplayEngine`):
- sample_logs: `run_eval` as `logwarden eval` runs it (llm-policy suspicious, default prompts per window);
- the realdata held-out side (data/realdata_split.json) as a site with a past: `run_eval` after the
  baseline learned half of each source's benign units (`production.heldout_site`, as `logwarden eval
  --history-share 0.5`), analyze's default llm-policy `deviations` (how the prompts were recorded),
  per source too;
- the generated validation split: each window judged again against the generated history
  (`production.ScenarioJudge`), its prompts' replayed answers reviewed by the pipeline, the window
  scored as one unit (attack: detected at min(truth, medium), right category; benign: false
  positive above low).
Besides recall, category, top-risk category and FP rate, every run reports the share of benign
units flagged at any level, and every model run its prompts, prompt tokens per 1,000 lines,
deviations dismissed and ungrounded-entity rate. Prints JSON, or with `--markdown` the tables for EVAL.md.

    python scripts/device_score.py --results DIR [--labels sample_logs/labels.jsonl] [--val .mdl/ds/val.jsonl] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from logwarden.app import attack
from logwarden.app.evaluate import (
    LabelledUnit,
    ScoredRecord,
    labelled_files,
    load_labels,
    run_eval,
    score,
)
from logwarden.app.textgate import echoes_instructions
from logwarden.schemas import risk_rank
from logwarden.train.production import heldout_site
from logwarden.train.realdata import load_split
from logwarden.train.replay import ReplayEngine


def configs_in(results: Path) -> list[str]:
    """The answers files in `results`: answers_<config>.jsonl."""
    return sorted(p.name.removeprefix("answers_").removesuffix(".jsonl") for p in results.glob("answers_*.jsonl"))


PARTIAL = False  # --partial: the answers are a sample of the prompts (the CPU's); the others fail


def engine_for(results: Path, name: str, count) -> ReplayEngine:
    return ReplayEngine(answers_of(results, name), count, model_name="embedded-1.5b" if "1.5b" in name else "embedded",
                        adapter_name="adapter" if name.startswith("adapter") else None, partial=PARTIAL)
METRIC_KEYS = ("lines", "deviations", "deviations_dismissed", "prompt_tokens", "llm_calls", "windows_split", "rare_lines_llm", "rare_lines_shown", "rare_line_coverage",
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


PUNCTUATION_ONLY = re.compile(r"^[\W_]*$")


def text_audit(records) -> dict:
    """The stored texts of the records the model touched, checked apart from the gate that wrote them:
    how many kept the rules' text for a field (rejected), and how many stored texts are empty or
    punctuation, echo the instructions, or carry a technique id the ATT&CK table lacks (all should be 0)."""
    touched = [r for r in records if "llm" in r.decided_by]
    texts = [t for r in touched for t in (r.anomaly, r.recommendation)]
    return {"model_records": len(touched), "rejected": sum(1 for r in touched if r.rejected),
            "empty_or_punctuation": sum(1 for t in texts if PUNCTUATION_ONLY.match(t)),
            "instructions": sum(1 for t in texts if any(echoes_instructions(s) for s in re.split(r"(?<=[.!?])\s+", t))),
            "unknown_techniques": sum(1 for r in touched for t in r.techniques if not attack.is_known(t.id))}


def _runs(units, folder: Path, files, results: Path, count, history=(), **eval_kw) -> dict:
    eval_kw["incidents"] = None  # the recorded prompts are windows: the stories' were never answered
    runs = {"rules-only": run_eval(units, folder, files, history=history, incidents=None)}
    for name in configs_in(results):
        runs[name] = run_eval(units, folder, files, engine=engine_for(results, name, count), name=name,
                              history=history, **eval_kw)
    return {name: run.report.as_dict() | {"metrics": {k: run.metrics.get(k) for k in METRIC_KEYS},
                                          "texts": text_audit(run.records)}
            for name, run in runs.items()}


def sample_logs(labels: Path, results: Path, count) -> dict:
    units, folder = load_labels(labels), labels.resolve().parent
    return _runs(units, folder, labelled_files(units, folder), results, count, llm_policy="suspicious")


def heldout(results: Path, count, split: Path | None = None) -> dict:
    """The held-out side as a site with a past (`production.heldout_site`), analyze's default policy."""
    site = heldout_site(load_split(split) if split else load_split())
    return _runs(site.units, site.folder, site.test, results, count, history=site.history, llm_policy="deviations",
                 max_prompts_per_window=None)


def heldout_suspicious(results: Path, count, split: Path | None = None) -> dict:
    """The held-out side under the `suspicious` policy: what the model adds where no rule speaks."""
    site = heldout_site(load_split(split) if split else load_split())
    return _runs(site.units, site.folder, site.test, results, count, history=site.history, llm_policy="suspicious")


def generated(val_path: Path, results: Path, count, limit: int) -> dict:
    """Each validation window (its seed key) judged again against the generated history, its prompts'
    answers replayed through the pipeline, the window scored as one unit (attack: detected at
    min(truth, medium), right category; benign: false positive above low)."""
    import random
    import tempfile

    from logwarden.train.production import ScenarioJudge
    from logwarden.train.scenarios import draw

    rows = [json.loads(line) for line in val_path.read_text().splitlines() if line.strip()][:limit]
    manifest = json.loads((val_path.parent / "manifest.json").read_text())
    windows = list(dict.fromkeys(row["meta"]["window"] for row in rows))
    recorded = {row["user"] for row in rows}
    out = {"windows": len(windows), "prompts_changed_since_generation": 0}
    with tempfile.TemporaryDirectory(prefix="logwarden-judge-") as tmp:
        judge = ScenarioJudge(Path(tmp), count, seed=manifest["seed"], history=manifest.get("judge_history"))
        scenarios = {key: draw(random.Random(key)) for key in windows}
        out["prompts_changed_since_generation"] = sum(
            item.part.prompt not in recorded for s in scenarios.values() for item in judge.items(s))
        for name in ("rules-only", *configs_in(results)):
            engine = None if name == "rules-only" else engine_for(results, name, count)
            units, records, named, missing = [], [], 0, 0
            for key, scenario in scenarios.items():
                unit = _unit(key, scenario)
                found, metrics = judge.records(scenario, engine)
                units.append(unit)
                records += [ScoredRecord(key, tuple(r.evidence.line_numbers), r.category, r.risk_level) for r in found]
                named, missing = named + metrics["entities_named"], missing + metrics["entities_ungrounded"]
            out[name] = score(units, records).as_dict()["overall"] | {
                "entities_named": named, "entities_ungrounded": missing, "ungrounded_rate": missing / named if named else None}
        judge.close()
    return out


def _unit(key: str, scenario) -> LabelledUnit:
    truth, risk = scenario.category, scenario.risk
    risk_min = risk if risk_rank(risk) <= risk_rank("medium") else "medium"
    return LabelledUnit(file=key, line_start=1, line_end=len(scenario.lines), category=truth,
                        risk_min="info" if truth == "benign" else risk_min, risk_max="low" if truth == "benign" else None)


# ---- the tables -----------------------------------------------------------------------------------

def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _cells(s: dict) -> list[str]:
    return [f"{_pct(s['recall'])} ({s['detected']}/{s['attacks']})",
            f"{_pct(s['category_accuracy'])} ({s['category_correct']}/{s['attacks']})",
            f"{_pct(s['category_top_accuracy'])} ({s['category_top_correct']}/{s['attacks']})",
            f"{_pct(s['fp_rate'])} ({s['false_positives']}/{s['benign']})"]


def _flagged(run: dict) -> str:
    return _pct(run.get("benign_flagged", {}).get("low"))


def _per_1000(m: dict) -> str:
    return f"{1000 * m['prompt_tokens'] / m['lines']:,.0f}" if m.get("lines") and m.get("prompt_tokens") is not None else "-"


def markdown(report: dict) -> str:
    head = ("| run | recall | category | top-risk category | FP rate | benign flagged (any level) | ungrounded | prompts "
            "| prompt tokens / 1,000 lines | deviations dismissed |\n|---|---|---|---|---|---|---|---|---|---|")
    out = []
    sets = [("sample_logs", report["sample_logs"]), ("realdata held-out", report["heldout"]),
            ("realdata held-out, llm-policy suspicious", report["heldout_suspicious"])]
    for title, runs in sets:
        if not runs:
            continue
        out += [f"### {title}", "", head]
        for name, run in runs.items():
            m = run.get("metrics", {})
            extra = [f"{_pct(m.get('ungrounded_rate'))} ({m.get('entities_ungrounded')}/{m.get('entities_named')})",
                     f"{m.get('llm_calls')}", _per_1000(m), f"{m.get('deviations_dismissed')}/{m.get('deviations')}"] \
                if name != "rules-only" else ["-", "-", "-", f"-/{m.get('deviations')}"]
            out.append("| " + " | ".join([name, *_cells(run["overall"]), _flagged(run), *extra]) + " |")
        out.append("")
    out += ["### realdata held-out, per source (recall / top-risk category / benign flagged)", "",
            "| source | " + " | ".join(report["heldout"]) + " |", "|---|" + "---|" * len(report["heldout"])]
    for source in report["heldout"]["rules-only"]["per_source"]:
        cells = []
        for run in report["heldout"].values():
            s = run["per_source"][source]
            cells.append(f"{_pct(s['recall'])} / {_pct(s['category_top_accuracy'])} / FP {s['false_positives']}/{s['benign']}")
        out.append(f"| {source} | " + " | ".join(cells) + " |")
    out += ["", "### the model's verdicts on the held-out deviations (against the labels)", "",
            "| run | judged | benign: benign / attack | suspicious: benign / attack | attack: benign / attack "
            "| dismissal precision | attack precision | attack category |", "|---|---|---|---|---|---|---|---|"]
    for name, run in report["heldout"].items():
        v = run.get("verdicts") or {}
        if not v:
            continue
        t = v["table"]
        cell = lambda k: f"{t.get(k, {}).get('benign', 0)} / {t.get(k, {}).get('attack', 0)}"  # noqa: E731
        out.append(f"| {name} | {v['judged']} | {cell('benign')} | {cell('suspicious')} | {cell('attack')} | "
                   f"{_pct(v['dismissal_precision'])} | {_pct(v['attack_precision'])} | {_pct(v['attack_category_accuracy'])} |")
    out += ["", "### the texts of the records the model touched (held-out, both policies)", "",
            "| run | policy | records | a field rejected (rules' text kept) | empty or punctuation | instructions echoed "
            "| unknown technique ids |", "|---|---|---|---|---|---|---|"]
    for policy, key in (("deviations", "heldout"), ("suspicious", "heldout_suspicious")):
        for name, run in (report.get(key) or {}).items():
            a = run.get("texts")
            if a and name != "rules-only":
                out.append(f"| {name} | {policy} | {a['model_records']} | {a['rejected']} | {a['empty_or_punctuation']} "
                           f"| {a['instructions']} | {a['unknown_techniques']} |")
    if not report.get("generated_val"):
        return "\n".join(out)
    out += ["", "### generated validation windows", "", "| run | recall | category | top-risk category | FP rate | ungrounded |",
            "|---|---|---|---|---|---|"]
    for name in report["generated_val"]:
        if name in ("windows", "prompts_changed_since_generation"):
            continue
        s = report["generated_val"][name]
        out.append("| " + " | ".join([name, *_cells(s), _pct(s.get("ungrounded_rate")) if name != "rules-only" else "-"])
                   + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--labels", type=Path, default=Path("sample_logs/labels.jsonl"))
    ap.add_argument("--val", type=Path, default=Path(".mdl/ds/val.jsonl"))
    ap.add_argument("--val-limit", type=int, default=10**9)
    ap.add_argument("--split", type=Path, default=None, help="default: data/realdata_split.json")
    ap.add_argument("--markdown", action="store_true", help="print the EVAL.md tables instead of JSON")
    ap.add_argument("--partial", action="store_true", help="answers for a sample of the prompts: the rest fail")
    ap.add_argument("--sets", default="sample_logs,heldout,heldout_suspicious,generated_val")
    args = ap.parse_args()
    global PARTIAL
    PARTIAL = args.partial
    count = counter()
    wanted = args.sets.split(",")
    sets = {"sample_logs": lambda: sample_logs(args.labels, args.results, count),
            "heldout": lambda: heldout(args.results, count, args.split),
            "heldout_suspicious": lambda: heldout_suspicious(args.results, count, args.split),
            "generated_val": lambda: generated(args.val, args.results, count, args.val_limit) if args.val.is_file() else {}}
    report = {name: make() if name in wanted else {} for name, make in sets.items()}
    print(markdown(report) if args.markdown else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

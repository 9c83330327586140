#!/usr/bin/env python3
"""Two stores of reviewed records for `logwarden backtest` on realdata (EVAL.md, issue 42 item 5): each
side of the split analysed (rules and baselines, no model) as a site with a past (the eval's
`--history-share`), every record closed by the labels standing in for an analyst: a record on a
labelled attack unit's lines = true_positive, on benign units' lines only = false_positive; a record
on no labelled line is left open (never replayed).

Usage: python scripts/reviewed_stores.py --out /tmp/reviewed [--labels shared/realdata/labels.jsonl]
       [--split data/realdata_split.json] [--history-share 0.5] [--seed 7]
then:  logwarden backtest --db /tmp/reviewed/heldout.db --examples-db /tmp/reviewed/train.db --limit 60
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from logwarden.app.baseline.learn import learn_paths
from logwarden.app.evaluate import filter_units, history_scenario, load_labels, overlaps, scored_record
from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import RecordFilter, open_store
from logwarden.train.realdata import load_split, side_of


def build(side: str, units, labels_dir: Path, out: Path, *, share: float, seed: int) -> dict:
    db = out / f"{side}.db"
    db.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"reviewed-{side}-") as tmp:
        scenario = history_scenario(units, labels_dir, Path(tmp), share=share, seed=seed)
        store = open_store(f"sqlite:///{db}")
        learn_paths(store, scenario.history)
        options = RunOptions(rules_only=True, final=True, node=None)
        Pipeline(store, None, options, command=f"reviewed-stores {side}").analyze(scenario.test)
        counts = {"true_positive": 0, "false_positive": 0, "unlabelled": 0}
        for record in store.query_records(RecordFilter(), limit=1_000_000):
            scored = scored_record(record, scenario.folder)
            touched = [u for u in scenario.units if overlaps(u, scored)]
            if not touched:
                counts["unlabelled"] += 1
                continue
            reason = "true_positive" if any(u.is_attack for u in touched) else "false_positive"
            store.add_review(record.id, status="closed", reason=reason, reviewer="labels",
                             note=f"labelled {next((u.category for u in touched if u.is_attack), 'benign')}")
            counts[reason] += 1
        store.close()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--labels", type=Path, default=Path("shared/realdata/labels.jsonl"))
    parser.add_argument("--split", type=Path, default=Path("data/realdata_split.json"))
    parser.add_argument("--history-share", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    units, sides = load_labels(args.labels), side_of(load_split(args.split))
    labels_dir = args.labels.resolve().parent
    report = {side: build(side, filter_units(units, sides, side), labels_dir, args.out, share=args.history_share,
                          seed=args.seed) for side in ("heldout", "train")}
    print(json.dumps(report))


if __name__ == "__main__":
    main()

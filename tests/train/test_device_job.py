"""Dress rehearsal of the H200 session on the CPU: scripts/device_prepare.py → device_job.py (train
and generate, a tiny random Qwen2 with the real tokenizer in place of the embedded model) →
device_score.py, as subprocesses with the same arguments the H200 run takes (smaller numbers). The
one GPU session cannot then fail on a bug in the plumbing: every recorded prompt is answered
under its own grammar, and scoring replays those answers through the unchanged pipeline."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _engine_helpers import build_tiny_qwen, qwen_tokenizer  # noqa: F401 (fixture)
from _repo import REPO

from logwarden.schemas.assessment import schema_refs
from logwarden.train.realdata import load_split

pytestmark = pytest.mark.timeout(1200)
ROOT = REPO
SAMPLE_FILES = ("auth.log", "windows_security.jsonl")
EVIDENCE = re.compile(r'"evidence": \[([^\]]*)')
WRITTEN_ID = re.compile(r'"([^"]+)"')  # a quoted item, both quotes written


def run(*args: str, shared: Path | None = None) -> str:
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}
    if shared is not None:  # its own realdata, and its own temporary folder (the sites of production.sites_dir)
        (shared.parent / "tmp").mkdir(exist_ok=True)
        env |= {"LOGWARDEN_SHARED": str(shared), "TMPDIR": str(shared.parent / "tmp")}
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return done.stdout


CUT_LINES = 1500  # of each file of the biggest held-out group: a site small enough to rehearse, big enough to warm its baseline


def tiny_split(path: Path) -> tuple[Path, dict]:
    """The real split with two small held-out recordings (account creation) and the biggest held-out group
    (cut by `tiny_shared`) kept held out, the other held-out groups set aside."""
    split = load_split()
    held = sorted((g for g in split["groups"].values() if g["side"] == "heldout" and g["units"] == 1
                   and "T1136-Create_account" in g["files"][0]), key=lambda g: g["files"][0])[:2]
    assert len(held) == 2
    held.append(max((g for g in split["groups"].values() if g["side"] == "heldout"), key=lambda g: g["units"]))
    for group in split["groups"].values():
        if group["side"] == "heldout" and group not in held:
            group["side"] = "unused"
    path.write_text(json.dumps(split))
    return path, held[-1]


def tiny_shared(tmp: Path, group: dict) -> Path:
    """A copy of the shared folder whose realdata has `group`'s files cut to their first `CUT_LINES` lines
    (and only the units that end there); everything else is linked to the real files."""
    from logwarden.train.realdata import realdata_dir

    real, cut = realdata_dir(), set(group["files"])
    shared = tmp / "shared"
    (shared / "realdata").mkdir(parents=True)
    folders = {f.split("/")[0] for f in cut}
    for entry in real.iterdir():
        if entry.name != "labels.jsonl" and entry.name not in folders:
            (shared / "realdata" / entry.name).symlink_to(entry)
    for folder in folders:
        (shared / "realdata" / folder).mkdir()
        for entry in (real / folder).iterdir():
            name = f"{folder}/{entry.name}"
            if name in cut:
                lines = entry.read_bytes().split(b"\n")[:CUT_LINES]
                (shared / "realdata" / name).write_bytes(b"\n".join(lines) + b"\n")
            else:
                (shared / "realdata" / name).symlink_to(entry)
    rows = [r for r in (real / "labels.jsonl").read_text().splitlines() if r.strip()]
    kept = [r for r in rows if json.loads(r)["file"] not in cut or json.loads(r)["line_end"] < CUT_LINES]
    (shared / "realdata" / "labels.jsonl").write_text("\n".join(kept) + "\n")
    return shared


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory, qwen_tokenizer):
    tmp = tmp_path_factory.mktemp("rehearsal")
    samples = tmp / "samples"
    samples.mkdir()
    units = [u for u in map(json.loads, (ROOT / "sample_logs" / "labels.jsonl").read_text().splitlines())
             if u["file"] in SAMPLE_FILES]
    for name in SAMPLE_FILES:
        (samples / name).write_bytes((ROOT / "sample_logs" / name).read_bytes())
    (samples / "labels.jsonl").write_text("".join(json.dumps(u) + "\n" for u in units))
    split, big = tiny_split(tmp / "split.json")
    shared = tiny_shared(tmp, big)
    model = tmp / "tiny"
    build_tiny_qwen().save_pretrained(model)
    qwen_tokenizer.save_pretrained(model)
    mdl, out = tmp / "mdl", tmp / "out"
    run("scripts/device_prepare.py", "--tiny", "--out", str(mdl), "--labels", str(samples / "labels.jsonl"),
        "--split", str(split), shared=shared)
    run("scripts/device_job.py", "--model-folder", str(model), "--work", str(tmp / "work"), "--data", str(mdl / "data"),
        "--out", str(out), "--stage", "all", "--epochs", "1", "--max-steps", "2", "--batch", "2", "--max-len", "768",
        "--max-batch", "16", "--quant", "fp32", "--decoder", "eager", "--max-new-tokens", "40", "--val-prompts", "12")
    scored = run("scripts/device_score.py", "--results", str(out), "--labels", str(samples / "labels.jsonl"),
                 "--val", str(mdl / "ds" / "val.jsonl"), "--val-limit", "12", "--split", str(split),
                 shared=shared)
    return {"mdl": mdl, "out": out, "score": json.loads(scored), "samples": samples}


def test_the_job_trains_and_answers_every_recorded_prompt_under_its_own_grammar(rehearsal):
    out, data = rehearsal["out"], rehearsal["mdl"] / "data"
    assert (out / "adapter" / "adapter_model.safetensors").is_file() and (out / "adapter" / "training.json").is_file()
    generation = json.loads((out / "generation.json").read_text())
    assert set(generation) == {"base", "adapter"} and set(generation["base"]["sets"]) == {"sample", "heldout", "heldout_suspicious", "val"}
    schemas = {}
    for name in ("sample", "heldout", "heldout_suspicious"):
        rows = gzip.decompress((data / f"prompts_{name}.jsonl.gz").read_bytes()).decode().splitlines()
        schemas |= {row["user"]: row["schema"] for row in map(json.loads, rows)}
    for config in ("base", "adapter"):
        rows = [json.loads(line) for line in (out / f"answers_{config}.jsonl").read_text().splitlines()]
        assert sum(r["set"] == "sample" for r in rows) == generation[config]["sets"]["sample"]["prompts"] > 0
        for row in rows:
            if row["user"] in schemas:
                admitted = set(schema_refs(schemas[row["user"]]))
                # ids written whole: an answer cut at the token cap can end inside one (`"L7` of "L74")
                written = set(WRITTEN_ID.findall(" ".join(EVIDENCE.findall(row["text"]))))
                assert written <= admitted, (written, admitted)


def test_scoring_replays_the_answers_through_the_pipeline(rehearsal):
    from logwarden.app.evaluate import labelled_files, load_labels, run_eval

    score = rehearsal["score"]
    assert set(score) == {"sample_logs", "heldout", "heldout_suspicious", "generated_val"}
    for part in ("sample_logs", "heldout"):
        assert set(score[part]) == {"rules-only", "base", "adapter"}
        for name in ("base", "adapter"):
            metrics = score[part][name]["metrics"]
            assert metrics["llm_calls"] > 0 and metrics["entities_named"] is not None
    held = score["heldout"]["base"]["metrics"]
    assert held["deviations"] > 0 and held["prompt_tokens"] > 0  # analyze's default: the deviations go to the model
    assert score["heldout"]["rules-only"]["metrics"]["deviations"] == held["deviations"]
    labels = rehearsal["samples"] / "labels.jsonl"
    units = load_labels(labels)
    direct = run_eval(units, labels.parent, labelled_files(units, labels.parent)).report.as_dict()["overall"]
    assert score["sample_logs"]["rules-only"]["overall"] == direct
    val = score["generated_val"]
    assert val["prompts_changed_since_generation"] == 0 and val["windows"] >= 1
    assert {"recall", "fp_rate", "category_top_accuracy", "ungrounded_rate"} <= set(val["adapter"])

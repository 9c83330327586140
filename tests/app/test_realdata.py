"""The realdata split (deterministic, by file and source group, never by line; the written file is
what the labels give) and the training examples cut from its train side by the pipeline's own
stages, with targets pinned to exactly the labelled lines and grounded in their prompts."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store
from logwarden.errors import InputError
from logwarden.prompts import user_prompt
from logwarden.schemas import LLMAssessment
from logwarden.train.dataset import ungrounded_in
from logwarden.train.realdata import (
    build_split,
    cut,
    files_on,
    load_split,
    load_units,
    realdata_dir,
    side_of,
    source_group,
    train_examples,
)
from logwarden.train.replay import RecordingEngine

count = lambda s: len(s) // 4  # noqa: E731


@pytest.fixture(scope="module")
def split():
    return build_split()


def test_the_split_is_deterministic_and_the_written_file_is_it(split):
    assert build_split() == split
    assert load_split() == json.loads(json.dumps(split)), \
        "data/realdata_split.json is stale: run `logwarden dataset split`"


def test_no_file_and_no_source_group_is_on_both_sides(split):
    sides = side_of(split)
    units = load_units()
    assert {u.file for u in units} == set(sides)  # every labelled file is placed, on one side
    by_file, by_group = defaultdict(set), defaultdict(set)
    for unit in units:  # lines of one file (units) all on its one side
        by_file[unit.file].add(sides[unit.file])
        by_group[source_group(unit.file)].add(sides[unit.file])
    assert all(len(s) == 1 for s in by_file.values()) and all(len(s) == 1 for s in by_group.values())
    files = [f for g in split["groups"].values() for f in g["files"]]
    assert len(files) == len(set(files))


def test_web_sets_sit_whole_on_their_sides_and_every_stratum_is_held_out(split):
    sides = side_of(split)
    assert {sides[f] for f in sides if f.startswith("httpparams/")} == {"train"}
    csic = [f for f in sides if f.startswith("csic2010/")]
    assert len(csic) == 2 and {sides[f] for f in csic} == {"heldout"}  # its normal and its anomalous file
    held = {(g["files"][0].split("/")[0], g["category"]) for g in split["groups"].values() if g["side"] == "heldout"}
    assert {("evtx_to_mitre", "brute_force"), ("loghub", "benign"), ("otrf", "malware_execution")} <= held
    share = split["counts"]["heldout"]["units"] - 3927  # without CSIC, held out by rule
    assert 0.2 < share / (share + split["counts"]["train"]["units"] - 20709) < 0.45


def test_a_missing_shared_folder_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("LOGWARDEN_SHARED", str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match="LOGWARDEN_SHARED"):
        realdata_dir()


def test_windows_are_cut_exactly_as_analyze_cuts_them(tmp_path, split):
    """The prompts `cut` makes for a train file are the prompts the real pipeline sends for it."""
    file = next(f for f in files_on(split, "train") if f.startswith("otrf/atomic"))
    path = realdata_dir() / file
    made = [part.text for c in cut(path, count_tokens=count, options=RunOptions(max_prompts_per_window=None))
            for part in c.parts]
    engine = RecordingEngine(count)
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    # incidents=None: the stories the run writes afterwards are not window prompts
    Pipeline(store, engine, RunOptions(llm_policy="all", max_prompts_per_window=None, incidents=None)).analyze([path])
    assert sorted(user_prompt(t) for t in made) == sorted(engine.requests)  # the review asks riskiest first


@pytest.fixture(scope="module")
def web_slice(tmp_path_factory):
    """The first 600 requests of httpparams as a realdata folder of their own (its labels, a split)."""
    folder = tmp_path_factory.mktemp("realdata")
    src = realdata_dir() / "httpparams" / "payload_train_access.log"
    (folder / "httpparams").mkdir()
    lines = src.read_text().splitlines()[:600]
    (folder / "httpparams" / "payload_train_access.log").write_text("\n".join(lines) + "\n")
    units = [u for u in map(json.loads, (realdata_dir() / "labels.jsonl").read_text().splitlines())
             if u["file"].startswith("httpparams/") and u["line_end"] <= 600]
    (folder / "labels.jsonl").write_text("".join(json.dumps(u) + "\n" for u in units))
    split = {"groups": {"httpparams": {"side": "train", "files": ["httpparams/payload_train_access.log"]}}}
    return folder, split, {u["line_start"]: u for u in units}


def test_web_targets_pin_findings_to_exactly_the_attack_lines_and_name_nothing_unseen(web_slice):
    folder, split, units = web_slice
    examples = list(train_examples(split, count_tokens=count, folder=folder))
    assert examples
    cited_any = False
    for example in examples:
        assert ungrounded_in(example) == 0
        answer = LLMAssessment.model_validate_json(example.assistant)
        shown = {int(n) for n in re.findall(r"^ L(\d+)", example.user, flags=re.M)}
        attacks = {n for n in shown if units[n]["category"] != "benign"}
        cited = {int(r[1:]) for f in answer.findings for r in f.evidence if r.startswith("L")}
        assert cited <= attacks and (cited == attacks or len(cited) >= 8)  # every shown attack line, up to the cap
        assert not any(r.startswith("T") for f in answer.findings for r in f.evidence)  # one template for all: never cited
        cited_any |= bool(cited)
        if not attacks:
            assert answer.findings == []
    assert cited_any


def test_recording_level_labels_give_one_finding_in_the_first_prompt(split):
    file = next(f for f in files_on(split, "train") if f.startswith("evtx_to_mitre/"))
    examples = list(train_examples({"groups": {"g": {"side": "train", "files": [file]}}}, count_tokens=count))
    assert examples and all(e.meta["part"] == 1 for e in examples)
    for example in examples:
        answer = LLMAssessment.model_validate_json(example.assistant)
        assert len(answer.findings) == 1 and ungrounded_in(example) == 0

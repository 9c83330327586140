"""QLoRA training end to end on the tiny random Qwen2 (real tokenizer) on CPU: the prompt is masked,
the loss decreases, the adapter and its card are saved, reloaded through the engine's loader,
and change the outputs; plus the CLI's error for a missing data folder."""

from __future__ import annotations

import json
import math

import pytest
import torch
from _engine_helpers import build_tiny_qwen, qwen_tokenizer  # noqa: F401 (fixture)
from click.testing import CliRunner

from logwarden.cli.commands.train import train as train_command
from logwarden.train.dataset import build_dataset
from logwarden.train.train import IGNORE, TrainConfig, collate, encode, run_training

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ds")
    build_dataset(folder, n=10, seed=11, val_fraction=0.2)
    return folder


def test_encode_masks_the_prompt_and_ends_the_turn(data, qwen_tokenizer):
    row = json.loads((data / "train.jsonl").read_text().splitlines()[0])
    enc = encode(row, qwen_tokenizer, max_len=4096)
    answer = [t for t in enc.labels if t != IGNORE]
    assert enc.labels[0] == IGNORE and len(enc.labels) == len(enc.input_ids)
    assert qwen_tokenizer.decode(answer) == row["assistant"] + "<|im_end|>"
    assert enc.input_ids[-len(answer):] == answer
    short = encode(row, qwen_tokenizer, max_len=len(answer) + 40)  # the prompt's tail is kept, the answer whole
    assert len(short.input_ids) == len(answer) + 40 and [t for t in short.labels if t != IGNORE] == answer


def test_collate_pads_right_and_ignores_padding(data, qwen_tokenizer):
    rows = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()[:2]]
    items = [encode(r, qwen_tokenizer, 256) for r in rows]
    items[1].input_ids, items[1].labels = items[1].input_ids[:100], items[1].labels[:100]
    batch = collate(items, pad_id=0)
    assert batch["input_ids"].shape == (2, 256)
    assert batch["attention_mask"][1, 100:].sum() == 0 and (batch["labels"][1, 100:] == IGNORE).all()


def test_training_lowers_loss_saves_and_the_adapter_changes_outputs(data, qwen_tokenizer, tmp_path):
    from logwarden.engine.api import Request
    from logwarden.engine.load import load_engine

    base = tmp_path / "tiny"
    build_tiny_qwen().save_pretrained(base)
    qwen_tokenizer.save_pretrained(base)
    out = tmp_path / "adapter"
    cfg = TrainConfig(base=str(base), data=data, out=out, batch=2, epochs=3, lr=5e-3, max_len=192, rank=8, alpha=16,
                      quant="fp32", device="cpu", seed=1)
    card = run_training(cfg)
    m = card["metrics"]
    examples = len((data / "train.jsonl").read_text().splitlines())  # one per prompt: a window may have several
    assert m["steps"] == 3 * -(-examples // 2) and len(m["val_loss"]) == 3
    assert m["last_loss"] < m["first_loss"] and m["val_loss"][-1] < m["val_loss"][0]
    assert (out / "adapter_model.safetensors").is_file() and (out / "MODEL_CARD.md").is_file()
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["r"] == 8 and set(config["target_modules"]) == {"q_proj", "k_proj", "v_proj", "o_proj",
                                                                   "gate_proj", "up_proj", "down_proj"}
    assert card["base"]["weights_sha256"] and card["data"]["seed"] == 11
    request = [Request(system="You are a SOC analyst.", user="Mar 11 sshd: Failed password for root")]
    plain = load_engine(model=str(base), adapter=None, quant="fp32", device="cpu").generate(request, max_new_tokens=8)
    tuned = load_engine(model=str(base), adapter=str(out), quant="fp32", device="cpu")
    assert tuned.adapter_name == str(out)
    assert tuned.generate(request, max_new_tokens=8)[0].text != plain[0].text


def _poisoned_training(tmp_path, qwen_tokenizer, monkeypatch, data, poison):
    """Train the tiny model with `poison(call_number)` deciding which batches' loss becomes NaN."""
    from logwarden.train import train as train_module

    base = tmp_path / "tiny"
    build_tiny_qwen().save_pretrained(base)
    qwen_tokenizer.save_pretrained(base)
    real, calls = train_module.batch_loss, []

    def poisoned(model, batch):
        calls.append(1)
        loss = real(model, batch)
        return loss * float("nan") if model.training and poison(len(calls)) else loss

    monkeypatch.setattr(train_module, "batch_loss", poisoned)
    out = tmp_path / "adapter"
    cfg = TrainConfig(base=str(base), data=data, out=out, batch=2, epochs=1, max_len=192, rank=4, alpha=8,
                      quant="fp32", device="cpu", seed=1)
    return cfg, out, calls


def test_a_stray_non_finite_batch_is_skipped_and_the_adapter_stays_finite(data, qwen_tokenizer, tmp_path, monkeypatch):
    """One NaN batch would poison every LoRA weight (security-v3's first run on the H100): no update from it."""
    from safetensors.torch import load_file

    cfg, out, _ = _poisoned_training(tmp_path, qwen_tokenizer, monkeypatch, data, lambda n: n == 2)
    card = run_training(cfg)
    assert card["metrics"]["skipped_steps"] == 1
    assert all(bool(torch.isfinite(t).all()) for t in load_file(out / "adapter_model.safetensors").values())
    assert all(math.isfinite(x) for x in card["metrics"]["val_loss"])


def test_a_run_that_keeps_diverging_stops_and_saves_nothing(data, qwen_tokenizer, tmp_path, monkeypatch):
    from logwarden.errors import ModelError

    cfg, out, calls = _poisoned_training(tmp_path, qwen_tokenizer, monkeypatch, data, lambda n: n >= 2)
    with pytest.raises(ModelError, match="not finite on 3 batches"):
        run_training(cfg)
    assert len(calls) == 4 and not (out / "adapter_model.safetensors").exists()


def test_train_cli_missing_data_says_how_to_fix(tmp_path):
    result = CliRunner().invoke(train_command, ["--base", "embedded", "--data", str(tmp_path / "nope"),
                                                "--out", str(tmp_path / "o")])
    assert result.exit_code != 0
    assert "logwarden dataset build" in result.output or "logwarden dataset build" in str(result.exception)


def test_embedded_gets_the_shipped_adapter_only_when_it_was_trained_on_this_prompt(tmp_path, monkeypatch):
    from logwarden.app import backends
    from logwarden.app.backends import SECURITY_V2, default_adapter, resolve_adapter
    from logwarden.prompts import PROMPT_VERSION

    assert (SECURITY_V2 / "adapter_config.json").is_file()
    assert (SECURITY_V2 / "adapter_model.safetensors").stat().st_size <= 16 * 1024 * 1024
    # security-v2 was taught analyze_v2's answers: on analyze_v3's prompts it is applied only when named
    assert backends.trained_prompt_version(SECURITY_V2) == "analyze_v2" != PROMPT_VERSION
    shipped = backends.DEFAULT_ADAPTERS["embedded"]
    expected = str(shipped) if backends.trained_prompt_version(shipped) == PROMPT_VERSION else None
    assert resolve_adapter("embedded", None) == expected
    older = tmp_path / "security-v0"  # an adapter taught another prompt: applied only when named
    older.mkdir()
    (older / "adapter_config.json").write_text("{}")
    (older / "training.json").write_text(json.dumps({"data": {"manifest": {"prompt_version": "analyze_v1"}}}))
    monkeypatch.setitem(backends.DEFAULT_ADAPTERS, "embedded", older)
    assert resolve_adapter("embedded", None) is None and default_adapter("embedded") is None
    assert resolve_adapter("embedded", str(older)) == str(older)
    current = tmp_path / "security-vN"
    current.mkdir()
    (current / "adapter_config.json").write_text("{}")
    (current / "training.json").write_text(json.dumps({"data": {"manifest": {"prompt_version": PROMPT_VERSION}}}))
    monkeypatch.setitem(backends.DEFAULT_ADAPTERS, "embedded", current)
    assert resolve_adapter("embedded", None) == str(current) == str(default_adapter("embedded"))
    assert resolve_adapter("embedded", "none") is None and resolve_adapter("embedded", "NONE") is None
    assert resolve_adapter("/models/other", None) is None
    assert resolve_adapter("embedded", "/my/adapter") == "/my/adapter"

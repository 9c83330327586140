"""QLoRA fine-tuning of a base model on a `logwarden dataset build` folder, with peft.

Owns: encoding examples with the SAME chat layout the engine uses (`prefix_cache.render`) and the
answer as the grammar spells it, masking the prompt (-100) so the loss covers the answer tokens
only; the base in nf4 with double quantization and bf16 compute on CUDA (the QLoRA recipe), fp32
on CPU unless `quant` says otherwise; LoRA on q/k/v/o/gate/up/down projections; the training loop
(AdamW, linear warm-up/decay, optional gradient checkpointing) with a progress bar showing the
loss; validation loss per epoch; saving the adapter and its model card (base, sha256 of the base
weights, data seed, hyper-parameters, metrics, tokens/s, wall time).
Knows nothing of logs, the pipeline or the store: examples are `{"system","user","assistant"}`.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from logwarden.engine.prefix_cache import render
from logwarden.errors import ConfigError, InputError, ModelError

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
IGNORE = -100


@dataclass(slots=True)
class TrainConfig:
    base: str
    data: Path
    out: Path
    epochs: int = 1
    lr: float = 2e-4
    rank: int = 16
    alpha: int = 32
    dropout: float = 0.05
    batch: int = 8
    max_steps: int | None = None
    max_len: int = 1024
    warmup_frac: float = 0.05
    grad_checkpointing: bool = False
    quant: str = "auto"
    seed: int = 0
    device: str | None = None
    max_val: int = 256  # validation examples scored per epoch (bounded cost)
    cache_dir: Path | None = None  # where embedded models are assembled (the app's model cache); a folder base needs none


@dataclass(slots=True)
class Encoded:
    input_ids: list[int]
    labels: list[int]  # IGNORE on the prompt, the token ids on the answer


@dataclass(slots=True)
class TrainResult:
    steps: int = 0
    train_tokens: int = 0
    answer_tokens: int = 0
    wall_s: float = 0.0
    tokens_per_s: float = 0.0
    first_loss: float | None = None
    last_loss: float | None = None
    val_loss: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    skipped_steps: int = 0  # batches whose loss or gradient was not finite: no update made


# ---- data ---------------------------------------------------------------------------------------

def read_split(data: Path, name: str) -> list[dict]:
    path = data / f"{name}.jsonl"
    if not path.is_file():
        raise InputError(f"{path} not found. Fix: point --data at a folder written by `logwarden dataset build`.")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def encode(example: dict, tokenizer: Any, max_len: int) -> Encoded:
    """Prompt as the engine renders it + the answer + end-of-turn; loss on the answer only."""
    prompt = tokenizer(render(tokenizer, example["system"], example["user"]), add_special_tokens=False)["input_ids"]
    answer = tokenizer(example["assistant"] + "<|im_end|>", add_special_tokens=False)["input_ids"]
    prompt = prompt[-max(1, max_len - len(answer)):]  # keep the tail (the digest's end + header) if too long
    ids = (prompt + answer)[-max_len:]
    labels = ([IGNORE] * len(prompt) + answer)[-max_len:]
    return Encoded(ids, labels)


def collate(items: Sequence[Encoded], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded batch: (B, T) ids, attention mask and labels (padding ignored)."""
    width = max(len(e.input_ids) for e in items)
    ids = torch.full((len(items), width), pad_id, dtype=torch.long)
    labels = torch.full((len(items), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, e in enumerate(items):
        n = len(e.input_ids)
        ids[row, :n], labels[row, :n], mask[row, :n] = torch.tensor(e.input_ids), torch.tensor(e.labels), 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def batches(items: Sequence[Encoded], size: int, rng: random.Random) -> list[list[Encoded]]:
    """Shuffled, then length-bucketed inside chunks of 32 batches so padding stays small."""
    order = list(items)
    rng.shuffle(order)
    chunk = size * 32
    out: list[list[Encoded]] = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=lambda e: len(e.input_ids))
        out += [part[i:i + size] for i in range(0, len(part), size)]
    rng.shuffle(out)
    return out


# ---- model --------------------------------------------------------------------------------------

def lora_model(model: Any, cfg: TrainConfig, *, quantized: bool) -> Any:
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    if quantized:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=cfg.grad_checkpointing)
    elif cfg.grad_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    config = LoraConfig(r=cfg.rank, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout, target_modules=list(LORA_TARGETS),
                        bias="none", task_type="CAUSAL_LM")
    return get_peft_model(model, config)


def load_base(cfg: TrainConfig) -> tuple[Any, Any, dict]:
    """Base weights + tokenizer through the engine's own resolution (embedded, folder, .gguf, hub id)."""
    from logwarden.engine.load import load_model, load_tokenizer, resolve_device, resolve_model, resolve_quant

    device = resolve_device(cfg.device)
    source = resolve_model(cfg.base, cache_dir=cfg.cache_dir)
    quant = resolve_quant(cfg.quant, device)
    model = load_model(source, quant=quant, device=device, attention="sdpa")
    info = {"base": cfg.base, "base_path": str(source.path), "base_sha256": source.sha256 or _marker_sha(source.path),
            "weights_sha256": weights_sha256(source.path, source.gguf_file), "quant": quant, "device": str(device)}
    return model, load_tokenizer(source), info


def _marker_sha(folder: Path) -> str | None:
    """A folder converted from an embedded GGUF records the GGUF's sha256 (engine.embedded's marker)."""
    marker = folder / "logwarden_source.json"
    return json.loads(marker.read_text()).get("sha256") if marker.is_file() else None


def weights_sha256(folder: Path, gguf_file: str | None = None) -> str:
    """sha256 over the weight files in name order (the card's proof of which base was used)."""
    files = [folder / gguf_file] if gguf_file else sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    h = hashlib.sha256()
    for path in files:
        with path.open("rb") as fh:
            while chunk := fh.read(8 << 20):
                h.update(chunk)
    return h.hexdigest()


# ---- loop ---------------------------------------------------------------------------------------

def _device_of(model: Any) -> torch.device:
    return next(p.device for p in model.parameters())


def batch_loss(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    device = _device_of(model)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        return model(**{k: v.to(device) for k, v in batch.items()}).loss


@torch.no_grad()
def validation_loss(model: Any, items: Sequence[Encoded], pad_id: int, size: int) -> float:
    """Mean answer-token loss over `items` (token-weighted, so batch size does not change it)."""
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(items), size):
        part = items[start:start + size]
        tokens = sum(sum(1 for t in e.labels[1:] if t != IGNORE) for e in part)
        total += batch_loss(model, collate(part, pad_id)).item() * tokens
        count += tokens
    model.train()
    return total / max(count, 1)


def schedule(step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


Progress = Callable[[int, int, float], None]  # (step, total steps, loss)


def fit(model: Any, train: Sequence[Encoded], val: Sequence[Encoded], cfg: TrainConfig, pad_id: int,
        progress: Progress | None = None) -> TrainResult:
    rng = random.Random(cfg.seed)
    per_epoch = math.ceil(len(train) / cfg.batch)
    total = min(cfg.max_steps or per_epoch * cfg.epochs, per_epoch * cfg.epochs)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    lr_at = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: schedule(s, total, max(1, int(total * cfg.warmup_frac))))
    result, started = TrainResult(), time.perf_counter()
    max_skipped = max(2, total // 50)  # a stray batch is skipped; a run that keeps diverging is stopped
    model.train()
    for _epoch in range(cfg.epochs):
        for batch in batches(train, cfg.batch, rng):
            if result.steps >= total:
                break
            _step(model, collate(batch, pad_id), optimizer, lr_at, params, result, max_skipped)
            result.answer_tokens += sum(sum(1 for t in e.labels if t != IGNORE) for e in batch)
            if progress and result.losses:
                progress(result.steps, total, result.losses[-1])
        if val:
            result.val_loss.append(validation_loss(model, val[: cfg.max_val], pad_id, cfg.batch))
    result.wall_s = time.perf_counter() - started
    result.tokens_per_s = result.train_tokens / result.wall_s if result.wall_s else 0.0
    result.first_loss, result.last_loss = result.losses[0], _tail_mean(result.losses)
    return result


def _step(model: Any, batch: dict[str, torch.Tensor], optimizer, lr_at, params, result: TrainResult,
          max_skipped: int) -> None:
    """One update, or none where the loss or the gradient is not finite (a single NaN update would make every
    LoRA weight NaN, as security-v3's first run on the H100 did). Too many such batches stop the run."""
    loss = batch_loss(model, batch)
    finite = math.isfinite(loss.item())
    if finite:
        loss.backward()
        finite = math.isfinite(float(torch.nn.utils.clip_grad_norm_(params, 1.0)))
    if finite:
        optimizer.step()
        result.losses.append(loss.item())
    else:
        result.skipped_steps += 1
        if result.skipped_steps > max_skipped:
            raise ModelError(f"training loss or gradient not finite on {result.skipped_steps} batches (the last: step "
                             f"{result.steps + 1}, {len(batch['input_ids'])} × {batch['input_ids'].shape[1]} tokens); "
                             f"nothing saved. Fix: the recipe known to train is --batch 16 --max-len 1024 (EVAL.md).")
    lr_at.step()
    optimizer.zero_grad(set_to_none=True)
    result.steps += 1
    result.train_tokens += int(batch["attention_mask"].sum())


def _tail_mean(losses: Sequence[float], n: int = 10) -> float:
    tail = losses[-n:]
    return sum(tail) / len(tail)


# ---- saving -------------------------------------------------------------------------------------

def model_card(cfg: TrainConfig, info: dict, result: TrainResult, manifest: dict | None, trainable: int) -> dict:
    hyper = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items() if k not in ("data", "out")}
    metrics = {k: v for k, v in asdict(result).items() if k != "losses"}
    return {"base": info, "data": {"folder": str(cfg.data), "seed": (manifest or {}).get("seed"),
                                   "manifest": manifest}, "hyper_parameters": hyper | {"lora_targets": list(LORA_TARGETS)},
            "trainable_parameters": trainable, "metrics": metrics, "loss_curve": result.losses[:: max(1, len(result.losses) // 50)]}


def save_adapter(model: Any, out: Path, card: dict, *, dtype: torch.dtype = torch.bfloat16) -> None:
    """Adapter weights in bf16 (half the bytes of fp32; peft upcasts them on load)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, param in model.named_parameters():
        if "lora_" in name:
            param.data = param.data.to(dtype)
    model.save_pretrained(str(out), safe_serialization=True)
    config_path = out / "adapter_config.json"
    config = json.loads(config_path.read_text())
    config["base_model_name_or_path"] = card["base"]["base"]  # a spec (`embedded`), not a machine's path
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True))
    (out / "training.json").write_text(json.dumps(card, indent=2, default=str))
    (out / "MODEL_CARD.md").write_text(card_markdown(card), encoding="utf-8")


def card_markdown(card: dict) -> str:
    base, m, h = card["base"], card["metrics"], card["hyper_parameters"]
    val = ", ".join(f"{v:.4f}" for v in m["val_loss"]) or "-"
    return "\n".join([
        "# logwarden security adapter (LoRA)", "",
        f"- base: `{base.get('base')}` ({base.get('quant')} on {base.get('device')}); base sha256"
        f" `{base.get('base_sha256')}`; weights sha256 `{base.get('weights_sha256')}`",
        f"- data: seed {card['data']['seed']}, {card['data']['folder']}",
        f"- LoRA r={h['rank']} alpha={h['alpha']} dropout={h['dropout']} on {', '.join(h['lora_targets'])};"
        f" {card['trainable_parameters']:,} trainable parameters",
        f"- lr {h['lr']}, batch {h['batch']}, epochs {h['epochs']}, max_steps {h['max_steps']}, max_len {h['max_len']},"
        f" gradient checkpointing {h['grad_checkpointing']}",
        f"- steps {m['steps']}, loss {m['first_loss']:.4f} → {m['last_loss']:.4f}, validation loss per epoch: {val}",
        f"- {m['train_tokens']:,} training tokens in {m['wall_s']:.1f} s = {m['tokens_per_s']:,.0f} tokens/s", "",
        "Loss is on the answer tokens only (the prompt is masked). See training.json for everything.", ""])


# ---- entry point --------------------------------------------------------------------------------

def run_training(cfg: TrainConfig, progress: Progress | None = None, *, model: Any = None, tokenizer: Any = None,
                 info: dict | None = None) -> dict:
    """Train and save; `model`/`tokenizer`/`info` let tests pass a tiny model instead of `cfg.base`."""
    if cfg.batch < 1 or cfg.epochs < 1 or cfg.rank < 1:
        raise ConfigError("--batch, --epochs and --rank must be ≥ 1.")
    torch.manual_seed(cfg.seed)
    train_rows, val_rows = read_split(cfg.data, "train"), _optional_split(cfg.data, "val")
    if model is None:
        model, tokenizer, info = load_base(cfg)
    quantized = getattr(model, "is_loaded_in_4bit", False) or getattr(model, "is_loaded_in_8bit", False)
    model = lora_model(model, cfg, quantized=quantized)
    train = [encode(r, tokenizer, cfg.max_len) for r in train_rows]
    val = [encode(r, tokenizer, cfg.max_len) for r in val_rows]
    result = fit(model, train, val, cfg, _pad_id(tokenizer), progress)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters() if p.requires_grad):
        raise ModelError("the trained adapter holds non-finite weights; nothing saved. Fix: a lower --lr or the "
                         "recipe known to train, --batch 16 --max-len 1024 (EVAL.md).")
    card = model_card(cfg, info or {"base": cfg.base}, result, _manifest(cfg.data), trainable)
    save_adapter(model, cfg.out, card)
    return card


def _optional_split(data: Path, name: str) -> list[dict]:
    return read_split(data, name) if (data / f"{name}.jsonl").is_file() else []


def _manifest(data: Path) -> dict | None:
    path = data / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _pad_id(tokenizer: Any) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

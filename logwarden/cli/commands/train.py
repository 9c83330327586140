"""`logwarden train`: QLoRA fine-tuning of a base model on a `logwarden dataset build` folder.

The loop, encoding and saving live in `logwarden.train.train`; this is the option parsing and a
rich progress bar with the running loss.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from logwarden.cli.common import err_console, handle_errors, json_option, print_json
from logwarden.engine.load import QUANTS


@click.command()
@click.option("--base", required=True, help="Base model: embedded | folder | .gguf | HF id in the local cache.")
@click.option("--data", required=True, type=click.Path(path_type=Path), help="Folder with train.jsonl / val.jsonl.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Folder for the adapter and its model card.")
@click.option("--epochs", type=int, default=1, show_default=True)
@click.option("--lr", type=float, default=2e-4, show_default=True)
@click.option("--rank", type=int, default=16, show_default=True, help="LoRA rank (alpha = 2 x rank).")
@click.option("--batch", type=int, default=8, show_default=True)
@click.option("--max-steps", type=int, default=None, help="Stop after this many optimizer steps.")
@click.option("--max-len", type=int, default=1024, show_default=True, help="Token limit per example (prompt tail kept).")
@click.option("--grad-checkpointing", is_flag=True, help="Trade compute for memory.")
@click.option("--quant", type=click.Choice(QUANTS), default="auto", show_default=True,
              help="Base precision: auto = nf4 (QLoRA) on CUDA, fp32 on CPU.")
@click.option("--seed", type=int, default=0, show_default=True)
@json_option
@handle_errors
def train(base, data, out, epochs, lr, rank, batch, max_steps, max_len, grad_checkpointing, quant, seed, as_json):
    """Train a LoRA adapter (QLoRA on CUDA) on generated security windows; loss on the answer only."""
    from logwarden.engine.load import require_transformers

    require_transformers()
    from logwarden.app.config import get_settings
    from logwarden.train.train import TrainConfig, run_training

    cfg = TrainConfig(cache_dir=get_settings().model_cache, base=base, data=data, out=out, epochs=epochs, lr=lr, rank=rank, alpha=2 * rank, batch=batch,
                      max_steps=max_steps, max_len=max_len, grad_checkpointing=grad_checkpointing, quant=quant, seed=seed)
    progress = Progress(TextColumn("training"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"),
                        TimeElapsedColumn(), console=err_console, disable=not err_console.is_terminal)
    with progress:
        task = progress.add_task("train", total=None, loss="-")
        card = run_training(cfg, lambda step, total, loss: progress.update(task, completed=step, total=total,
                                                                            loss=f"{loss:.4f}"))
    m = card["metrics"]
    err_console.print(f"saved adapter to {out}: {m['steps']} steps, loss {m['first_loss']:.4f} → {m['last_loss']:.4f}, "
                      f"val {m['val_loss']}, {m['tokens_per_s']:,.0f} tokens/s", highlight=False)
    if as_json:
        print_json(card)

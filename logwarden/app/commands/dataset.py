"""`logwarden dataset build`: write the generated training set (train/val JSONL + manifest).

The generator and the rendering through the pipeline's digest + prompt live in
`logwarden.train.dataset`; `--teacher` relabels with a larger model via `logwarden.train.teacher`.
"""

from __future__ import annotations

from pathlib import Path

import click

from logwarden.app.cli_common import err_console, handle_errors, print_json


@click.group()
def dataset() -> None:
    """Training data for logwarden's own adapter."""


@dataset.command("build")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Folder for train.jsonl, val.jsonl, manifest.json.")
@click.option("--n", "n", type=int, default=4000, show_default=True, help="Number of examples (train + validation).")
@click.option("--seed", type=int, default=0, show_default=True, help="Generator seed; the split is by seed key.")
@click.option("--val-fraction", type=float, default=0.1, show_default=True, help="Share of examples for validation.")
@click.option("--token-counter", type=click.Choice(["embedded", "approx"]), default="embedded", show_default=True,
              help="Tokenizer that fits digests to the prompt budget: the embedded model's (as the pipeline) or chars/3.")
@click.option("--teacher", default=None, help="Relabel with a larger model: a model spec/path, or an OpenAI-compatible URL (…/v1).")
@click.option("--teacher-model", default=None, help="Model name to ask the teacher server for (URL teachers).")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON on stdout.")
@handle_errors
def build(out: Path, n: int, seed: int, val_fraction: float, token_counter: str, teacher: str | None,
          teacher_model: str | None, as_json: bool) -> None:
    """Generate varied, realistic labelled windows rendered exactly as the pipeline prompts the model."""
    from logwarden.train.dataset import approx_tokens, build_dataset

    count, name = (approx_tokens, "approx") if token_counter == "approx" else _embedded_counter()
    relabel = None
    if teacher:
        from logwarden.train.teacher import teacher_relabeller

        relabel = teacher_relabeller(teacher, model_name=teacher_model)
    manifest = build_dataset(out, n=n, seed=seed, val_fraction=val_fraction, count_tokens=count,
                             tokenizer_name=name, relabel=relabel)
    err_console.print(f"wrote {manifest['counts']} examples to {out}", highlight=False)
    if as_json:
        print_json(manifest)


def _embedded_counter():
    """The embedded model's own token counts, read from its GGUF (no transformers needed)."""
    from logwarden.app.config import get_settings
    from logwarden.engine.embedded import PACKS, ensure_gguf
    from logwarden.engine.gguf_meta import read_metadata
    from logwarden.engine.gguf_tokenizer import token_counter

    counter = token_counter(read_metadata(ensure_gguf(PACKS["embedded"], get_settings().model_cache)))
    return counter.count, "embedded"

"""`logwarden dataset split|build`: the realdata split, and the training set (train/val JSONL + manifest).

`split` writes the deterministic by-file, by-source-group split of `../shared/realdata`
(`logwarden.train.realdata`); `build` renders generated windows through the pipeline's digest and
prompts (`logwarden.train.dataset`) and mixes in the split's train side unless `--no-realdata`;
`--teacher` relabels the generated part with a larger model via `logwarden.train.teacher`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from logwarden.app.config import get_settings
from logwarden.cli.common import err_console, handle_errors, print_json


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
@click.option("--realdata/--no-realdata", default=True, show_default=True,
              help="Mix in the train side of the realdata split (needs ../shared/realdata or $LOGWARDEN_SHARED).")
@click.option("--split", "split_path", type=click.Path(path_type=Path), default=None,
              help="The split file (default: data/realdata_split.json).")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON on stdout.")
@handle_errors
def build(out: Path, n: int, seed: int, val_fraction: float, token_counter: str, teacher: str | None,
          teacher_model: str | None, realdata: bool, split_path: Path | None, as_json: bool) -> None:
    """Generate varied, realistic labelled windows rendered exactly as the pipeline prompts the model."""
    from logwarden.engine.api import approx_tokens
    from logwarden.train.dataset import build_dataset
    from logwarden.train.realdata import SPLIT_FILE, load_split, train_examples

    count, name = (approx_tokens, "approx") if token_counter == "approx" else _embedded_counter()
    relabel = None
    if teacher:
        from logwarden.train.teacher import teacher_relabeller

        relabel = teacher_relabeller(teacher, model_name=teacher_model, cache_dir=get_settings().model_cache)
    extra = train_examples(load_split(split_path or SPLIT_FILE), count_tokens=count, seed=seed) if realdata else ()
    manifest = build_dataset(out, n=n, seed=seed, val_fraction=val_fraction, count_tokens=count,
                             tokenizer_name=name, relabel=relabel, extra_train=extra)
    err_console.print(f"wrote {manifest['counts']} examples to {out}", highlight=False)
    if as_json:
        print_json(manifest)


@dataset.command("split")
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="Where to write the split (default: data/realdata_split.json in the repository).")
@click.option("--check", is_flag=True, help="Do not write: exit 1 if the written split differs from a fresh one.")
@click.option("--json", "as_json", is_flag=True, help="Print the split's counts as JSON on stdout.")
@handle_errors
def split(out: Path | None, check: bool, as_json: bool) -> None:
    """Split ../shared/realdata into train and held-out, by file and source group (deterministic)."""
    from logwarden.train.realdata import SPLIT_FILE, build_split, load_split, write_split

    path = out or SPLIT_FILE
    if check:
        same = load_split(path) == json.loads(json.dumps(build_split()))
        err_console.print(f"{path}: {'up to date' if same else 'differs from the split the labels give now'}",
                          highlight=False)
        raise SystemExit(0 if same else 1)
    made = write_split(path)
    err_console.print(f"wrote {path}: {made['counts']}", highlight=False)
    if as_json:
        print_json(made["counts"])


def _embedded_counter():
    """The embedded model's own token counts, read from its GGUF (no transformers needed)."""
    from logwarden.engine.embedded import PACKS, ensure_gguf
    from logwarden.engine.gguf_meta import read_metadata
    from logwarden.engine.gguf_tokenizer import token_counter

    counter = token_counter(read_metadata(ensure_gguf(PACKS["embedded"], get_settings().model_cache)))
    return counter.count, "embedded"

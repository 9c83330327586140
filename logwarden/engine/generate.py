"""The generation loop, gpt-fast/nanochat style: `layout` → `prefill` → (`adjust` → `sample` →
`decode_step`)* for one left-padded batch, as a generator of per-step tokens. Batch `generate()`
and single-request `stream()` both consume this one loop.

Shapes: B = rows still running, P = shared prefix length (its KV comes from `prefix_cache`),
T = longest suffix, V = vocabulary (logits width). A sequence is [prefix][pad][suffix][new...];
pads are masked out and positions count only real tokens, so a row sees what it would see alone.
Finished rows are dropped from the cache (dynamic cache) so the batch shrinks as answers end.
Does not know: chat templates, tokenizers' text, schemas (only a `BatchConstraint`), stats.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from logwarden.engine.api import Sampling
from logwarden.engine.constrained import BatchConstraint
from logwarden.engine.prefix_cache import PrefixKV, cache_keyword, check_cache_filled, fill_cache


@dataclass(slots=True)
class Step:
    """Tokens produced by one forward pass, for the rows (original batch indices) still running."""

    rows: list[int]
    tokens: list[int]
    done: list[bool]  # no more tokens for this row
    finished: list[bool]  # ... because it ended on its own (stop token / grammar closed)


@dataclass(slots=True)
class Layout:
    input_ids: torch.Tensor  # (B, T) left-padded suffixes
    attention_mask: torch.Tensor  # (B, P + T) prefix ones, pad zeros, suffix ones
    position_ids: torch.Tensor  # (B, T) count of real tokens before each one


def layout(prefix_len: int, suffixes: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> Layout:
    width = max(len(s) for s in suffixes)
    ids = torch.full((len(suffixes), width), pad_id, dtype=torch.long)
    suffix_mask = torch.zeros((len(suffixes), width), dtype=torch.long)
    for row, suffix in enumerate(suffixes):
        ids[row, width - len(suffix):] = torch.tensor(list(suffix), dtype=torch.long)
        suffix_mask[row, width - len(suffix):] = 1
    mask = torch.cat([torch.ones((len(suffixes), prefix_len), dtype=torch.long), suffix_mask], dim=1)
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)[:, prefix_len:]  # pads get a harmless 0
    return Layout(ids.to(device), mask.to(device), positions.to(device))


def forward_last(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 position_ids: torch.Tensor, cache: Any, cache_kw: str = "cache") -> torch.Tensor:
    """One forward pass; only the last position's logits are computed. Returns (B, V) float32.
    `model` may be a compiled forward, hence the cache keyword comes from the caller."""
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                use_cache=True, logits_to_keep=1, **{cache_kw: cache})
    return out.logits[:, -1, :].float()


def prefill(model: Any, lay: Layout, cache: Any) -> torch.Tensor:
    """(B, T) suffix tokens on top of the prefix already in `cache` → (B, V) next-token logits."""
    logits = forward_last(model, lay.input_ids, lay.attention_mask, lay.position_ids, cache, cache_keyword(model))
    check_cache_filled(cache, lay.attention_mask.shape[1])
    return logits


def decode_step(model: Any, tokens: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor, cache: Any, cache_kw: str) -> torch.Tensor:
    """(B, 1) last tokens → (B, V) logits; the cache grows by one position."""
    return forward_last(model, tokens, attention_mask, position_ids, cache, cache_kw)


def adjust(logits: torch.Tensor, seen: torch.Tensor, rows: list[int], sampling: Sampling,
           constraint: BatchConstraint | None) -> torch.Tensor:
    """Repetition penalty (CTRL-style, as transformers does it), then the grammar mask, which
    `constraint.fill(rows)` must have computed. (B, V)."""
    if sampling.repetition_penalty != 1.0:
        penalty = sampling.repetition_penalty
        penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
        logits = torch.where(seen[rows, : logits.shape[1]], penalised, logits)
    if constraint is not None:
        constraint.apply(logits)
    return logits


def sample(logits: torch.Tensor, sampling: Sampling, generator: torch.Generator | None) -> torch.Tensor:
    """(B, V) logits → (B,) token ids. Temperature 0 is greedy."""
    if sampling.temperature <= 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits / sampling.temperature, dim=-1)
    if sampling.top_p < 1.0:
        probs = _top_p(probs, sampling.top_p)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def _top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    # keep the smallest set whose mass reaches top_p (the first token always survives)
    drop = sorted_probs.cumsum(dim=-1) - sorted_probs > top_p
    sorted_probs = sorted_probs.masked_fill(drop, 0.0)
    kept = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return kept / kept.sum(dim=-1, keepdim=True)


@dataclass(slots=True)
class BatchPlan:
    """What the loop needs; built by the engine from requests."""

    prefix: PrefixKV | None
    suffixes: list[list[int]]  # without a reused prefix these hold the whole prompt
    max_new_tokens: int
    stop_ids: frozenset[int]
    pad_id: int
    vocab_size: int
    prefix_ids: tuple[int, ...] = ()  # the reused prefix's tokens: the repetition penalty counts them too
    min_new_tokens: int = 0  # benchmarks: stop tokens are held back this long (random weights stop at random)


@torch.inference_mode()
def run_batch(model: Any, plan: BatchPlan, cache: Any, *, sampling: Sampling = Sampling(),
              constraint: BatchConstraint | None = None, seed: int | None = None,
              decoder: Any = None) -> Iterator[Step]:
    """Yield one `Step` per forward pass until every row stopped or the token budget is spent.
    `decoder`: what runs decode steps (e.g. a torch.compile'd forward); default the model."""
    device = model.device
    rows = list(range(len(plan.suffixes)))  # original index of each cache row
    prefix_len = plan.prefix.length if plan.prefix else 0
    if plan.prefix is not None:
        fill_cache(cache, plan.prefix, len(rows))
    lay = layout(prefix_len, plan.suffixes, plan.pad_id, device)
    seen = _seen_tokens(plan, device)
    generator = torch.Generator(device=device).manual_seed(seed) if seed is not None else None
    logits = prefill(model, lay, cache)  # (B, V)
    cache_kw = cache_keyword(model)
    mask, positions, live = lay.attention_mask, lay.position_ids[:, -1:], list(range(len(rows)))
    static = not _can_select(cache)
    if static:
        mask = _full_length_mask(mask, cache.get_max_length())
    filled = lay.attention_mask.shape[1]  # positions written to the cache so far
    for step in range(plan.max_new_tokens):
        live_rows = [rows[i] for i in live]
        if constraint is not None:  # CPU work first: the GPU is still computing `logits`
            constraint.fill(live_rows)
        current = logits if len(live) == logits.shape[0] else logits[live]  # static caches keep finished rows
        adjusted = adjust(current, seen, live_rows, sampling, constraint)
        if step < plan.min_new_tokens:
            adjusted = hold_stops(adjusted, plan.stop_ids)
        picked = sample(adjusted, sampling, generator)
        picked_ids = picked.tolist()  # the one host sync per step: the matchers need the tokens
        finished = _accept(picked, picked_ids, live_rows, plan, constraint, seen)
        done = [f or step == plan.max_new_tokens - 1 for f in finished]
        yield Step(rows=live_rows, tokens=picked_ids, done=done, finished=finished)
        live = [i for i, d in zip(live, done) if not d]
        if not live:
            return
        tokens = torch.full((len(rows),), plan.pad_id, dtype=torch.long, device=device)
        tokens[live] = picked[[j for j, d in enumerate(done) if not d]]
        rows, live, tokens, mask, positions = _shrink(cache, live, rows, tokens, mask, positions)
        mask = _open_next(mask, filled, static)
        filled += 1
        positions = positions + 1
        logits = decode_step(decoder or model, tokens.unsqueeze(1), mask, positions, cache, cache_kw)


def hold_stops(logits: torch.Tensor, stop_ids: frozenset[int]) -> torch.Tensor:
    """(B, V) → (B, V) with stop tokens forbidden in every row where another token is allowed;
    a row whose grammar admits only the stop keeps it, so a closed document still ends."""
    ids = torch.tensor(sorted(stop_ids), dtype=torch.long, device=logits.device)
    held = logits.index_fill(1, ids, float("-inf"))
    open_rows = torch.isfinite(held).any(dim=1, keepdim=True)  # (B, 1)
    return torch.where(open_rows, held, logits)


def _full_length_mask(mask: torch.Tensor, cache_len: int) -> torch.Tensor:
    """(B, P + T) → (B, cache_len) with the future zeroed: a static cache wants one mask shape
    for every decode step, so a compiled step is traced once, not once per length."""
    return torch.cat([mask, mask.new_zeros((mask.shape[0], cache_len - mask.shape[1]))], dim=1)


def _open_next(mask: torch.Tensor, filled: int, static: bool) -> torch.Tensor:
    """Unmask the position the next decode step writes: (B, filled + 1), or in place if static."""
    if static:
        mask[:, filled] = 1
        return mask
    return torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)


def _seen_tokens(plan: BatchPlan, device: torch.device) -> torch.Tensor:
    """(B, V) bool: tokens each row has seen, for the repetition penalty."""
    seen = torch.zeros((len(plan.suffixes), plan.vocab_size), dtype=torch.bool, device=device)
    seen[:, torch.tensor(plan.prefix_ids, dtype=torch.long, device=device)] = True
    for row, suffix in enumerate(plan.suffixes):
        seen[row, torch.tensor(suffix, device=device)] = True
    return seen


def _accept(picked: torch.Tensor, tokens: list[int], rows: list[int], plan: BatchPlan,
            constraint: BatchConstraint | None, seen: torch.Tensor) -> list[bool]:
    """Feed the batch's tokens to the matchers in one call; True where the row ended on its own.
    `picked` (B,) on the device and `tokens` the same ids on the host."""
    seen[torch.tensor(rows, device=seen.device), picked] = True  # one scatter, not one launch per row
    if constraint is None:
        return [token in plan.stop_ids for token in tokens]
    constraint.accept_many(rows, tokens)
    return [token in plan.stop_ids or constraint.terminated(row) for token, row in zip(tokens, rows)]


def _shrink(cache: Any, live: list[int], rows: list[int], tokens: torch.Tensor, mask: torch.Tensor,
            positions: torch.Tensor) -> tuple[list[int], list[int], torch.Tensor, torch.Tensor, torch.Tensor]:
    """Drop finished rows so later steps compute only live sequences. A static cache keeps its
    shape (compiled graphs depend on it): its finished rows decode padding nobody reads."""
    if len(live) == len(rows) or not _can_select(cache):
        return rows, live, tokens, mask, positions
    index = torch.tensor(live, device=tokens.device)
    cache.batch_select_indices(index)
    kept = [rows[i] for i in live]
    return kept, list(range(len(kept))), tokens[index], mask[index], positions[index]


def _can_select(cache: Any) -> bool:
    return not getattr(cache, "is_compileable", False)

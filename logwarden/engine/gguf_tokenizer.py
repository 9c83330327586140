"""Token counting for a GGUF model without torch or transformers: the vocabulary stored in the
file rebuilt as a Hugging Face `tokenizers` byte-level BPE.

Owns: mapping llama.cpp's `tokenizer.ggml.*` keys (tokens, merges, token types, pre-tokenizer
name) to a `tokenizers.Tokenizer` that splits text exactly as llama.cpp does, so prompt budgets
count what the model will see. The pre-tokenizer regexes are llama.cpp's (`llama-vocab.cpp`);
a vocabulary type or pre-tokenizer not listed here gets an estimate, flagged by `exact`.
Does not know: chat templates, generation, llama.cpp itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

# llama.cpp's LLAMA_VOCAB_PRE_TYPE_* split patterns, by the name GGUF stores in tokenizer.ggml.pre
_QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
PRE_TOKENIZERS = {"qwen2": _QWEN2, "deepseek-r1-qwen": _QWEN2, "llama-bpe": _LLAMA3, "gpt-2": _GPT2,
                  "default": _GPT2}
CONTROL, USER_DEFINED = 3, 4  # llama.cpp token types that are matched whole, never split
CHARS_PER_TOKEN = 3.5  # the estimate for vocabularies this module cannot rebuild


@dataclass(frozen=True, slots=True)
class TokenCounter:
    count: Callable[[str], int]
    exact: bool  # False: an estimate (unsupported vocabulary type or pre-tokenizer)
    kind: str
    tokenizer_json: str | None = None  # the rebuilt tokenizer, as `counter_from_json` reads it back


def token_counter(metadata: dict[str, Any]) -> TokenCounter:
    """Counts tokens of plain text (special-token markers in it count as one token, as llama.cpp
    parses them in a chat prompt)."""
    model, pre = metadata.get("tokenizer.ggml.model"), metadata.get("tokenizer.ggml.pre", "default")
    if model != "gpt2" or "tokenizer.ggml.merges" not in metadata:
        return TokenCounter(_estimate, exact=False, kind=f"estimate ({model} vocabulary)")
    tokenizer = byte_level_bpe(metadata, PRE_TOKENIZERS.get(pre, _GPT2))
    return _counting(tokenizer, exact=pre in PRE_TOKENIZERS, kind=f"bpe/{pre}", tokenizer_json=tokenizer.to_str())


def counter_from_json(tokenizer_json: str | None, *, exact: bool, kind: str) -> TokenCounter:
    """The counter `token_counter` built, from its saved tokenizer (None: the estimate)."""
    if tokenizer_json is None:
        return TokenCounter(_estimate, exact=exact, kind=kind)
    return _counting(Tokenizer.from_str(tokenizer_json), exact=exact, kind=kind, tokenizer_json=tokenizer_json)


def _counting(tokenizer: Tokenizer, *, exact: bool, kind: str, tokenizer_json: str) -> TokenCounter:
    return TokenCounter(lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids),
                        exact=exact, kind=kind, tokenizer_json=tokenizer_json)


def byte_level_bpe(metadata: dict[str, Any], pattern: str) -> Tokenizer:
    tokens: list[str] = metadata["tokenizer.ggml.tokens"]
    kinds: list[int] = metadata.get("tokenizer.ggml.token_type", [])
    merges = [tuple(m.split(" ", 1)) for m in metadata["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges,
                                     byte_fallback=False, ignore_merges=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                                  for i, kind in enumerate(kinds) if kind == CONTROL])
    tokenizer.add_tokens([AddedToken(tokens[i], special=False, normalized=False)
                          for i, kind in enumerate(kinds) if kind == USER_DEFINED])
    return tokenizer


def _estimate(text: str) -> int:
    return round(len(text) / CHARS_PER_TOKEN)

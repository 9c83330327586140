"""Incremental detokenization for streaming: token ids in, text pieces out.

A byte-level BPE token can end in the middle of a multi-byte UTF-8 character; decoding it alone
gives U+FFFD. So a piece is released only when the decoded text no longer ends in an incomplete
character, and only the part that extends what was already released. The pieces therefore join to
exactly `decode(all tokens)`, the text the batch path returns.
Owns: that invariant. Does not know: models, sampling or where the tokens come from.
"""

from __future__ import annotations

from typing import Any

_INCOMPLETE = "\ufffd"


class Detokenizer:
    def __init__(self, tokenizer: Any):
        self._tokenizer = tokenizer
        self.tokens: list[int] = []
        self.emitted = ""

    def decode(self, tokens: list[int]) -> str:
        return self._tokenizer.decode(tokens, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    def push(self, token_id: int) -> str:
        """Add one token; return the newly completed text (often "", never a partial character)."""
        self.tokens.append(token_id)
        # Re-decoding the whole answer is O(n) per token; answers are a few hundred tokens and the
        # Rust decoder does that in microseconds, far below one model step.
        text = self.decode(self.tokens)
        if text.endswith(_INCOMPLETE) or not text.startswith(self.emitted):
            return ""
        return self._release(text)

    def flush(self) -> str:
        """At the end: whatever remains, including a genuinely invalid trailing byte sequence."""
        text = self.decode(self.tokens)
        return self._release(text) if text.startswith(self.emitted) else ""

    def _release(self, text: str) -> str:
        piece = text[len(self.emitted):]
        self.emitted = text
        return piece

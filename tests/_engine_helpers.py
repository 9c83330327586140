"""Fixtures for engine tests (and anyone who needs a fast fake model): a tiny random Qwen2 with
the real 151,936-token vocabulary and the REAL Qwen tokenizer, taken from the embedded model's
verified, converted cache (`engine.embedded`), so chat templates and byte-level BPE are real.

Import the fixtures into a test module: `from _engine_helpers import qwen_tokenizer, tiny_model,
tiny_engine`. Building the model takes well under a second; the tokenizer loads once per session.
"""

from __future__ import annotations

import pytest
import torch

from logwarden.app.triage import prepare
from logwarden.engine.api import Request
from logwarden.prompts import system_prompt

# What the pipeline really sends: the shipped system prompt, and the digests `app.triage.prepare`
# builds for an sshd burst ending in a success and for one sqlmap request (rules fired included).
ANALYST_SYSTEM = system_prompt()
SSHD_LINES = "\n".join(
    [f"Mar 11 02:14:{7 + i:02d} web-01 sshd[{2211 + i}]: Failed password for root from 203.0.113.45 port {49822 + i} ssh2"
     for i in range(6)] + ["Mar 11 02:16:51 web-01 sshd[2398]: Accepted password for admin from 203.0.113.45 port 50122 ssh2"])
SQLI_LINE = ('198.51.100.23 - - [02/May/2024:10:01:13 +0000] "GET /products.php?id=1%27%20UNION%20SELECT%20username,'
             'password%20FROM%20users--%20 HTTP/1.1" 200 5123 "-" "sqlmap/1.7.2#stable (https://sqlmap.org)"')
SSHD_USER = prepare(SSHD_LINES).prompt
SQLI_USER = prepare(SQLI_LINE).prompt

SAMPLE_REQUESTS = [Request(ANALYST_SYSTEM, SSHD_USER), Request(ANALYST_SYSTEM, SQLI_USER)]


def build_tiny_qwen(seed: int = 0, init_std: float = 0.2):
    """hidden 64, 2 layers, 4 heads, 2 KV heads, the real vocabulary; random weights.

    initializer_range 0.2 (not the default 0.02) so the output depends on the context: with tiny
    weights every prompt yields the same repeated token and identity tests would prove nothing."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=151_936, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         tie_word_embeddings=True, initializer_range=init_std, bos_token_id=151643, eos_token_id=151645,
                         pad_token_id=151643)
    config._attn_implementation = "sdpa"
    return Qwen2ForCausalLM(config).eval()


def embedded_folder():
    from logwarden.app.config import get_settings
    from logwarden.engine.embedded import PACKS, ensure_converted

    return ensure_converted(PACKS["embedded"], get_settings().model_cache)


@pytest.fixture(scope="session")
def qwen_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(embedded_folder())


@pytest.fixture(scope="session")
def tiny_model():
    return build_tiny_qwen()


@pytest.fixture
def tiny_engine(tiny_model, qwen_tokenizer):
    from logwarden.engine.local import EngineInfo, LocalEngine

    return LocalEngine(tiny_model, qwen_tokenizer, info=EngineInfo(model_name="tiny-random-qwen2"))

"""The GGUF header cache (engine/gguf_cache.py): a second start reads the entry, not the header;
an entry of another sha256, format or a damaged one is rebuilt; no sha256 or folder, no cache."""

from __future__ import annotations

import json

import gguf
import numpy as np
import pytest

from logwarden.engine import gguf_cache
from logwarden.engine.gguf_cache import DISABLE_VARIABLE, header_facts

SHA = "ab" * 32


def _toy_gguf(path, *, name="toy"):
    """A real GGUF file with a byte-level BPE vocabulary that knows 'ab' and 'abc'."""
    t = gguf.GGUFValueType
    writer = gguf.GGUFWriter(path, arch="qwen2")
    writer.add_name(name)
    writer.add_key_value("tokenizer.ggml.model", "gpt2", t.STRING)
    writer.add_key_value("tokenizer.ggml.pre", "qwen2", t.STRING)
    writer.add_key_value("tokenizer.ggml.tokens", ["a", "b", "c", "Ġ", "ab", "abc", "<|im_end|>"], t.ARRAY, t.STRING)
    writer.add_key_value("tokenizer.ggml.token_type", [1] * 6 + [3], t.ARRAY, t.INT32)
    writer.add_key_value("tokenizer.ggml.merges", ["a b", "ab c"], t.ARRAY, t.STRING)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture
def header_reads(monkeypatch):
    """How many times the GGUF header itself was read."""
    reads = []
    real = gguf_cache.read_metadata
    monkeypatch.setattr(gguf_cache, "read_metadata", lambda path: reads.append(path) or real(path))
    monkeypatch.delenv(DISABLE_VARIABLE, raising=False)
    return reads


def test_a_second_start_reads_the_entry_not_the_header(tmp_path, header_reads):
    model = _toy_gguf(tmp_path / "m.gguf")
    first = header_facts(model, sha256=SHA, cache_dir=tmp_path / "headers")
    second = header_facts(model, sha256=SHA, cache_dir=tmp_path / "headers")
    assert len(header_reads) == 1 and (tmp_path / "headers" / f"{SHA}.json").is_file()
    assert second.metadata == first.metadata and second.metadata["general.name"] == "toy"
    assert "tokenizer.ggml.tokens" not in second.metadata  # arrays stay in the file
    assert (second.tokens.kind, second.tokens.exact) == (first.tokens.kind, first.tokens.exact) == ("bpe/qwen2", True)
    for text in ("abc", "ba", "abc<|im_end|>", "ab ab c"):
        assert second.tokens.count(text) == first.tokens.count(text)


def test_another_models_bytes_get_their_own_entry(tmp_path, header_reads):
    header_facts(_toy_gguf(tmp_path / "a.gguf", name="first"), sha256=SHA, cache_dir=tmp_path)
    other = header_facts(_toy_gguf(tmp_path / "b.gguf", name="second"), sha256="cd" * 32, cache_dir=tmp_path)
    assert other.metadata["general.name"] == "second" and len(header_reads) == 2


@pytest.mark.parametrize("damage", [
    lambda entry: entry.write_text("{not json"),
    lambda entry: entry.write_text(json.dumps({**json.loads(entry.read_text()), "format": 0})),
    lambda entry: entry.write_text(json.dumps({**json.loads(entry.read_text()), "sha256": "ef" * 32})),
    lambda entry: entry.write_text(json.dumps({**json.loads(entry.read_text()), "tokenizer": "{}"})),
])
def test_a_stale_or_damaged_entry_is_rebuilt_from_the_header(tmp_path, header_reads, damage):
    model = _toy_gguf(tmp_path / "m.gguf")
    header_facts(model, sha256=SHA, cache_dir=tmp_path)
    damage(tmp_path / f"{SHA}.json")
    again = header_facts(model, sha256=SHA, cache_dir=tmp_path)
    assert len(header_reads) == 2 and again.tokens.count("abc") == 1
    assert json.loads((tmp_path / f"{SHA}.json").read_text())["format"] == gguf_cache.FORMAT  # written anew


def test_no_sha256_no_folder_or_the_switch_means_no_cache(tmp_path, header_reads, monkeypatch):
    model = _toy_gguf(tmp_path / "m.gguf")
    header_facts(model, sha256=None, cache_dir=tmp_path / "a")
    header_facts(model, sha256=SHA, cache_dir=None)
    monkeypatch.setenv(DISABLE_VARIABLE, "1")
    header_facts(model, sha256=SHA, cache_dir=tmp_path / "b")
    assert len(header_reads) == 3 and not (tmp_path / "a").exists() and not (tmp_path / "b").exists()

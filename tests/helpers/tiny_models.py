"""Tiny random-weight models built from a config (no download), sharing the real SmolLM2
tokenizer so that prompts, templates and stop ids behave as in the real app."""

from pathlib import Path

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM


def tiny_llama_config(vocab_size: int = 49152) -> LlamaConfig:
    """2 layers, 4 query heads, 2 KV heads (GQA), head_dim 16, 512 positions."""
    return LlamaConfig(vocab_size=vocab_size, hidden_size=64, intermediate_size=128,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                       max_position_embeddings=512, tie_word_embeddings=True,
                       bos_token_id=1, eos_token_id=2, pad_token_id=2)


def build_tiny_llama(folder: Path, tokenizer_source: Path, seed: int = 0) -> Path:
    """Save a random-weight tiny Llama plus the tokenizer from `tokenizer_source` to `folder`."""
    torch.manual_seed(seed)
    model = LlamaForCausalLM(tiny_llama_config())
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_source).save_pretrained(folder)
    return folder

"""Tiny GGUF files written by the tests themselves (no download): a random-weight tiny Llama
saved the way llama.cpp's convert_hf_to_gguf.py saves it — q/k rows permuted for its rotary
layout, names from gguf's tensor map — with a small byte-level BPE vocabulary and a chat
template, so transformers can build the tokenizer from the file alone."""

from pathlib import Path

import gguf
import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEMPLATE = ("{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n'}}"
            "{% endfor %}{% if add_generation_prompt %}{{'<|im_start|>assistant\n'}}{% endif %}")


def _byte_tokens() -> list[str]:
    """GPT-2's byte → unicode table (every byte one printable character)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def tiny_config(vocab: int) -> LlamaConfig:
    return LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                       rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False,
                       bos_token_id=258, eos_token_id=260, pad_token_id=258)


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute (what transformers reverses)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_tiny_gguf(path: Path, qtype: str = "F32", seed: int = 0, architecture: str = "llama",
                    extra_tensor: tuple[str, int] | None = None) -> LlamaForCausalLM:
    """Write a tiny Llama GGUF to `path`; 2-D weights stored as `qtype` ("F32", "F16", "Q8_0",
    "Q4_0"), norms in F32. Returns the HF model the file was made from (float32).
    extra_tensor: (name, ggml type id) of one more 32-element tensor, to test refusals."""
    tokens = _byte_tokens() + ["Ġt", "he"] + SPECIAL
    config = tiny_config(len(tokens))
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name("tiny-llama")
    writer.add_block_count(2)
    writer.add_context_length(512)
    writer.add_embedding_length(64)
    writer.add_feed_forward_length(128)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_dimension_count(16)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * 258 + [3] * len(SPECIAL))
    writer.add_token_merges(["Ġ t", "h e"])
    writer.add_bos_token_id(258)
    writer.add_eos_token_id(260)
    writer.add_chat_template(TEMPLATE)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
    for hf_name, tensor in model.state_dict().items():
        data = tensor.detach().float().numpy()
        base = names.get_name(hf_name.removesuffix(".weight"))
        if ".q_proj" in hf_name:
            data = _permute(data, 4)
        elif ".k_proj" in hf_name:
            data = _permute(data, 2)
        kind = gguf.GGMLQuantizationType[qtype] if data.ndim == 2 else gguf.GGMLQuantizationType.F32
        stored = gguf.quants.quantize(np.ascontiguousarray(data), kind)
        writer.add_tensor(f"{base}.weight", stored, raw_dtype=kind)
    if extra_tensor is not None:
        name, type_id = extra_tensor
        writer.add_tensor_info(name, (32,), np.dtype(np.int8), 32, raw_dtype=gguf.GGMLQuantizationType(type_id))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    if extra_tensor is None:
        writer.write_tensors_to_file()
    else:  # header only: refused before any tensor data is read
        writer.write_ti_data_to_file()
    writer.close()
    return model

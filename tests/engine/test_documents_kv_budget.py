"""Admission's side of a document's budget: the largest document the KV cache can take this turn."""

from transformers import LlamaConfig

from app.engine.documents.kv_budget import kv_document_tokens, with_extra_prompt
from app.engine.memory.admission import admit_turn, project_turn_peak, safety_margin
from app.engine.memory.calibration import Calibration
from app.engine.memory.prefill_spike import PrefillModel
from app.engine.memory.units import GiB, MiB

LLAMA3_8B = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                        num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192)


def turn(prompt: int = 200, resident: int = 1_000):
    model = PrefillModel.from_config(LLAMA3_8B, 2, quantized_4bit=True)
    return project_turn_peak(model, Calibration(), now_allocated=6 * GiB, prompt_tokens=prompt, max_new_tokens=512,
                             resident_tokens=resident, chunk_size=None, full_context_tokens=8_192)


def admitted(projection, free: int, total: int) -> bool:
    b = projection.basis
    return admit_turn(projection, free, safety_margin(total), 1 << 20, b.prompt_tokens, b.max_new_tokens,
                      None).admitted


def test_extra_prompt_keeps_the_cached_prefix_and_grows_kv_by_the_layout():
    base = turn()
    bigger = with_extra_prompt(base, 1_000)
    assert bigger.basis.resident_tokens == 1_000 and bigger.basis.prompt_tokens == 1_200
    assert bigger.kv_for_turn - base.kv_for_turn == 1_000 * 131_072  # 32 layers × 8 heads × 128 × 2 × 2 B


def test_largest_document_is_the_edge_of_admission():
    total, free = 16 * GiB, 1 * GiB
    base = turn()
    d = kv_document_tokens(base, free, total, safety_margin(total), 100_000)
    assert 0 < d < 100_000
    assert admitted(with_extra_prompt(base, d), free, total)
    assert not admitted(with_extra_prompt(base, d + 1), free, total)


def test_plenty_of_memory_caps_at_upper_and_none_gives_zero():
    base = turn()
    assert kv_document_tokens(base, 40 * GiB, 80 * GiB, safety_margin(80 * GiB), 4_992) == 4_992
    assert kv_document_tokens(base, 100 * MiB, 16 * GiB, safety_margin(16 * GiB), 4_992) == 0
    assert kv_document_tokens(base, 40 * GiB, 80 * GiB, safety_margin(80 * GiB), 0) == 0

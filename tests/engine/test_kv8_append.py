"""A decode step's keys and values into the 8-bit cache in one launch (app.engine.local.kv8_append):
the kernel writes what `kv_quant.quantize` + ``index_copy_`` write (the Triton interpreter on the
CPU), and the compiled decode step calls the op once per layer instead of six kernels."""

import os
import threading

import pytest
import torch

from app.engine.local import kv8_append as ka
from app.engine.local import kv_quant
from app.engine.local.compiled_decode import warm_up
from app.engine.local.generation import SamplingParams, stream_chat_reply
from app.engine.local.kv_session import KVSession
from tests.helpers.dynamo_graphs import counting_compiler, layer_graphs

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1" and ka.triton is not None
_CUDA = torch.cuda.is_available() and ka.triton is not None
DEVICE = "cuda" if _CUDA else "cpu"


def _cache(d, capacity=10, batch=1, heads=2):
    return (torch.zeros(batch, heads, capacity, kv_quant.packed_dim(d), dtype=torch.int8, device=DEVICE),
            torch.zeros(batch, heads, capacity, kv_quant.packed_dim(d), dtype=torch.int8, device=DEVICE))


def _vectors(d, seed, dtype=torch.float16, batch=1, heads=2):
    g = torch.Generator().manual_seed(seed)
    key = torch.randn(batch, heads, 1, d, generator=g) * 3
    key[..., 5] = 40.0  # an outlier channel, as Llama keys have: the rotation spreads it
    return key.to(DEVICE, dtype), torch.randn(batch, heads, 1, d, generator=g).to(DEVICE, dtype)


def _as_projected(states):
    """The (B, Hkv, 1, d) view a projection gives after ``view(B, 1, Hkv, d).transpose(1, 2)``, out
    of a wider buffer: head stride d, batch stride (Hkv + 3)·d, NaN around it."""
    b, h, _, d = states.shape
    wide = torch.full((b, 1, h + 3, d), float("nan"), dtype=states.dtype, device=states.device)
    wide[:, :, :h] = states.transpose(1, 2)
    return wide[:, :, :h].transpose(1, 2)


def _inside_a_longer_run(states):
    """The same values as one token of a (B, Hkv, 5, d) buffer: head stride 5·d, NaN around it."""
    b, h, _, d = states.shape
    run = torch.full((b, h, 5, d), float("nan"), dtype=states.dtype, device=states.device)
    run[:, :, 2:3] = states
    return run[:, :, 2:3]


@pytest.mark.skipif(not (_INTERPRETED or _CUDA), reason="needs Triton: CUDA, or TRITON_INTERPRET=1")
@pytest.mark.parametrize("d,batch,heads,layout", [
    (64, 1, 2, "contiguous"),  # 4 vectors: one tile, 12 rows masked
    (128, 1, 8, "contiguous"),  # Llama-3-8B: 8 keys and 8 values, exactly one tile
    (32, 2, 12, "projected"),  # 48 vectors over 3 tiles, the second holding keys and values
    (128, 1, 3, "projected"),  # key and value views with strides unlike each other and the cache's
])
def test_the_kernel_writes_what_quantize_and_index_copy_write(d, batch, heads, layout, monkeypatch):
    monkeypatch.setattr(ka, "triton_failure", "")
    key, value = _vectors(d, seed=d + heads, batch=batch, heads=heads)
    if layout == "projected":
        key, value = _as_projected(key), _inside_a_longer_run(value)
        assert key.stride(1) == d and value.stride(1) == 5 * d and key.stride(0) != value.stride(0)
    first = torch.tensor([6], device=DEVICE)
    want_keys, want_values = _cache(d, batch=batch, heads=heads)
    ka.kv8_append(key, value, want_keys, want_values, first)  # the torch path (CPU, or kernel_applies)
    if not _CUDA:
        monkeypatch.setattr(ka, "kernel_applies", lambda vectors, packed: packed.dtype == torch.int8)
    launched = []
    real = ka._launched
    monkeypatch.setattr(ka, "_launched", lambda *args: launched.append(1) or real(*args))
    got_keys, got_values = _cache(d, batch=batch, heads=heads)
    ka.kv8_append(key, value, got_keys, got_values, first)
    assert launched and ka.triton_failure == ""
    for got, want in ((got_keys, want_keys), (got_values, want_values)):
        assert torch.count_nonzero(got[:, :, :6]) == torch.count_nonzero(got[:, :, 7:]) == 0  # only row 6
        codes, scale = kv_quant.unpack(got[:, :, 6:7])
        want_codes, want_scale = kv_quant.unpack(want[:, :, 6:7])
        assert torch.allclose(scale, want_scale, rtol=1e-6) and float(scale.min()) > 0
        assert (codes.int() - want_codes.int()).abs().max() <= 1  # summation order, ties
        assert (codes != want_codes).float().mean() < 0.02
        back = kv_quant.rotate(kv_quant.dequantize(got[:, :, 6:7], torch.float32))
        source = (key if got is got_keys else value).float()
        assert float((back - source).norm() / source.norm()) < 1e-2


def test_the_op_is_the_cache_write_on_the_cpu():
    """Without the kernel (CPU): quantize and index_copy_, at the counter's position."""
    key, value = (t.cpu() for t in _vectors(64, seed=3, dtype=torch.float32))
    keys, values = (t.cpu() for t in _cache(64))
    ka.kv8_append(key, value, keys, values, torch.tensor([2]))
    assert torch.equal(keys[:, :, 2:3], kv_quant.quantize(key))
    assert torch.equal(values[:, :, 2:3], kv_quant.quantize(value))
    assert torch.count_nonzero(keys[:, :, :2]) == torch.count_nonzero(keys[:, :, 3:]) == 0


def test_the_compiled_8bit_step_writes_the_cache_with_one_op_per_layer(tiny_loaded):
    """Each layer's cache write is one ``headroom::kv8_append`` in the traced graph, not the
    absmax, quantize and index_copy kernels of keys and values; answers as eager."""
    torch._dynamo.reset()
    graphs = []
    decoder = warm_up(tiny_loaded, (64,), compiler=counting_compiler(graphs), require_cuda=False, kv_bits=(8,))
    assert decoder.status.state == "ready" and decoder.status.kv_bits == (8,)
    targets = [str(n.target) for gm in layer_graphs(graphs) for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count("headroom.kv8_append.default") == len(layer_graphs(graphs)) >= 1  # one layer per graph
    assert not any("index_copy" in t for t in targets)
    params = SamplingParams(max_new_tokens=6, temperature=0)
    question = [{"role": "user", "content": "What is the capital of France?"}]
    compiled = list(stream_chat_reply(tiny_loaded, question, params, threading.Event(), decoder=decoder,
                                      session=KVSession(capacity_tokens=128, static=True, kv_bits=8)))[-1]
    eager = list(stream_chat_reply(tiny_loaded, question, params, threading.Event(),
                                   session=KVSession(capacity_tokens=128, static=True, kv_bits=8)))[-1]
    assert compiled.decode_path == "compiled" and compiled.text == eager.text and compiled.new_tokens == 6
    torch._dynamo.reset()


@pytest.mark.skipif(ka.triton is None or _INTERPRETED,
                    reason="needs Triton, not its interpreter (compiles for sm_90 without a GPU)")
def test_the_kernel_compiles_for_hopper_and_stores_the_scale_as_one_word():
    import re

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {"k_ptr": "*bf16", "v_ptr": "*bf16", "keys_ptr": "*i8", "values_ptr": "*i8", "first_ptr": "*i64",
           "signs_ptr": "*bf16", "rot_scale": "fp32", "vectors": "i32", "heads": "i32"}
    sig.update({name: "i32" for name in ("stride_kb", "stride_kh", "stride_vb", "stride_vh", "stride_cb",
                                          "stride_ch", "stride_cs", "stride_db", "stride_dh", "stride_ds")})
    consts = {"D": 128, "ROWS": ka.VECTORS, "CHUNK": ka.ROTATE_CHUNK}
    sig.update({name: "constexpr" for name in consts})
    names = list(sig)
    source = ASTSource(fn=ka._append_kernel, signature=sig,
                       constexprs={(names.index(n),): v for n, v in consts.items()},
                       attrs={(names.index(n),): [["tt.divisibility", 16]] for n in names if sig[n].startswith("*")})
    ptx = ka.triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["ptx"]
    assert re.search(r"st\.global(\.\w+)*\.b32", ptx)  # the float32 scale
    assert re.search(r"mma\.sync\.aligned\.\w+\.row\.col\.f32\.bf16\.bf16\.f32", ptx)  # the rotation: tensor cores

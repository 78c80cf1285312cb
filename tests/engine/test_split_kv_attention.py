"""The 8-bit decode attention (app.engine.local.split_kv_attention) against the products it replaced.

The Triton kernel runs where Triton can: on CUDA, or on the CPU under Triton's interpreter
(``TRITON_INTERPRET=1`` with triton installed, as checked by hand on this 2-core box); CI has
neither, and runs the torch path."""

import os

import pytest
import torch

from app.engine.local import kv_quant
from app.engine.local import split_kv_attention as kd


def _old_products(q, key, value, valid, scale):
    """The decode of attention.py before kv8_decode, verbatim in its math: the whole cache cast."""
    key_codes, key_scale = kv_quant.unpack(key)
    value_codes, value_scale = kv_quant.unpack(value)
    scores = torch.matmul(q, key_codes.to(q.dtype).transpose(2, 3)).float()
    scores = scores * (key_scale.transpose(2, 3) * scale)
    if valid is not None:
        scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1) * value_scale.transpose(2, 3)
    return torch.matmul(probs.to(q.dtype), value_codes.to(q.dtype))


def _case(span=300, heads=2, groups=4, d=64, dtype=torch.float32, filled=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, heads, groups, d, generator=g).to(dtype)
    key = kv_quant.quantize(torch.randn(1, heads, span, d, generator=g) * 2)
    value = kv_quant.quantize(torch.randn(1, heads, span, d, generator=g))
    valid = None
    if filled is not None:
        valid = (torch.arange(span) < filled).view(1, span)
    return q, key, value, valid


@pytest.mark.parametrize("filled", [None, 1, 137, 300])
def test_reference_in_blocks_is_the_whole_cache_products(filled, monkeypatch):
    monkeypatch.setattr(kd, "REFERENCE_BLOCK", 64)  # five blocks, the last one partial
    q, key, value, valid = _case(filled=filled)
    got = kd.reference(q, key, value, valid, 0.125)
    want = _old_products(q, key, value, valid, 0.125)
    assert got.shape == (1, 2, 4, 64)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_reference_casts_one_block_at_a_time(monkeypatch):
    monkeypatch.setattr(kd, "REFERENCE_BLOCK", 64)
    seen = []
    unpack = kv_quant.unpack

    def spy(packed):
        seen.append(packed.shape[2])
        return unpack(packed)

    monkeypatch.setattr(kv_quant, "unpack", spy)
    kd.reference(*_case(), 0.125)
    assert max(seen) == 64 and sum(seen) == 2 * 300


def test_the_op_serves_the_cpu_and_the_model_path():
    q, key, value, valid = _case(filled=200)
    got = torch.ops.headroom.kv8_decode(q, key, value, valid, 0.125)  # query and output in the model's basis
    want = kv_quant.rotate(_old_products(kv_quant.rotate(q), key, value, valid, 0.125))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert not kd.triton_applies(q, key)  # the CPU: torch path


def test_splits_fill_the_gpu_and_keep_two_tiles_each():
    assert kd.splits_for(64, 8) == 1
    assert kd.splits_for(4096, 8) == 32  # 4096 keys / (2 × 64)
    assert kd.splits_for(100_000, 8) == 33  # two waves of 132 SMs over 8 heads
    assert kd.splits_for(100_000, 264) == 1


_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1" and kd.triton is not None
_CUDA = torch.cuda.is_available() and kd.triton is not None
needs_triton = pytest.mark.skipif(not (_INTERPRETED or _CUDA), reason="needs Triton: CUDA, or TRITON_INTERPRET=1")
DEVICE = "cuda" if _CUDA else "cpu"
# the interpreter emulates bf16 casts wrongly (numpy has no bf16): fp16 there, bf16 on CUDA
DTYPE = torch.bfloat16 if _CUDA else torch.float16


@pytest.fixture
def kernel_everywhere(monkeypatch):
    """On the CPU under the interpreter, let the Triton path run (it checks for CUDA)."""
    if not _CUDA:
        monkeypatch.setattr(kd, "triton_applies", lambda query, key: key.dtype == torch.int8)
    monkeypatch.setattr(kd, "triton_failure", "")
    monkeypatch.setattr(kd, "_checked", set())


@needs_triton
@pytest.mark.parametrize("filled", [None, 1, 150, 299])
def test_triton_decode_matches_the_reference(filled, kernel_everywhere):
    q, key, value, valid = _case(span=299, d=64, dtype=DTYPE, filled=filled, seed=3)
    q, key, value = q.to(DEVICE), key.to(DEVICE), value.to(DEVICE)
    valid = None if valid is None else valid.to(DEVICE)
    got = kd.kv8_decode(q, key, value, valid, 0.125).float()  # rotates in and out inside the kernels
    assert kd.triton_failure == ""
    want = kv_quant.rotate(kd.reference(kv_quant.rotate(q), key, value, valid, 0.125)).float()
    assert (got - want).abs().max() < 2e-2  # half-precision outputs; the kernel keeps scores in float32
    assert torch.nn.functional.cosine_similarity(got.flatten(), want.flatten(), dim=0) > 0.9999


@needs_triton
@pytest.mark.parametrize("filled", [None, 150])
@pytest.mark.parametrize("span", [299, 40])
def test_the_kernel_reads_a_16_bit_cache_as_the_torch_products_do(span, filled, kernel_everywhere, monkeypatch):
    """kv16_decode: keys split over programs (299) or one span (40), some masked or none."""
    monkeypatch.setattr(kd, "kv16_applies", lambda q, k, v: True)
    q, key, value, valid = _case(span=span, d=64, dtype=DTYPE, filled=filled and min(filled, span - 3), seed=6)
    key, value = kv_quant.dequantize(key, DTYPE), kv_quant.dequantize(value, DTYPE)
    valid = None if valid is None else valid.to(DEVICE)
    got = kd.kv16_decode(q.to(DEVICE), key.to(DEVICE), value.to(DEVICE), valid, 0.125).float().cpu()
    assert kd.triton_failure == ""
    scores = (q.float() @ key.float().transpose(2, 3)) * 0.125
    if valid is not None:
        scores = scores.masked_fill(~valid.cpu()[:, None, None, :], float("-inf"))
    want = scores.softmax(-1) @ value.float()
    assert (got - want).abs().max() < 2e-2
    assert torch.nn.functional.cosine_similarity(got.flatten(), want.flatten(), dim=0) > 0.9999


@needs_triton
def test_a_mask_with_holes_and_empty_spans_reads_as_the_torch_products(kernel_everywhere, monkeypatch):
    """kv16_decode over 299 slots in 3 spans of 128 keys: valid keys with holes in the first span,
    the last valid key early in the second, none in the third (its scan stops it before any load)."""
    monkeypatch.setattr(kd, "kv16_applies", lambda q, k, v: True)
    q, key, value, _ = _case(span=299, d=64, dtype=DTYPE, seed=7)
    key, value = kv_quant.dequantize(key, DTYPE), kv_quant.dequantize(value, DTYPE)
    positions = torch.arange(299)
    valid = ((positions % 3 != 1) & (positions < 131)).view(1, 299)
    assert kd.splits_for(299, 2) == 3
    got = kd.kv16_decode(q.to(DEVICE), key.to(DEVICE), value.to(DEVICE), valid.to(DEVICE), 0.125).float().cpu()
    assert kd.triton_failure == ""
    scores = ((q.float() @ key.float().transpose(2, 3)) * 0.125).masked_fill(~valid[:, None, None, :], float("-inf"))
    want = scores.softmax(-1) @ value.float()
    assert (got - want).abs().max() < 2e-2
    assert torch.nn.functional.cosine_similarity(got.flatten(), want.flatten(), dim=0) > 0.9999


def test_a_16_bit_decode_without_the_kernel_is_the_torch_products():
    q, key, value, valid = _case(filled=200)
    key, value = kv_quant.dequantize(key, torch.float32), kv_quant.dequantize(value, torch.float32)
    assert not kd.kv16_applies(q, key, value)  # the CPU
    scores = (q @ key.transpose(2, 3)) * 0.125
    want = scores.masked_fill(~valid[:, None, None, :], float("-inf")).softmax(-1) @ value
    torch.testing.assert_close(torch.ops.headroom.kv16_decode(q, key, value, valid, 0.125), want,
                               rtol=1e-5, atol=1e-5)


@needs_triton
@pytest.mark.parametrize("rotate_at", ["attend", "merge"])
@pytest.mark.parametrize("merge_splits", [32, 2])
def test_many_splits_merge_to_the_reference(merge_splits, rotate_at, kernel_everywhere, monkeypatch):
    """Keys split in tiles of 64 (five splits over 299 keys), merged in one pass or two splits
    at a time (the merge's loop with its running maximum); the output rotated back to the
    model's basis in the attention (its partials) or in the merge."""
    monkeypatch.setattr(kd, "MIN_SPLIT_TILES", 1)
    monkeypatch.setattr(kd, "MERGE_SPLITS", merge_splits)
    monkeypatch.setattr(kd, "ROTATE_AT", rotate_at)
    assert kd.splits_for(299, 2) == 5
    q, key, value, valid = _case(span=299, d=64, dtype=DTYPE, filled=250, seed=4)
    got = kd.kv8_decode(q.to(DEVICE), key.to(DEVICE), value.to(DEVICE), valid.to(DEVICE), 0.125).float().cpu()
    assert kd.triton_failure == ""
    want = kv_quant.rotate(kd.reference(kv_quant.rotate(q), key, value, valid, 0.125)).float()
    assert (got - want).abs().max() < 2e-2
    assert torch.nn.functional.cosine_similarity(got.flatten(), want.flatten(), dim=0) > 0.9999


class _MergeSpy:
    """Stands in for ``kd._merge_kernel``: keeps a copy of the partial outputs it is given and its
    ROTATE, then launches the real merge."""

    def __init__(self):
        self.partials, self.rotate, self.real = [], [], kd._merge_kernel

    def __getitem__(self, grid):
        def launch(acc, *args, **kwargs):
            self.partials.append(acc.detach().clone())
            self.rotate.append(kwargs["ROTATE"])
            return self.real[grid](acc, *args, **kwargs)
        return launch


@needs_triton
def test_the_merge_compiles_once_whatever_the_number_of_splits(kernel_everywhere, monkeypatch):
    """Its SPLITS (a constexpr: another value is another Triton compile, on the first decode step of
    a cache of a new size, inside the turn) is MERGE_SPLITS for 3 and for 9 splits alike."""
    monkeypatch.setattr(kd, "MIN_SPLIT_TILES", 1)
    seen = []
    real = kd._merge_kernel

    class Spy:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                seen.append((kwargs["SPLITS"], args[7]))  # (constexpr, the real number of splits)
                return real[grid](*args, **kwargs)
            return launch

    monkeypatch.setattr(kd, "_merge_kernel", Spy())
    monkeypatch.setattr(kd, "_checked", {torch.empty(0, device=DEVICE).device})  # no self-check launches
    for span in (150, 520):
        q, key, value, valid = _case(span=span, d=64, dtype=DTYPE, filled=span - 20, seed=span)
        got = kd.kv8_decode(q.to(DEVICE), key.to(DEVICE), value.to(DEVICE), valid.to(DEVICE), 0.125)
        assert kd.triton_failure == "" and torch.isfinite(got).all()
    assert seen == [(kd.MERGE_SPLITS, 3), (kd.MERGE_SPLITS, 9)]


@needs_triton
def test_split_partials_are_rotated_in_float32_before_the_merge(kernel_everywhere, monkeypatch):
    """ROTATE_AT "attend": each split's float32 partial output leaves the attention already times
    H (to ≲ 1e-5, not plain tf32's ~5e-4) and the merge does not rotate; both settings give the
    reference's output (a decode step over 299 keys in 5 splits). Under the interpreter ``tl.dot``
    is a float32 product whatever its precision: the precision is checked on CUDA."""
    monkeypatch.setattr(kd, "MIN_SPLIT_TILES", 1)
    q, key, value, valid = _case(span=299, d=64, dtype=DTYPE, filled=250, seed=8)
    q, key, value, valid = q.to(DEVICE), key.to(DEVICE), value.to(DEVICE), valid.to(DEVICE)
    monkeypatch.setattr(kd, "_checked", {q.device})  # no self-check launches in between
    spy = _MergeSpy()
    monkeypatch.setattr(kd, "_merge_kernel", spy)
    out = {}
    for where in ("merge", "attend"):
        monkeypatch.setattr(kd, "ROTATE_AT", where)
        out[where] = kd.kv8_decode(q, key, value, valid, 0.125).float().cpu()
        assert kd.triton_failure == ""
    assert spy.rotate == [True, False]
    plain, rotated = (p.double().cpu() for p in spy.partials)
    assert plain.shape == rotated.shape == (2, 1, 5, 16, 64)  # (B·Hkv, row tiles, splits, tile rows, d)
    signs, rot_scale = kd.rotation_signs(64, torch.device("cpu"), torch.float64)
    want = (plain @ signs) * rot_scale
    assert not torch.allclose(plain, want, atol=1e-3)  # a real rotation, not the identity
    norm = want.norm(dim=-1)
    assert int((norm > 0).sum()) == 2 * 4 * 16  # splits 0-3 of both heads; keys ≥ 256 are all masked
    assert torch.equal(rotated[norm == 0], want[norm == 0])  # zeros stay zeros
    error = (rotated - want).norm(dim=-1)[norm > 0] / norm[norm > 0]
    assert float(error.max()) < 1e-5
    reference = kv_quant.rotate(kd.reference(kv_quant.rotate(q), key, value, valid, 0.125)).float().cpu()
    for got in out.values():
        assert (got - reference).abs().max() < 2e-2
    # rounded once (after the merge) instead of twice: no further from the reference
    assert (out["attend"] - reference).norm() <= (out["merge"] - reference).norm() * 1.05


def _causal_reference(query, key, value, span, scale):
    """Float32 attention of the chunk at [span − c, span) over the dequantized keys, GQA expanded."""
    b, hq, c, d = query.shape
    k = kv_quant.dequantize(key[:, :, :span], torch.float32)
    v = kv_quant.dequantize(value[:, :, :span], torch.float32)
    groups = hq // key.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = query.float() @ k.transpose(2, 3) * scale
    position = torch.arange(span - c, span).view(-1, 1)
    scores = scores.masked_fill(torch.arange(span).view(1, -1) > position, float("-inf"))
    return (scores.softmax(-1) @ v).transpose(1, 2)  # (B, c, Hq, d)


@needs_triton
@pytest.mark.parametrize("span,chunk", [(40, 40), (300, 24), (300, 5)])
def test_triton_prefill_is_causal_attention_over_the_cache(span, chunk, kernel_everywhere):
    g = torch.Generator().manual_seed(5)
    heads, groups, d = 2, 4, 32
    query = torch.randn(1, heads * groups, chunk, d, generator=g).to(DTYPE)
    key = kv_quant.quantize(torch.randn(1, heads, span + 7, d, generator=g))  # capacity beyond the span
    value = kv_quant.quantize(torch.randn(1, heads, span + 7, d, generator=g))
    got = kd.kv8_prefill(query.to(DEVICE), key.to(DEVICE), value.to(DEVICE), span, d ** -0.5)
    assert got is not None and kd.triton_failure == ""
    want = _causal_reference(query, key, value, span, d ** -0.5)
    assert got.shape == want.shape == (1, chunk, heads * groups, d)
    assert (got.float().cpu() - want).abs().max() < 2e-2


def test_prefill_leaves_the_cpu_to_the_blockwise_path():
    q, key, value, _ = _case()
    assert kd.kv8_prefill(q.view(1, 8, 1, 64).expand(1, 8, 3, 64), key, value, 300, 0.1) is None


def test_a_kernel_that_fails_is_not_tried_again(monkeypatch):
    def broken(*args):
        raise RuntimeError("PassManager::run failed")

    monkeypatch.setattr(kd, "_attend", broken)
    monkeypatch.setattr(kd, "triton_failure", "")
    monkeypatch.setattr(kd, "_checked", set())
    monkeypatch.setattr(kd, "triton", object())  # "present"
    q, key, value, valid = _case(filled=100)
    assert kd._guarded(q, key, value, valid, 299, 300, 4, 0.125) is None
    assert kd.triton_failure == "RuntimeError: PassManager::run failed"
    assert not kd.triton_applies(q.cuda() if torch.cuda.is_available() else q, key)


def test_a_kernel_that_disagrees_on_its_first_use_is_not_used(monkeypatch):
    monkeypatch.setattr(kd, "triton_failure", "")
    monkeypatch.setattr(kd, "_checked", set())
    monkeypatch.setattr(kd, "self_check", lambda *a: 0.5)
    monkeypatch.setattr(kd, "_attend", lambda *a: pytest.fail("the kernel ran after failing its check"))
    q, key, value, valid = _case(filled=100)
    assert kd._guarded(q, key, value, valid, 299, 300, 4, 0.125) is None
    assert kd.triton_failure == "self-check: relative error 0.5 against the torch path"


@needs_triton
def test_the_self_check_passes_on_the_real_kernel(kernel_everywhere):
    """The bound a device's first use enforces. In bf16 on the H200 the worst of the six launches
    was 0.0105 (2026-12-03, the first run of this test on a GPU); fp16 under the interpreter, < 1e-2."""
    assert kd.self_check(torch.device(DEVICE), DTYPE, 64) < (kd.SELF_CHECK_TOLERANCE if _CUDA else 1e-2)


@pytest.mark.skipif(kd.triton is None or _INTERPRETED,
                    reason="needs Triton, not its interpreter (compiles for sm_90 without a GPU)")
@pytest.mark.parametrize("rotate_partials", [False, True])
def test_the_decode_kernel_reads_codes_in_words_not_bytes(rotate_partials):
    """Compiled for Hopper (sm_90) here, no GPU needed: the packed rows' stride is a multiple of 4
    bytes and the kernel says so, so codes and scales are read in 4-byte words (pipelined into
    shared memory) instead of one byte per load (164 byte loads before, H200 0.33-0.79 TB/s);
    only the valid mask is read bytewise (each tile's, and the scan for the span's last valid key).
    Rotating the split partials (ROTATE_AT "attend") adds three bf16 tensor-core products
    (PARTIAL_DOT "bf16x3": high × signs, low × signs and high × the signs' zero low part), no tf32
    ones and no registers."""
    import re

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {name: "*i8" for name in ("k_ptr", "v_ptr")}
    sig = {"q_ptr": "*bf16", **sig, "valid_ptr": "*u8", "out_ptr": "*bf16", "acc_ptr": "*fp32",
           "max_ptr": "*fp32", "sum_ptr": "*fp32", "signs_ptr": "*bf16"}
    sig.update({name: "i32" for name in ("rows", "first", "span", "split_len", "heads", "splits", "row_tiles")})
    sig["scale"] = sig["rot_scale"] = "fp32"
    strides = ("stride_qb", "stride_qh", "stride_qr", "stride_kb", "stride_kh", "stride_ks",
               "stride_vb", "stride_vh", "stride_vs", "stride_valid")
    sig.update({name: "i32" for name in strides})
    consts = {"G": 4, "ROWS": 16, "D": 128, "BLOCK": 64, "HAS_VALID": True, "DIRECT": False, "ROTATE": True,
              "QUANT": True, "ROTATE_PARTIALS": rotate_partials, "PARTIAL_DOT": "bf16x3", "SCAN": kd.VALID_SCAN}
    sig.update({name: "constexpr" for name in consts})
    aligned = {n for n in sig if sig[n].startswith("*")} | set(strides) - {"stride_ks", "stride_vs"} | {"split_len"}
    names = list(sig)
    source = ASTSource(fn=kd._attend_kernel, signature=sig,
                       constexprs={(names.index(n),): v for n, v in consts.items()},
                       attrs={(names.index(n),): [["tt.divisibility", 16]] for n in aligned})
    ptx = kd.triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["ptx"]
    assert len(re.findall(r"ld\.global\.b8", ptx)) <= 4 + kd.VALID_SCAN // 128  # the valid mask: per tile, and its scan
    assert re.search(r"cp\.async\.\w+\.shared\.global \[[^]]*\], \[[^]]*\], 0x4", ptx)
    bf16 = len(re.findall(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32", ptx))
    # the attention: 64 per warp (the PTX is one warp's); the rotation of 16 rows × 128 × 128 is
    # 128 m16n8k16 products, 32 per warp of 4, three times over
    assert bf16 == 64 + (3 * 32 if rotate_partials else 0)
    assert "tf32" not in ptx


@pytest.mark.skipif(kd.triton is None or _INTERPRETED,
                    reason="needs Triton, not its interpreter (compiles for sm_90 without a GPU)")
@pytest.mark.parametrize("rotate", [False, True])
def test_the_merge_compiles_for_hopper_with_one_store_per_row(rotate):
    """The merge, one program per row, compiled for sm_90: its partials come in vector loads and
    the row goes out in one store, or one per ROTATE_COLUMNS slice when it rotates the row back
    (the interpreter does not check what Triton lowers)."""
    import re

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {"acc_ptr": "*fp32", "max_ptr": "*fp32", "sum_ptr": "*fp32", "out_ptr": "*bf16", "signs_ptr": "*bf16",
           "rows": "i32", "row_tiles": "i32", "splits": "i32", "rot_scale": "fp32"}
    consts = {"ROWS": 16, "D": 128, "SPLITS": 16, "ROTATE": rotate}
    sig.update({name: "constexpr" for name in consts})
    names = list(sig)
    source = ASTSource(fn=kd._merge_kernel, signature=sig,
                       constexprs={(names.index(n),): v for n, v in consts.items()},
                       attrs={(names.index(n),): [["tt.divisibility", 16]] for n in names if sig[n].startswith("*")})
    ptx = kd.triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 2}).asm["ptx"]
    assert re.search(r"ld\.global(\.\w+)*\.v4", ptx)
    assert len(re.findall(r"st\.global", ptx)) == (128 // kd.ROTATE_COLUMNS if rotate else 1)


def test_rows_the_kernel_cannot_read_in_words_are_left_to_torch():
    _, key, _, _ = _case(d=64)
    assert kd.word_aligned(key)
    shifted = torch.empty(key.numel() + 1, dtype=torch.int8)[1:].view(key.shape)  # one byte off
    assert not kd.word_aligned(shifted)
    assert not kd.word_aligned(key[..., 1:])  # rows of 67 bytes


def test_a_launch_a_capture_cannot_take_does_not_turn_the_kernel_off(monkeypatch):
    def refused(*args):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(kd, "_attend", refused)
    monkeypatch.setattr(kd, "_capturing", lambda device: True)
    monkeypatch.setattr(kd, "triton_failure", "")
    q, key, value, valid = _case(filled=100)
    with pytest.raises(RuntimeError, match="capturing"):
        kd._guarded(q, key, value, valid, 299, 300, 4, 0.125)
    assert kd.triton_failure == ""

"""tests/benchmarks/nf4_int8_gemv.py, the 8-bit lookup experiment for issue 15's planning (not used by
the app): its lookup (prmt emulated as the PTX ISA defines it) gives every code's int8 value in the
order its docstring says, one 64-block's two mmas assembled from the lanes' registers by the m16n8k32
fragment layout equal W x over int8 exactly, and its source builds for sm_90 without spills."""

import numpy as np
import pytest

from tests.benchmarks import nf4_int8_gemv as exp
from tests.helpers.kernels import entry_report, ptxas_log


def test_the_table_is_the_codebook_in_int8_within_half_a_step():
    table = exp.int8_table()
    values = [v - 256 if v >= 128 else v for word in table for v in word.to_bytes(4, "little")]
    assert values[0] == -127 and values[7] == 0 and values[15] == 127
    assert max(abs(v / 127 - c) for v, c in zip(values, exp.NF4, strict=True)) <= 0.5 / 127


def test_prmt_follows_the_isa():
    a, b = 0x83828180, 0x07060504
    assert exp.prmt(a, b, 0x3210) == a and exp.prmt(a, b, 0x7654) == b
    assert exp.prmt(a, b, 0x0004) == 0x80808004  # byte 4 of {b, a}, then byte 0 three times
    assert exp.prmt(a, b, 0x0008) == 0x808080FF  # nibble 8: byte 0's sign replicated


@pytest.mark.parametrize("seed", range(4))
def test_lookup8_gives_each_code_in_the_documented_order(seed):
    rng = np.random.default_rng(seed)
    table = exp.int8_table()
    values = [v - 256 if v >= 128 else v for word in table for v in word.to_bytes(4, "little")]
    codes = rng.integers(0, 16, size=8)
    word = 0
    for j in range(4):  # byte j: element 2j in the high nibble, 2j+1 in the low one
        word |= (int(codes[2 * j]) << 4 | int(codes[2 * j + 1])) << (8 * j)
    lo, hi = exp.lookup8(word, table)
    assert exp._s8(lo) == [values[codes[i]] for i in (1, 0, 3, 2)]
    assert exp._s8(hi) == [values[codes[i]] for i in (5, 4, 7, 6)]


@pytest.mark.parametrize("seed", range(3))
def test_one_block_through_the_fragments_is_w_times_x(seed):
    rng = np.random.default_rng(seed)
    table = exp.int8_table()
    values = np.array([v - 256 if v >= 128 else v for word in table for v in word.to_bytes(4, "little")])
    q = rng.integers(0, 16, size=(16, 64))
    codes = (q[:, 0::2] << 4 | q[:, 1::2]).astype(np.uint8)  # bitsandbytes' packing
    xq = rng.integers(-127, 128, size=64)
    xq_perm = xq[np.arange(64) ^ 1]  # what quantize_x stores
    got = exp.emulate_block(codes, xq_perm, table)
    assert np.array_equal(got, values[q] @ xq)
    assert not np.array_equal(exp.emulate_block(codes, xq, table), values[q] @ xq)  # unswapped x: wrong


def test_the_source_builds_for_sm90_without_spills():
    log = ptxas_log(exp.SOURCE, "nf4_int8_gemv.cu")
    for kernel in ("nf4_int8_gemv", "quantize_x"):
        report = entry_report(log, kernel)
        assert report["spill_stores"] == 0, (kernel, report)
        assert report["registers"] <= 255, (kernel, report)

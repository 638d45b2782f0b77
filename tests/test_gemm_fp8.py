"""FP8 products: ``ng.dot(A, B, C, scale_a=, scale_b=, scale_c=, amax=)`` on both factories.

The oracle is float64 numpy over the decoded FP8 values.  The tensor
cores multiply FP8 values exactly but sum each group of 32 products with
fewer bits than float32 (on the H200: max |C - C_ref| / mean |C_ref| of
1.2e-4 of mean |C_ref| at K = 32, 8e-4 at K = 8192 -- cuBLASLt's FP8 products show the
same errors), so each element may be off by 2**-10 of the sum of its
products' magnitudes (``|A| @ |B|``: the truncations scale with the
addends, not with the sum); a 16-bit C is forgiven one more unit in its
last place, an FP8 C one FP8 unit (a value next to a rounding boundary
may land on either side).  Wrong answers (a misread layout, a lost
scale) are errors of the size of the values themselves.
"""
import ml_dtypes
import numpy as np
import pytest

from conftest import BF16, dtype_id

E4M3, E5M2 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
PAIRS = [(E4M3, E4M3), (E5M2, E5M2), (E4M3, E5M2), (E5M2, E4M3)]
PAIR_IDS = ["e4m3", "e5m2", "e4m3xe5m2", "e5m2xe4m3"]
LARGEST = {E4M3: 448.0, E5M2: 57344.0}


def _fp8(rng, shape, dtype, scale=1.0):
    """Random FP8 host data (normal values spread over a few binades)."""
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)


def _operand(ng, host, transposed):
    """The tensor of ``host`` (a K-major copy viewed back when ``transposed``) and its value."""
    if transposed:
        return ng.array(np.ascontiguousarray(host.T)).T, host.astype(np.float64)
    return ng.array(host), host.astype(np.float64)


def _scalar(ng, value):
    return ng.array(np.array([value], np.float32))


def _check(got, ref, magnitude):
    """``got`` against the float64 ``ref``; ``magnitude``: ``|A| @ |B|`` times the
    scales, the bound of the accumulation's error (module docstring)."""
    got = np.asarray(got)
    ref = np.asarray(ref, np.float64)
    slack = np.ldexp(np.asarray(magnitude, np.float64), -10)
    if got.dtype in (E4M3, E5M2):
        top = LARGEST[got.dtype]
        want = np.clip(ref, -top, top)
        ulp = np.abs(np.spacing(np.abs(want).astype(np.float32).astype(got.dtype)).astype(np.float64))
        err = np.abs(got.astype(np.float64) - want) - slack
        assert np.all(err <= ulp), f"max error {err.max()} beyond one FP8 unit"
        return
    ulp = 0.0
    if got.dtype in (F16, BF16):
        ulp = np.abs(np.spacing(np.abs(ref).astype(got.dtype)).astype(np.float64))
    excess = np.abs(got.astype(np.float64) - ref) - ulp - slack
    assert np.all(excess <= 0), f"error beyond the bound by {excess.max():.2e}"


SHAPES = [(1, 1, 16), (7, 5, 32), (130, 67, 128), (257, 200, 96), (64, 300, 1024)]


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("layout", ["nt", "nn", "tn"])
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fp8_dot_matches_numpy(ng, pair, layout, mnk):
    m, n, k = mnk
    rng = np.random.default_rng(m + 3 * n + 7 * k)
    A, a = _operand(ng, _fp8(rng, (m, k), pair[0]), layout[0] == "t")
    B, b = _operand(ng, _fp8(rng, (k, n), pair[1]), layout[1] == "t")
    C = ng.empty((m, n), F32)
    assert ng.dot(A, B, C, scale_a=1.0, scale_b=1.0) is C
    _check(C.get(), a @ b, abs(a) @ abs(b))


@pytest.mark.parametrize("out", [F32, F16, BF16, E4M3, E5M2], ids=dtype_id)
@pytest.mark.parametrize("tensors", [True, False], ids=["device_scales", "number_scales"])
def test_fp8_scales_bias_relu_and_amax(ng, out, tensors):
    m, n, k = 96, 136, 160
    rng = np.random.default_rng(11)
    A, a = _operand(ng, _fp8(rng, (m, k), E4M3, 4.0), False)
    B, b = _operand(ng, _fp8(rng, (n, k), E4M3, 4.0).T, False)
    bias_host = rng.standard_normal(n).astype(np.float32)
    sa, sb, sc = 0.125, 0.5, 3.0
    scales = [_scalar(ng, s) for s in (sa, sb, sc)] if tensors else [sa, sb, sc]
    amax = ng.zeros((1,), F32)
    C = ng.empty((m, n), out)
    ng.dot(A, B, C, alpha=0.75, relu=True, bias=ng.array(bias_host), scale_a=scales[0],
           scale_b=scales[1], scale_c=scales[2], amax=amax)
    value = np.maximum(0.75 * sa * sb * (a @ b) + bias_host, 0)
    magnitude = 0.75 * sa * sb * (abs(a) @ abs(b))
    _check(C.get(), sc * value, sc * magnitude)
    assert abs(amax.get()[0] - np.abs(value).max()) <= np.ldexp(magnitude.max(), -10)


@pytest.mark.parametrize("out", [E4M3, E5M2], ids=dtype_id)
def test_fp8_output_saturates_and_amax_sees_the_unscaled_value(ng, out):
    A = ng.array(np.full((16, 32), 8.0, np.float32).astype(E4M3))
    B = ng.array(np.full((32, 16), 448.0, np.float32).astype(E4M3))
    amax = ng.empty((1,), F32)
    C = ng.empty((16, 16), out)
    ng.dot(A, B, C, scale_a=1.0, scale_b=_scalar(ng, 1.0), scale_c=_scalar(ng, 2.0), amax=amax)
    got = C.get().astype(np.float32)
    assert np.all(got == LARGEST[out])  # 2 * 114688 is past the largest finite: saturated
    assert amax.get()[0] == 8.0 * 448.0 * 32


def test_fp8_column_major_c_and_different_scales(ng):
    # C^T = B^T A^T: the kernel's A is the user's B, and so are the scales
    m, n, k = 70, 45, 64
    rng = np.random.default_rng(3)
    A, a = _operand(ng, _fp8(rng, (m, k), E4M3), False)
    B, b = _operand(ng, _fp8(rng, (n, k), E5M2).T, False)
    C = ng.empty((n, m), F32).T
    ng.dot(A, B, C, scale_a=_scalar(ng, 2.0), scale_b=_scalar(ng, 0.25))
    _check(C.get(), 0.5 * (a @ b), 0.5 * (abs(a) @ abs(b)))


def test_fp8_output_without_unit_stride(ng):
    m, n, k = 33, 20, 48
    rng = np.random.default_rng(4)
    A, a = _operand(ng, _fp8(rng, (m, k), E4M3), False)
    B, b = _operand(ng, _fp8(rng, (k, n), E4M3), True)
    big = ng.zeros((m, 2 * n), E4M3)
    amax = ng.empty((1,), F32)
    ng.dot(A, B, big[:, ::2], scale_a=1.0, scale_b=1.0, amax=amax)
    got = big.get().astype(np.float64)
    _check(got[:, ::2].astype(np.float32).astype(E4M3), a @ b, abs(a) @ abs(b))
    assert np.all(got[:, 1::2] == 0)


def test_fp8_batched_dot_and_sum_over_batches(ng):
    rng = np.random.default_rng(5)
    a = _fp8(rng, (3, 40, 32), E4M3)
    b = _fp8(rng, (3, 24, 32), E4M3).transpose(0, 2, 1)
    A, B = ng.array(a), ng.array(np.ascontiguousarray(b.transpose(0, 2, 1))).transpose(0, 2, 1)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    magnitude = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    C = ng.empty((3, 40, 24), F32)
    ng.batched_dot(A, B, C, scale_a=0.5, scale_b=1.0)
    _check(C.get(), 0.5 * ref, 0.5 * magnitude)
    total = ng.empty((40, 24), F16)
    ng.batched_dot(A, B, total, scale_a=1.0, scale_b=1.0)
    _check(total.get(), ref.sum(axis=0), magnitude.sum(axis=0))


def test_fp8_empty_reduction_gives_the_epilogue_of_zero(ng):
    A, B = ng.empty((5, 0), E4M3), ng.empty((0, 7), E4M3)
    amax = ng.full((1,), 9.0, F32)
    bias = np.linspace(-1, 1, 7).astype(np.float32)
    C = ng.empty((5, 7), E4M3)
    ng.dot(A, B, C, bias=ng.array(bias), relu=True, scale_a=1.0, scale_b=1.0, amax=amax)
    _check(C.get(), np.broadcast_to(np.maximum(bias, 0), (5, 7)), 0)
    assert amax.get()[0] == 1.0


def test_fp8_replay_reads_new_scale_values(ng):
    rng = np.random.default_rng(6)
    A, a = _operand(ng, _fp8(rng, (64, 64), E4M3), False)
    B, b = _operand(ng, _fp8(rng, (64, 64), E4M3), True)
    sa = _scalar(ng, 1.0)
    C, amax = ng.empty((64, 64), F32), ng.empty((1,), F32)
    for step, (device, host) in enumerate([(1.0, 1.0), (2.0, 0.5), (4.0, 3.0)]):
        sa[...] = device
        ng.dot(A, B, C, scale_a=sa, scale_b=host, scale_c=host, amax=amax)
        magnitude = device * host * (abs(a) @ abs(b))
        _check(C.get(), host * device * host * (a @ b), host * magnitude)
        bound = np.ldexp(magnitude.max(), -10)
        assert abs(amax.get()[0] - np.abs(device * host * (a @ b)).max()) <= bound


def test_fp8_replay_launches_one_kernel(gpu_ng):
    ng = gpu_ng
    rng = np.random.default_rng(7)
    A = ng.array(_fp8(rng, (256, 128), E4M3))
    B = ng.array(_fp8(rng, (512, 128), E4M3)).T
    C, amax = ng.empty((256, 512), E4M3), ng.empty((1,), F32)
    ng.dot(A, B, C, scale_a=1.0, scale_b=1.0, amax=amax)
    assert ng.last_gemm.name.startswith("ga_gemm_fp8_sm90_") and ng.last_gemm.name.endswith("_e4m3_kk")
    before = ng.stats()
    ng.dot(A, B, C, scale_a=1.0, scale_b=1.0, amax=amax)
    after = ng.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    assert after.get("gemm_plans", 0) == before.get("gemm_plans", 0)


# -- bad input ---------------------------------------------------------------
def _pair(ng, k=32):
    return ng.zeros((8, k), E4M3), ng.zeros((k, 8), E4M3)


def test_fp8_needs_scales(ng):
    A, B = _pair(ng)
    with pytest.raises(ValueError, match="needs scale_a and scale_b"):
        ng.dot(A, B, ng.empty((8, 8), F32))
    with pytest.raises(ValueError, match="needs scale_a and scale_b"):
        ng.dot(A, B, ng.empty((8, 8), F32), scale_a=1.0)


@pytest.mark.parametrize("bad, error", [
    (lambda ng: ng.ones((1,), F16), ValueError),
    (lambda ng: ng.ones((2,), F32), ValueError),
    (lambda ng: ng.ones((1, 1), F32), ValueError),
    (lambda ng: np.ones(1, np.float32), TypeError),
    (lambda ng: "1.0", TypeError),
    (lambda ng: True, TypeError),
], ids=["float16", "two_elements", "2d", "host_array", "string", "bool"])
def test_fp8_scales_of_the_wrong_kind(ng, bad, error):
    A, B = _pair(ng)
    with pytest.raises(error, match="scale_b"):
        ng.dot(A, B, ng.empty((8, 8), F32), scale_a=1.0, scale_b=bad(ng))


def test_fp8_output_needs_amax_and_no_beta(ng):
    A, B = _pair(ng)
    with pytest.raises(ValueError, match="needs amax"):
        ng.dot(A, B, ng.empty((8, 8), E4M3), scale_a=1.0, scale_b=1.0)
    with pytest.raises(ValueError, match="beta must be 0"):
        ng.dot(A, B, ng.empty((8, 8), E4M3), beta=1.0, scale_a=1.0, scale_b=1.0,
               amax=ng.empty((1,), F32))
    with pytest.raises(ValueError, match="amax"):
        ng.dot(A, B, ng.empty((8, 8), F32), scale_a=1.0, scale_b=1.0, amax=ng.empty((2,), F32))


def test_fp8_k_must_be_a_multiple_of_16(ng):
    A, B = _pair(ng, k=24)
    with pytest.raises(ValueError, match="multiple of 16, got K=24"):
        ng.dot(A, B, ng.empty((8, 8), F32), scale_a=1.0, scale_b=1.0)


def test_fp8_mixed_with_other_dtypes_and_misplaced_scales(ng):
    A, B = _pair(ng)
    with pytest.raises(TypeError, match="FP8 operands with FP8 operands only"):
        ng.dot(A, ng.zeros((32, 8), F16), ng.empty((8, 8), F32), scale_a=1.0, scale_b=1.0)
    with pytest.raises(ValueError, match="apply to FP8 operands"):
        ng.dot(ng.zeros((8, 32), F16), ng.zeros((32, 8), F16), ng.empty((8, 8), F32), scale_a=2.0)
    with pytest.raises(TypeError, match="C must be float16, bfloat16 or float32"):
        ng.dot(ng.zeros((8, 32), F16), ng.zeros((32, 8), F16), ng.empty((8, 8), E4M3))
    with pytest.raises(ValueError, match="need an output tensor C"):
        ng.dot(A, B, scale_a=1.0, scale_b=1.0)
    with pytest.raises(ValueError, match="runs with an output tensor C"):
        ng.dot(A, B)
    with pytest.raises(ValueError, match="precision for FP8 operands must be 'fp32' or 'fast'"):
        ng.dot(A, B, ng.empty((8, 8), F32), scale_a=1.0, scale_b=1.0, precision="tf32")


def test_fp8_amax_must_not_alias_what_is_read(ng):
    A, B = _pair(ng)
    scales = ng.ones((2,), F32)
    with pytest.raises(ValueError, match="must not share memory"):
        ng.dot(A, B, ng.empty((8, 8), F32), scale_a=scales[0:1], scale_b=1.0, amax=scales[0:1])


@pytest.mark.parametrize("precision", ["fp32", "fast"])
def test_fp8_every_tile_of_the_catalogue(gpu_ng, monkeypatch, precision):
    # the planner picks the large tiles only for large products: each tile
    # configuration in turn, on a product spanning several tiles of each
    from gpuarray.gemm import plan, tiles
    ng = gpu_ng
    m, n, k = 300, 520, 384
    rng = np.random.default_rng(9)
    A, a = _operand(ng, _fp8(rng, (m, k), E4M3), False)
    B, b = _operand(ng, _fp8(rng, (n, k), E5M2).T, False)
    name = "e4m3e5m2" + ("fast" if precision == "fast" else "")
    configs = tiles.configs("fp8_sm90", name, "kk")
    assert len(configs) >= 4
    for cfg in configs:
        monkeypatch.setattr(tiles, "CONFIGS", (cfg,))
        monkeypatch.setattr(plan, "_choices", {})
        monkeypatch.setattr(ng, "_gemm_plans", None)
        C = ng.empty((m, n), F32)
        ng.dot(A, B, C, scale_a=1.0, scale_b=0.5, precision=precision)
        assert ng.last_gemm.name == cfg.kernel_name(name, "kk")
        _check(C.get(), 0.5 * (a @ b), 0.5 * (abs(a) @ abs(b)))

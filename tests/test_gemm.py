"""ng.dot and ng.batched_dot against a float64 numpy oracle, on both factories.

The pass criterion is the original library's: max |C - C_ref| / mean |C_ref|
at most 5e-5 for exact float32, 7e-3 for float16/bfloat16 -- and for TF32,
whose operands keep float16's 10 mantissa bits.  Shapes are ragged on
purpose (tile edges), layouts come from transposed views, and the epilogue
options are crossed with them.
"""
import numpy as np
import pytest

from conftest import BF16, assert_no_new_allocations, dtype_id

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
#: (operand dtype, precision)
KINDS = [(F16, None), (BF16, None), (F32, None), (F32, "tf32")]
KIND_IDS = ["f16", "bf16", "f32", "tf32"]
TOLERANCE = {"f16": 7e-3, "bf16": 7e-3, "f32": 5e-5, "tf32": 7e-3}


def _kind_id(dtype, precision):
    return "tf32" if precision == "tf32" else {F16: "f16", BF16: "bf16", F32: "f32"}[dtype]


def _operand(ng, rng, rows, cols, dtype, transposed):
    """(tensor, float64 value) of a rows x cols operand, stored transposed if asked."""
    host = rng.standard_normal((cols, rows) if transposed else (rows, cols)).astype(dtype)
    t = ng.array(host)
    value = host.astype(np.float64)
    return (t.T, value.T) if transposed else (t, value)


def _check(got, ref, kind):
    """The criterion, after forgiving the rounding of a float16/bfloat16 C
    (one unit in the last place of each element)."""
    got = np.asarray(got)
    ulp = 0.0
    if got.dtype in (F16, BF16):
        ulp = np.abs(np.spacing(np.abs(ref).astype(got.dtype)).astype(np.float64))
    excess = np.maximum(np.abs(got.astype(np.float64) - ref) - ulp, 0)
    err = excess.max() / max(np.abs(ref).mean(), 1e-30)
    assert err <= TOLERANCE[kind], f"max|C - ref| / mean|ref| = {err:.2e} > {TOLERANCE[kind]}"


SHAPES = [(1, 1, 1), (7, 5, 3), (64, 64, 64), (130, 67, 129), (33, 200, 17), (257, 128, 96),
          (5, 300, 1000)]


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_dot_matches_numpy(ng, kind, layout, mnk):
    dtype, precision = kind
    m, n, k = mnk
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    A, a = _operand(ng, rng, m, k, dtype, layout[0] == "t")
    B, b = _operand(ng, rng, k, n, dtype, layout[1] == "t")
    C = ng.empty((m, n), dtype)
    assert ng.dot(A, B, C, precision=precision) is C
    _check(C.get(), a @ b, _kind_id(dtype, precision))


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("out_dtype", [F16, BF16, F32], ids=dtype_id)
@pytest.mark.parametrize("bias_shape", [None, "n", "m1", "mn"])
def test_epilogue(ng, kind, out_dtype, bias_shape):
    dtype, precision = kind
    m, n, k = 97, 70, 150
    rng = np.random.default_rng(5)
    A, a = _operand(ng, rng, m, k, dtype, False)
    B, b = _operand(ng, rng, k, n, dtype, True)
    c0 = rng.standard_normal((m, n)).astype(out_dtype)
    C = ng.array(c0)
    shape = {None: None, "n": (n,), "m1": (m, 1), "mn": (m, n)}[bias_shape]
    bias = None if shape is None else ng.array(rng.standard_normal(shape).astype(out_dtype))
    ng.dot(A, B, C, alpha=0.5, beta=-2.0, relu=True, bias=bias, precision=precision)
    ref = 0.5 * (a @ b)
    if bias is not None:
        ref = ref + bias.get().astype(np.float64)
    ref = np.maximum(ref, 0) - 2.0 * c0.astype(np.float64)
    _check(C.get(), ref, "f32" if kind[0] == F32 and out_dtype == F32
           and precision is None else "f16")


@pytest.mark.parametrize("out_dtype", [F16, BF16], ids=dtype_id)
@pytest.mark.parametrize("relu", [False, True], ids=["plain", "relu"])
@pytest.mark.parametrize("bias_shape", [None, "n", "m1", "mn"])
@pytest.mark.parametrize("m,n,order", [(1031, 264, "C"), (200, 1032, "C"), (1032, 264, "F")])
def test_epilogue_without_beta(ng, m, n, order, bias_shape, relu, out_dtype):
    """16-bit outputs finished from the accumulators (no beta): the bias along
    columns or rows (a column-major C swaps the operands) staged per tile,
    along both read per value; tiles past M and N."""
    k = 150
    rng = np.random.default_rng(6)
    A, a = _operand(ng, rng, m, k, out_dtype, False)
    B, b = _operand(ng, rng, k, n, out_dtype, True)
    C = ng.empty((m, n), out_dtype) if order == "C" else ng.empty((n, m), out_dtype).T
    shape = {None: None, "n": (n,), "m1": (m, 1), "mn": (m, n)}[bias_shape]
    bias = None if shape is None else ng.array(rng.standard_normal(shape).astype(out_dtype))
    ng.dot(A, B, C, alpha=0.5, relu=relu, bias=bias)
    ref = 0.5 * (a @ b) + (0 if bias is None else bias.get().astype(np.float64))
    _check(C.get(), np.maximum(ref, 0) if relu else ref, "f16")


@pytest.mark.parametrize("kind", KINDS[:3], ids=KIND_IDS[:3])
@pytest.mark.parametrize("case", ["batched", "shared_b", "shared_a", "accumulate",
                                  "accumulate_folded"])
def test_batched_dot(ng, kind, case):
    dtype, _ = kind
    nb, m, n, k = 5, 45, 70, 66
    rng = np.random.default_rng(11)
    a = rng.standard_normal((nb, m, k)).astype(dtype)
    b = rng.standard_normal((nb, k, n)).astype(dtype)
    A, B = ng.array(a), ng.array(b)
    if case == "shared_b":
        B, b = B[0], b[:1]
    elif case == "shared_a":
        A, a = A[2], a[2:3]
    elif case == "accumulate_folded":
        # weight-gradient shape: x^T (batch, K, M) against dy (batch, K, N)
        A = ng.array(np.ascontiguousarray(a.transpose(0, 2, 1))).transpose(0, 2, 1)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    if case.startswith("accumulate"):
        C = ng.zeros((m, n), np.float32)
        ref = ref.sum(axis=0)
    else:
        C = ng.zeros((nb, m, n), np.float32)
        ref = np.broadcast_to(ref, (nb, m, n))
    ng.batched_dot(A, B, C)
    _check(C.get(), ref, _kind_id(dtype, None))


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("mnk", [(4096, 32, 64), (64, 48, 8192), (1, 1, 3000), (128, 1, 2048),
                                 (1, 256, 1024)], ids=lambda s: "x".join(map(str, s)))
def test_skinny_and_deep(ng, kind, mnk):
    dtype, precision = kind
    m, n, k = mnk
    rng = np.random.default_rng(3)
    A, a = _operand(ng, rng, m, k, dtype, False)
    B, b = _operand(ng, rng, k, n, dtype, False)
    C = ng.empty((m, n), np.float32)
    ng.dot(A, B, C, precision=precision)
    _check(C.get(), a @ b, _kind_id(dtype, precision))


@pytest.mark.parametrize("layout", ["nn", "tn", "tt"])
def test_tf32_large_products_in_any_layout(ng, layout):
    """Large TF32 products repack operands K-major for the Hopper kernels."""
    rng = np.random.default_rng(13)
    A, a = _operand(ng, rng, 1024, 768, F32, layout[0] == "t")
    B, b = _operand(ng, rng, 768, 1024, F32, layout[1] == "t")
    C = ng.empty((1024, 1024), np.float32)
    ng.dot(A, B, C, precision="tf32", bias=ng.ones((1024,), np.float32))
    _check(C.get(), a @ b + 1, "tf32")


@pytest.mark.parametrize("kind", KINDS[:3], ids=KIND_IDS[:3])
@pytest.mark.parametrize("case", ["offset", "odd_ld", "strided"])
def test_unaligned_operands(ng, kind, case):
    dtype, _ = kind
    rng = np.random.default_rng(8)
    host_a = rng.standard_normal((70, 131)).astype(dtype)
    host_b = rng.standard_normal((131, 90)).astype(dtype)
    A, B = ng.array(host_a), ng.array(host_b)
    if case == "offset":  # operands start one element into their buffers
        A, B, host_a, host_b = A[1:, 1:], B[1:, 1:], host_a[1:, 1:], host_b[1:, 1:]
    elif case == "strided":  # neither axis contiguous: packed first
        A, host_a = A[:, ::2], host_a[:, ::2]
        B, host_b = B[::2, :], host_b[::2, :]
    C = ng.empty((A.shape[0], B.shape[1]), np.float32)
    ng.dot(A, B, C)
    _check(C.get(), host_a.astype(np.float64) @ host_b.astype(np.float64), _kind_id(dtype, None))


@pytest.mark.parametrize("case", ["column_major", "strided", "overlaps_a"])
def test_output_layouts(ng, case):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((60, 60)).astype(np.float32)
    b = rng.standard_normal((60, 50)).astype(np.float32)
    A, B = ng.array(a), ng.array(b)
    if case == "column_major":
        C = ng.empty((50, 60), np.float32).T
    elif case == "strided":
        C = ng.empty((60, 100), np.float32)[:, ::2]
    else:
        C = A[:, :50]  # numpy semantics: as if the product were computed first
    ng.dot(A, B, C, bias=ng.array(np.arange(50, dtype=np.float32)))
    _check(C.get(), a.astype(np.float64) @ b + np.arange(50), "f32")


def test_dot_vectors(ng):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((30, 20)).astype(np.float32), rng.standard_normal(20).astype(np.float32)
    A, B = ng.array(a), ng.array(b)
    C = ng.empty((30,), np.float32)
    ng.dot(A, B, C)
    _check(C.get(), a.astype(np.float64) @ b, "f32")
    D = ng.empty((30,), np.float32)
    D[:] = ng.dot(B, A.T)  # (20,) @ (20, 30)
    _check(D.get(), b.astype(np.float64) @ a.T, "f32")


#: how the vectors of an inner product are stored: (rows, cols) of the host matrix, vector of it
INNER_VIEWS = {
    "contiguous": (lambda k: (1, k), lambda t: t[0]),
    "strided": (lambda k: (k, 3), lambda t: t[:, 1]),
    "reversed": (lambda k: (1, k), lambda t: t[0, ::-1]),
}


@pytest.mark.parametrize("view", list(INNER_VIEWS))
@pytest.mark.parametrize("k", [1, 37, 3000])
@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_inner_product(ng, kind, k, view):
    """dot of two vectors is numpy's inner product: a 0-d result, lazily or into a 0-d C."""
    dtype, precision = kind
    shape, pick = INNER_VIEWS[view]
    rng = np.random.default_rng(k)
    hosts = [rng.uniform(0.5, 1.5, shape(k)).astype(dtype) for _ in range(2)]
    v, w = (pick(h).astype(np.float64) for h in hosts)
    V, W = (pick(ng.array(h)) for h in hosts)
    ref = np.dot(v, w)
    node = ng.dot(V, W, precision=precision)
    assert (node.shape, node.dtype) == ((), dtype)
    got = node.get()
    assert isinstance(got, np.ndarray) and got.shape == ()
    kid = _kind_id(dtype, precision)
    _check(got, ref, kid)
    C = ng.empty((), dtype)
    C[...] = ng.dot(V, W, precision=precision) * 2
    _check(C.get(), 2 * ref, kid)
    bias = ng.array(np.float32(-0.25 * k))
    C.fill(-1)
    assert ng.dot(V, W, C, alpha=0.5, beta=-2.0, relu=True, bias=bias, precision=precision) is C
    _check(C.get(), np.maximum(0.5 * ref - 0.25 * k, 0) + 2.0, kid)
    lazy = ng.dot(V, W, alpha=0.5, relu=True, bias=bias, precision=precision)
    _check(lazy.get(), np.maximum(0.5 * ref - 0.25 * k, 0), kid)


def test_inner_product_of_empty_vectors(ng):
    V = ng.empty((0,), np.float32)
    assert np.dot(np.empty(0), np.empty(0)) == 0
    np.testing.assert_array_equal(ng.dot(V, V).get(), np.float32(0))
    C = ng.full((), 3.0, np.float32)
    ng.dot(V, V, C, beta=0.5, bias=ng.ones((), np.float32), stats=ng.empty((2,), np.float32))
    np.testing.assert_array_equal(C.get(), np.float32(2.5))


@pytest.mark.parametrize("bias_shape", [(160,), (200, 160)])
def test_lazy_dot_fuses_the_epilogue(ng, bias_shape):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((200, 96)).astype(np.float16)
    b = rng.standard_normal((96, 160)).astype(np.float16)
    bias = rng.standard_normal(bias_shape).astype(np.float32)
    A, B, BIAS = ng.array(a), ng.array(b), ng.array(bias)
    C = ng.ones((200, 160), np.float16)
    before = ng.stats()["kernels_launched"]
    C[:] = ng.relu(ng.dot(A, B) * 0.5 + BIAS) + C * 3
    launched = ng.stats()["kernels_launched"] - before
    ref = np.maximum(0.5 * (a.astype(np.float64) @ b) + bias, 0) + 3
    _check(C.get(), ref, "f16")
    last = getattr(ng, "last_gemm", None)
    assert launched == (len(last.launches) if last else 1)


def test_lazy_dot_in_a_larger_tree(ng):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((50, 40)).astype(np.float32)
    b = rng.standard_normal((40, 30)).astype(np.float32)
    A, B = ng.array(a), ng.array(b)
    C = ng.empty((50, 1), np.float32)
    C[:] = ng.sum(ng.tanh(ng.dot(A * 2, B)), axis=1, keepdims=True) + ng.dot(A, B[:, :1])
    ab = a.astype(np.float64) @ b
    ref = np.tanh(2 * ab).sum(axis=1, keepdims=True) + ab[:, :1]
    _check(C.get(), ref, "f32")
    node = ng.dot(A, B, relu=True, alpha=2.0)
    assert node.shape == (50, 30) and node.dtype == np.float32
    _check(node.get(), np.maximum(2 * ab, 0), "f32")


def test_stats(ng):
    a = np.full((40, 16), 300, np.float16)
    a[0, :] = 1  # row 0 stays finite: 16 * 300
    a[1, :] = 0
    b = np.full((16, 24), 300, np.float16)
    b[:, 5] = 0
    C = ng.empty((40, 24), np.float16)
    S = ng.empty((2,), np.float32)
    ng.dot(ng.array(a), ng.array(b), C, stats=S)
    stats = S.get()
    # 16 * 300 * 300 = 1.44e6 overflows float16: rows 2..39 except column 5
    assert stats[1] == 38 * 23
    assert stats[0] == 16 * 300


def test_stochastic_rounding_is_unbiased(ng):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    A, B = ng.array(a), ng.array(b)
    exact = (a.astype(np.float32) @ b.astype(np.float32))
    C = ng.empty((64, 64), np.float16)
    C.rounding = True
    draws = []
    for _ in range(16):
        ng.dot(A, B, C)
        draws.append(C.get().astype(np.float64))
    draws = np.array(draws)
    lo = np.nextafter(exact.astype(np.float16), np.float16(-np.inf)).astype(np.float64)
    hi = np.nextafter(exact.astype(np.float16), np.float16(np.inf)).astype(np.float64)
    assert ((draws >= lo) & (draws <= hi)).all()
    assert (draws.std(axis=0) > 0).mean() > 0.5  # the draws differ from call to call
    bias = np.abs(draws.mean(axis=0) - exact).mean()
    assert bias < np.abs(exact.astype(np.float16) - exact).mean()


def test_zero_sizes(ng):
    C = ng.full((3, 4), 2.0, np.float32)
    ng.dot(ng.empty((3, 0), np.float16), ng.empty((0, 4), np.float16), C,
           bias=ng.ones((4,), np.float32), beta=0.5)
    np.testing.assert_array_equal(C.get(), np.full((3, 4), 2.0))
    E = ng.empty((0, 4), np.float32)
    ng.dot(ng.empty((0, 5), np.float32), ng.empty((5, 4), np.float32), E)


ERRORS = [
    (lambda ng, f: ng.dot(f((3, 4)), f((5, 6))), ValueError, r"shapes \(3,4\) and \(5,6\) not aligned"),
    (lambda ng, f: ng.dot(f((3, 4)), f((4, 6)), f((3, 5))), ValueError, "C has shape"),
    (lambda ng, f: ng.dot(f((3, 4), np.int32), f((4, 6), np.int32)), TypeError,
     "float16, bfloat16 and float32"),
    (lambda ng, f: ng.dot(f((3, 4), np.float16), f((4, 6))), TypeError, "one dtype"),
    (lambda ng, f: ng.dot(f((3, 4)), f((4, 6)), f((3, 6), np.int32)), TypeError, "C must be"),
    (lambda ng, f: ng.dot(f((3, 4)), f((4, 6)), precision="fp8"), ValueError, "precision"),
    (lambda ng, f: ng.dot(f((3, 4), np.float16), f((4, 6), np.float16), precision="tf32"),
     ValueError, "applies to float32"),
    (lambda ng, f: ng.dot(f((3, 4)), f((4, 6)), f((3, 6)), bias=f((4,))), ValueError, "does not broadcast"),
    (lambda ng, f: ng.dot(f((3, 4)), f((4, 6)), f((3, 6)), stats=f((3,))), ValueError, "shape \\(2,\\)"),
    (lambda ng, f: ng.dot(f((3, 4)), f((4, 6)), beta=1.0), ValueError, "need an output"),
    (lambda ng, f: ng.dot(f((2, 3, 4)), f((4, 6))), ValueError, "batched_dot"),
    (lambda ng, f: ng.batched_dot(f((2, 3, 4)), f((3, 4, 6))), ValueError, "batch sizes differ"),
    (lambda ng, f: ng.batched_dot(f((3, 4)), f((4, 6))), ValueError, "3-D operands"),
    (lambda ng, f: ng.dot(f((3, 4)), f((4, 6)), f((3, 6)), alpha="2"), TypeError, "alpha"),
    (lambda ng, f: ng.dot(f((3, 4)), 2.0), TypeError, "not scalars"),
    (lambda ng, f: ng.dot(f((3,)), f((4,))), ValueError, r"shapes \(3,\) and \(4,\) not aligned"),
    (lambda ng, f: ng.dot(f((4,)), f((4,)), f((1,))), ValueError, r"C has shape \(1,\)"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(ng, case):
    build, error, match = ERRORS[case]
    with pytest.raises(error, match=match):
        build(ng, lambda shape, dtype=np.float32: ng.zeros(shape, dtype))


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("mnk", [(64, 64, 16384), (300, 200, 6000), (4096, 32, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_split_k_is_deterministic_with_the_whole_epilogue(gpu_ng, kind, mnk):
    """Deep products with few tiles split K; the partials are summed in split
    (or cluster rank) order, so every run gives the same bits, epilogue and
    statistics included."""
    ng, (m, n, k) = gpu_ng, mnk
    dtype, precision = kind
    rng = np.random.default_rng(21)
    (A, a), (B, b) = _operand(ng, rng, m, k, dtype, False), _operand(ng, rng, k, n, dtype, False)
    bias = rng.standard_normal(n).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(dtype)
    C, S, BIAS = ng.array(c0), ng.zeros((2,), np.float32), ng.array(bias)
    ng.dot(A, B, C, alpha=0.5, beta=0.25, relu=True, bias=BIAS, stats=S, precision=precision)
    # split in two kernels (ffma, sm80) or over a cluster's blocks (sm90)
    assert ng.last_gemm.splits > 1 or ng.last_gemm.cluster > 1
    first = C.get()
    ref = np.maximum(0.5 * (a @ b) + bias, 0) + 0.25 * c0.astype(np.float64)
    _check(first, ref, _kind_id(dtype, precision))
    assert S.get()[0] == np.abs(first.astype(np.float32)).max() and S.get()[1] == 0
    for _ in range(4):
        C[:] = ng.array(c0)
        ng.dot(A, B, C, alpha=0.5, beta=0.25, relu=True, bias=BIAS, precision=precision)
        assert np.array_equal(C.get(), first)


def _force_plan(monkeypatch, ng, tile, splits, cluster):
    """Make the planner pick tile ``tile`` (BM, BN) of the problem's kernel
    family with ``splits`` and ``cluster``."""
    from gpuarray.gemm import plan, tiles

    def choose(gpu, prob):
        configs = tiles.configs(tiles.family(gpu, prob), tiles.input_name(prob), prob.layout)
        return next(c for c in configs if (c.bm, c.bn) == tile), splits, cluster

    monkeypatch.setattr(plan, "choose", choose)
    monkeypatch.setattr(ng, "_gemm_plans", None)


#: (kind, tile, blocks per cluster): every sm90 tile width, one and two
#: consumer warpgroups, uneven shares (3, 5), the largest portable cluster;
#: f32 runs the FFMA kernels, f32u their unaligned variants (B's row stride
#: is no multiple of 4), whose 64 x 64 clusters of 8 are more than fit at
#: once (a cluster walks several tiles)
CLUSTER_CASES = [("f16", (64, 32), 2), ("bf16", (64, 32), 8), ("f16", (64, 64), 3),
                 ("bf16", (64, 128), 4), ("f16", (128, 64), 5), ("bf16", (128, 128), 2),
                 ("f16", (128, 256), 2), ("tf32", (64, 32), 4), ("tf32", (128, 128), 3),
                 ("f32", (64, 64), 3), ("f32", (128, 128), 2), ("f32", (128, 256), 3),
                 ("f32u", (64, 64), 8),
                 ("f32u", (128, 128), 4)]
#: K-tile depth of the forced kernels
CLUSTER_BK = {"tf32": 32, "f32": 16, "f32u": 8}


@pytest.mark.parametrize("kind, tile, cluster", CLUSTER_CASES,
                         ids=[f"{k}-{t[0]}x{t[1]}-c{c}" for k, t, c in CLUSTER_CASES])
@pytest.mark.parametrize("even", [True, False], ids=["even", "ragged_k"])
def test_cluster_k_split(gpu_ng, monkeypatch, kind, tile, cluster, even):
    """The blocks of a cluster share a tile's K-tiles and block 0 adds the
    others' accumulators in rank order: with the same K ranges, the bits of
    the two-kernel split-K (whose reduce adds the partials in split order),
    through both epilogue paths; any ranges, numpy's values.  1200 rows
    give the clusters of most cases more than one tile each."""
    ng = gpu_ng
    dtype, precision = KINDS[KIND_IDS.index(kind.rstrip("u"))]
    bk = CLUSTER_BK.get(kind, 64)
    m, n, k = 1200, 262 if kind == "f32u" else 264, bk * cluster * 3 + (0 if even else 40)
    rng = np.random.default_rng(cluster + tile[1])
    # tf32 runs on wgmma with K-major operands only
    (A, a), (B, b) = _operand(ng, rng, m, k, dtype, False), _operand(ng, rng, k, n, dtype, kind == "tf32")
    bias = rng.standard_normal(n).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(dtype)
    BIAS = ng.array(bias)
    results = []
    for splits, blocks in ((1, cluster), (cluster, 1)):
        _force_plan(monkeypatch, ng, tile, splits, blocks)
        C, S = ng.array(c0), ng.zeros((2,), np.float32)
        ng.dot(A, B, C, alpha=0.5, beta=0.25, relu=True, bias=BIAS, stats=S, precision=precision)
        fast = ng.empty((m, n), dtype)
        ng.dot(A, B, fast, alpha=-0.75, bias=BIAS, precision=precision)  # finished in registers
        assert ng.last_gemm.cluster == blocks  # (a ragged K may leave fewer splits)
        assert f"_{tile[0]}x{tile[1]}x" in ng.last_gemm.name
        assert ("_ffmau_" in ng.last_gemm.name) == (kind == "f32u")
        results.append((C.get(), S.get(), fast.get()))
    (whole, stats, fast), split = results
    ref = np.maximum(0.5 * (a @ b) + bias, 0) + 0.25 * c0.astype(np.float64)
    _check(whole, ref, kind.rstrip("u"))
    _check(fast, -0.75 * (a @ b) + bias, kind.rstrip("u"))
    assert stats[0] == np.abs(whole.astype(np.float32)).max() and stats[1] == 0
    if even:
        for ours, theirs in zip(results[0], split):
            assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("layout", ["kn", "kk"])
def test_wide_ffma_tile(gpu_ng, monkeypatch, layout):
    """The exact-fp32 kernels of 128 outputs a thread (128 x 256 tiles, A
    K-contiguous, B N- or K-contiguous), forced: ragged M, N and K (rows and
    columns past C and the last K-tile's zeros), several tiles a row of C,
    an epilogue of bias, alpha, beta and relu, and a C finished as float4s."""
    ng = gpu_ng
    m, n, k = 300, 268, 84  # strides of whole float4s (the aligned kernels), ragged tiles
    rng = np.random.default_rng(7)
    A, a = _operand(ng, rng, m, k, F32, False)
    B, b = _operand(ng, rng, k, n, F32, layout == "kk")
    bias = rng.standard_normal(n).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    _force_plan(monkeypatch, ng, (128, 256), 1, 1)
    C = ng.array(c0)
    ng.dot(A, B, C, alpha=0.5, beta=0.25, relu=True, bias=ng.array(bias))
    assert ng.last_gemm.name == f"ga_gemm_ffma_128x256x16_f32_{layout}"
    _check(C.get(), np.maximum(0.5 * (a @ b) + bias, 0) + 0.25 * c0.astype(np.float64), "f32")
    fast = ng.empty((m, 272), np.float32)[:, :n]  # rows on 16 bytes: float4 stores
    ng.dot(A, B, fast)
    _check(fast.get(), a @ b, "f32")


@pytest.mark.parametrize("out_dtype", [F16, BF16, F32], ids=dtype_id)
@pytest.mark.parametrize("bias_shape", [None, "n", "m1", "mn"])
@pytest.mark.parametrize("relu", [False, True], ids=["linear", "relu"])
@pytest.mark.parametrize("mnk", [(300, 70, 200), (200, 20, 64), (260, 300, 96)],
                         ids=lambda s: "x".join(map(str, s)))
def test_vector_epilogue_gives_the_element_epilogues_bits(gpu_ng, out_dtype, bias_shape, relu, mnk):
    """A C whose rows start on 16 bytes is finished in registers and stored
    from there (sm90_epilogue.cuh's ga_epilogue16: 16-bit values staged and
    copied out in 16-byte pieces; ga_epilogue32: fp32 pairs); one whose rows
    do not goes element by element.  Same tiles, same accumulators:
    the bits must agree -- ragged last pieces (N % 8 != 0), the NaNs of a
    row of A holding one, and the -0.0 of a zero row times a negative alpha
    included."""
    ng, (m, n, k) = gpu_ng, mnk
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    a[3], a[5, 7] = 0, np.nan
    A = ng.array(a)
    # B's rows on 16 bytes too, for the TMA kernels
    B = ng.array(rng.standard_normal((k, -(-n // 8) * 8)).astype(np.float16))[:, :n]
    shape = {None: None, "n": (n,), "m1": (m, 1), "mn": (m, n)}[bias_shape]
    bias = None if shape is None else ng.array(rng.standard_normal(shape).astype(out_dtype))
    results = []
    for ld in (-(-n // 8) * 8, n + 1):  # 16-byte rows; odd rows
        C = ng.empty((m, ld), out_dtype)[:, :n]
        ng.dot(A, B, C, alpha=-0.75, relu=relu, bias=bias)
        assert ng.last_gemm.name.startswith("ga_gemm_sm90_")
        results.append(C.get().view(f"u{out_dtype.itemsize}"))
    assert np.array_equal(results[0], results[1])
    assert np.isnan(results[0].view(out_dtype)[5]).all()
    if bias is None:
        assert (results[0][3] == 1 << (8 * out_dtype.itemsize - 1)).all()  # -0.0, relu or not


@pytest.mark.parametrize("dtype", [F16, BF16], ids=dtype_id)
@pytest.mark.parametrize("m, n", [(1024, 1024), (4096, 32)], ids=["square", "skinny"])
def test_chained_products_wait_for_each_other(ng, dtype, m, n):
    """Products queued back to back, each reading what the one before it
    wrote and overwriting what it read: the sm90 kernels launch as
    programmatic dependents (they may start before the previous kernel
    ends) and must wait for it before touching memory.  A permutation
    matrix keeps every product exact, so any stale or half-written operand
    shows; a negation between some steps puts a fused kernel in the chain.
    4096 x 32 splits K over clusters."""
    rng = np.random.default_rng(m + n)
    perm = rng.permutation(m)
    p = np.zeros((m, m), dtype)
    p[np.arange(m), perm] = 1
    x = rng.integers(-8, 9, (m, n)).astype(dtype)
    P, X, Y = ng.array(p), ng.array(x), ng.empty((m, n), dtype)
    ref = x.astype(np.float64)
    for step in range(6):
        ng.dot(P, X, Y)
        ng.dot(P, Y, X)
        ref = ref[perm][perm]
        if step % 2:
            X[:] = -X
            ref = -ref
    assert np.array_equal(X.get().astype(np.float64), ref)


@pytest.mark.parametrize("dtype", [F16, F32], ids=dtype_id)
def test_second_run_compiles_and_allocates_nothing(gpu_ng, dtype):
    # deep: float16 splits K over a cluster, float32 in two kernels (a
    # workspace from the pool each time)
    ng = gpu_ng
    rng = np.random.default_rng(12)
    A = ng.array(rng.standard_normal((64, 8192)).astype(dtype))
    B = ng.array(rng.standard_normal((8192, 64)).astype(dtype))
    C = ng.empty((64, 64), dtype)
    S = ng.empty((2,), np.float32)
    for _ in range(3):
        ng.dot(A, B, C, stats=S)
        C[:] = ng.relu(ng.dot(A, B))
    ng.synchronize()
    before = ng.stats()
    for _ in range(10):
        ng.dot(A, B, C, stats=S)
        C[:] = ng.relu(ng.dot(A, B))
    ng.synchronize()
    assert_no_new_allocations(ng, before)
    assert ng.stats()["kernels_compiled"] == before["kernels_compiled"]

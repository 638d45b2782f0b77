"""User kernels in CuPy's syntax: ng.ElementwiseKernel, ng.ReductionKernel and ng.RawKernel.

On both factories (the CPU one runs the code as C++ compiled for the host),
numpy as the oracle: values for several dtypes, broadcasting, Python
scalars, placeholders and fixed types; out= and errors (malformed
parameters, wrong arguments, code that does not compile -- the compiler's
message with the line in the user's code).  Indexed elementwise kernels
(CuPy's ``raw`` parameters, ``i``, ``_ind.size()``, ``size=``): values for
several dtypes (on the CPU factory, fewer: each dtype's loop is a host
compile).  On the GPU: an elementwise kernel used inside an expression is
one fused kernel; an indexed call is one launch, one compile per structure;
RawKernel.  Without a GPU: the generated source of a tree holding a user
function, and of indexed kernels, compiles for sm_90; the CPU factory
refuses RawKernel with a clear error.  Raw reductions: test_userkernels_reduction.py;
the host compiler and its cache: test_userkernels_cpu.py.
"""
import shutil
import subprocess

import numpy as np
import pytest

import gpuarray
from conftest import BF16, dtype_id, get_factory, random_array
from gpuarray.core import ops, optree
from gpuarray.cuda import compiler
from gpuarray.cuda.compiler import CompileError
from gpuarray.fusion import generate, launch, plan
from gpuarray.userkernels import indexed, indexed_source
from gpuarray.userkernels.elementwise import ElementwiseKernel, UserFunction
from gpuarray.userkernels.reduction import UserReduction

#: the dtypes of the CPU factory's cases: float16 and bfloat16 compute in
#: float, as float32 does, so the three share compiled host loops
CPU_DTYPES = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.int8),
              np.dtype(np.bool_))


def on_both(dtypes):
    """(factory kind, dtype) cases: the GPU's for each of ``dtypes``, the CPU's
    for those among CPU_DTYPES (every distinct host loop is a compile)."""
    return [pytest.param(kind, np.dtype(dt), id=f"{kind}-{dtype_id(dt)}")
            for kind in ("cpu", "gpu") for dt in dtypes
            if kind == "gpu" or np.dtype(dt) in CPU_DTYPES]


def is_gpu(ng):
    return getattr(ng, "arch", None) is not None


def compile_error(name, line):
    """The compiler's location of an error in user code: NVRTC's ``name(line)``, g++'s ``name:line:``."""
    return rf"{name}(\({line}\)|:{line}:)"


SQDIFF = ("T x, T y", "T z", "z = (x - y) * (x - y)", "sqdiff")


@pytest.mark.parametrize("kind, dtype", on_both([np.float32, np.float64, np.int32, np.float16]))
def test_elementwise_kernel_values_and_broadcasting(kind, dtype):
    ng = get_factory(kind)
    k = ng.ElementwiseKernel(*SQDIFF)
    rng = np.random.default_rng(0)
    x, y = (rng.integers(-5, 5, shape).astype(dtype) for shape in ((3, 4), (4,)))
    got = k(ng.array(x), ng.array(y))
    assert got.shape == (3, 4) and got.dtype == dtype
    np.testing.assert_array_equal(got.get(), ((x - y) * (x - y)).astype(dtype))
    np.testing.assert_array_equal(k(ng.array(x), 2).get(), ((x - 2) * (x - 2)).astype(dtype))


def test_fixed_types_cast_and_refuse(ng):
    k = ng.ElementwiseKernel("float32 x, int32 n", "float64 z", "z = x * n + 0.5", "scale")
    x = np.arange(5, dtype=np.float64)
    got = k(ng.array(x), np.int32(3))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.get(), x.astype(np.float32) * 3 + 0.5)
    with pytest.raises(TypeError, match="Cannot cast n from float64 to int32"):
        k(ng.array(x), ng.array(x))


def test_elementwise_kernel_fuses_with_the_expression(ng):
    """One fused kernel on the GPU; on the CPU factory the kernel runs at the
    call, with the same values."""
    k = ng.ElementwiseKernel(*SQDIFF)
    a = ng.array(np.linspace(-1, 1, 4096, dtype=np.float32))
    b = ng.array(np.linspace(2, 0, 4096, dtype=np.float32))
    out = ng.empty(4096, np.float32)
    before = ng.stats()["kernels_launched"]
    out[:] = ng.sqrt(k(a * 2, b) + 1)
    if is_gpu(ng):
        assert ng.stats()["kernels_launched"] - before == 1
    ha, hb = a.get() * 2, b.get()
    np.testing.assert_allclose(out.get(), np.sqrt((ha - hb) ** 2 + 1), rtol=1e-6)
    total = float(ng.sum(k(a, b)))
    assert total == pytest.approx(float(np.sum((a.get() - hb) ** 2, dtype=np.float64)), rel=1e-5)
    result = ng.empty(4096, np.float32)
    assert k(a, b, result) is result
    np.testing.assert_allclose(result.get(), (a.get() - hb) ** 2, rtol=1e-6)


def test_elementwise_kernel_errors(ng):
    with pytest.raises(ValueError, match="Syntax error"):
        ng.ElementwiseKernel("float32", "float32 z", "z = 1", "k")
    with pytest.raises(ValueError, match="exactly one output"):
        ng.ElementwiseKernel("T x", "T y, T z", "y = x; z = x", "k")
    with pytest.raises(ValueError, match="C identifier"):
        ng.ElementwiseKernel("T x", "T z", "z = x", "not a name")
    k = ng.ElementwiseKernel(*SQDIFF)
    with pytest.raises(TypeError, match="Wrong number of arguments"):
        k(ng.ones(3))
    with pytest.raises(TypeError, match="Type is mismatched"):
        k(ng.ones(3, np.float32), ng.ones(3, np.float64))
    with pytest.raises(ValueError):
        k(ng.ones(3), ng.ones(4))
    bad = ng.ElementwiseKernel("T x", "T z", "z = x +* 2;", "broken")
    with pytest.raises(CompileError, match=compile_error("broken", 1)):
        bad(ng.ones(3))


L2 = ("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)], ids=str)
def test_reduction_kernel_values(ng, axis):
    k = ng.ReductionKernel(*L2)
    x = np.random.default_rng(1).standard_normal((37, 300)).astype(np.float32)
    got = k(ng.array(x), axis=axis)
    want = np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axis))
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(to_np(got), want, rtol=1e-5)
    kept = k(ng.array(x), axis=axis, keepdims=True)
    assert kept.shape == np.sum(x, axis=axis, keepdims=True).shape


def to_np(t):
    return np.asarray(t.get())


def test_reduction_kernel_max_fuses_and_splits(ng):
    absmax = ng.ReductionKernel("T x", "T y", "fabs(x)", "a > b ? a : b", "y = a", "0", "absmax")
    host = np.random.default_rng(2).standard_normal(1 << 21).astype(np.float64)
    host[12345] = -9.5
    x = ng.array(host)
    assert float(absmax(x * 2)) == 19.0  # a long row: split into partials, as sum is
    out = ng.empty((64, 1), np.float64)
    before = ng.stats()["kernels_launched"]
    out[:] = absmax(x.reshape(64, -1), axis=1, keepdims=True) + 1
    if is_gpu(ng):
        assert ng.stats()["kernels_launched"] - before == 1
    np.testing.assert_array_equal(out.get(), np.abs(host.reshape(64, -1)).max(1, keepdims=True) + 1)
    count = ng.ReductionKernel("T x", "int64 n", "x > 0", "a + b", "n = a", "0", "positives",
                               reduce_type=np.int64)
    assert int(count(x)) == int((host > 0).sum())


def test_reduction_kernel_errors(ng):
    with pytest.raises(ValueError, match="identity"):
        ng.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "", "k")
    k = ng.ReductionKernel(*L2)
    with pytest.raises(np.exceptions.AxisError):
        k(ng.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match="wrong shape"):
        k(ng.ones((2, 3)), axis=1, out=ng.empty((2, 1)))
    bad = ng.ReductionKernel("T x", "T y", "x", "a +* b", "y = a", "0", "badreduce")
    with pytest.raises(CompileError, match=compile_error("badreduce", 1)):
        bad(ng.ones(3))


ADD = r'''
extern "C" __global__ void add(const float* a, const float* b, float* c, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + s * b[i];
}
'''


def test_raw_kernel(gpu_ng):
    ng = gpu_ng
    k = ng.RawKernel(ADD, "add")
    n = 1000
    a, b = (ng.array(np.arange(n, dtype=np.float32) * f) for f in (1, 2))
    c = ng.zeros(n, np.float32)
    k(((n + 255) // 256,), (256,), (a, b, c, np.int32(n), np.float32(0.5)))
    np.testing.assert_array_equal(c.get(), np.arange(n, dtype=np.float32) * 2)
    with pytest.raises(ValueError, match="no kernel named"):
        ng.RawKernel(ADD, "missing")
    with pytest.raises(CompileError):
        ng.RawKernel("extern \"C\" __global__ void f() { oops }", "f")
    with pytest.raises(ValueError, match="1024 threads"):
        k((1,), (2048,), (a, b, c, np.int32(n), np.float32(1)))
    with pytest.raises(ValueError, match="positive ints"):
        k((0,), (32,), (a, b, c, np.int32(n), np.float32(1)))
    with pytest.raises(TypeError, match="argument 2"):
        k((1,), (32,), (a, b, np.zeros(3), np.int32(n), np.float32(1)))


def test_the_cpu_factory_refuses_raw_kernels():
    with pytest.raises(NotImplementedError, match=r"RawKernel is a CUDA C kernel .* needs the GPU "
                       r"factory \(gpuarray.GPU\(\)\), not CPU"):
        gpuarray.CPU().RawKernel(ADD, "add")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_fused_user_function_compiles_for_sm90(tmp_path):
    ng = gpuarray.CPU(seed=0)
    x, y = ng.empty((64, 32), np.float32), ng.empty((32,), np.float16)
    fn = UserFunction("sqdiff", "z = (x - y) * (x - y)", ("x", "y"), ("float", "float"), "z",
                      "float", (("T", "float"),))
    node = optree.OpTreeNode(ng, "user", (x, y), (fn,), (64, 32), np.dtype(np.float32))
    combiner = UserReduction("absmax", "a > b ? a : b", "0", "float", ())
    ops.USER_REDUCTIONS.setdefault(combiner.op, combiner)
    reduced = optree.OpTreeNode(ng, combiner.op, (node,), (1,), (64, 1), np.dtype(np.float32))
    long = ng.empty((1 << 20,), np.float32)
    whole = optree.OpTreeNode(ng, combiner.op, (long * 2,), (0,), (1,), np.dtype(np.float32))
    texts = set()
    for out, expr in ((ng.empty((64, 32), np.float16), ng.exp(node) * 2),
                      (ng.empty((64,), np.float32), ng.sum(node, axis=1)),
                      (ng.empty((64, 32), np.float32), node - reduced),
                      (ng.empty((1,), np.float32), whole)):
        steps, _ = plan.plan(ng, out, expr)
        texts |= {generate.generate(s.program, launch.prepare(s, 132, 0, 1).layout).text
                  for s in steps}
    assert any(combiner.c_name in text for text in texts)
    for n, text in enumerate(sorted(texts)):
        assert fn.c_name in text or combiner.c_name in text
        unit = tmp_path / f"k{n}.cu"
        unit.write_text(text)
        result = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-std=c++17", "-I",
                                 str(generate.PRELUDE_PATH.parent), "-o", str(tmp_path / "k.cubin"),
                                 str(unit)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-3000:]


# -- indexed kernels: raw parameters, i, _ind.size(), size= ------------------

REVERSE = ("raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse")
NEIGHBOUR = ("raw T x, int32 n", "T y", "y = x[i] - x[(i + 1) % n]", "neighbour")
NEIGHBOUR_INTO = ("raw T x, int32 n", "raw T y", "y[i] = x[i] - x[(i + 1) % n]", "neighbour_into")
WEIGHTED = ("T a, T b, raw T w, T c", "T y", "y = a + b * w[i] - c", "weighted")
INDEX = ("T a, T b", "int64 y", "y = i", "index")
TWICE = ("raw T x", "T y", "T v = x[i]; y = v + v", "twice")
CONVERT = ("raw T x", "raw U y", "y[i] = (U)x[i]", "convert")
INDEXED_DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64),
                  np.dtype(np.int8), np.dtype(np.uint16), np.dtype(np.int32), np.dtype(np.int64)]
NO_COMPILER = shutil.which("nvcc") is None and compiler._nvrtc() is None


def small_values(shape, dtype, seed=0):
    """Small integers in ``dtype``: every sum and product here is exact in it."""
    return random_array(np.random.default_rng(seed), shape, dtype, integer_valued=True)


def oracle(fn, dtype, *hosts):
    """``fn`` in the dtype the kernel's code computes in (float32 for
    float16/bfloat16), stored in ``dtype``; integers wrap as in C."""
    compute = np.float32 if dtype in (np.float16, BF16) else dtype
    return fn(*(h.astype(compute) for h in hosts)).astype(dtype)


@pytest.mark.parametrize("kind, dtype", on_both(INDEXED_DTYPES + [np.dtype(np.bool_)]))
def test_raw_reverse(kind, dtype):
    ng = get_factory(kind)
    rev = ng.ElementwiseKernel(*REVERSE)
    host = small_values((3, 4), dtype)
    x = ng.array(host)
    got = rev(x, size=x.size)
    assert got.shape == (12,) and got.dtype == dtype
    np.testing.assert_array_equal(got.get(), host.ravel()[::-1])
    out = ng.empty((3, 4), dtype)  # a non-raw out decides the loop: no size needed
    assert rev(x, out) is out
    np.testing.assert_array_equal(out.get(), host.ravel()[::-1].reshape(3, 4))
    # a raw operand that is not C-contiguous is read as its C-order copy
    np.testing.assert_array_equal(rev(x.T, size=12).get(), host.T.ravel()[::-1])
    np.testing.assert_array_equal(rev(x * 1, size=12).get(), host.ravel()[::-1])  # a lazy array
    np.testing.assert_array_equal(x.get(), host)


@pytest.mark.parametrize("kind, dtype", on_both(INDEXED_DTYPES))
def test_raw_neighbour_difference(kind, dtype):
    ng = get_factory(kind)
    host = small_values((50,), dtype, seed=1)
    want = oracle(lambda h: h - np.roll(h, -1), dtype, host)
    got = ng.ElementwiseKernel(*NEIGHBOUR)(ng.array(host), 50, size=50)
    np.testing.assert_array_equal(got.get(), want)
    into = ng.ElementwiseKernel(*NEIGHBOUR_INTO)
    y = ng.zeros(50, dtype)
    assert into(ng.array(host), 50, y, size=50) is y
    np.testing.assert_array_equal(y.get(), want)
    made = into(ng.array(host), np.int32(50), size=50)  # a raw output of size elements
    assert made.shape == (50,) and made.dtype == dtype
    np.testing.assert_array_equal(made.get(), want)


@pytest.mark.parametrize("kind, dtype", on_both(INDEXED_DTYPES))
def test_index_and_loop_size(kind, dtype):
    ng = get_factory(kind)
    a, b = ng.array(small_values((3, 1), dtype)), ng.array(small_values((4,), dtype))
    index = ng.ElementwiseKernel(*INDEX)
    got = index(a, b)  # i is the flat C-order index into the broadcast output
    assert got.shape == (3, 4) and got.dtype == np.int64
    np.testing.assert_array_equal(got.get(), np.arange(12).reshape(3, 4))
    # the result is an operand like any tensor
    np.testing.assert_array_equal((got * 2 + 1).get(), np.arange(12).reshape(3, 4) * 2 + 1)
    out = ng.zeros((4, 3), np.int64).T  # not C-contiguous: written through a temporary
    assert index(a, b, out=out) is out
    np.testing.assert_array_equal(out.get(), np.arange(12).reshape(3, 4))
    countdown = ng.ElementwiseKernel("T a", "int64 y", "y = _ind.size() - i", "countdown")
    np.testing.assert_array_equal(countdown(b).get(), [4, 3, 2, 1])
    plus = ng.ElementwiseKernel("T a", "T y", "y = a + (T)(i % 3)", "plus_index")
    host = small_values((2, 5), dtype, seed=2)
    want = oracle(lambda h: h + (np.arange(10).reshape(2, 5) % 3).astype(h.dtype), dtype, host)
    np.testing.assert_array_equal(plus(ng.array(host)).get(), want)


@pytest.mark.parametrize("kind, dtype", on_both(INDEXED_DTYPES))
def test_raw_with_broadcast_parameters(kind, dtype):
    ng = get_factory(kind)
    k = ng.ElementwiseKernel(*WEIGHTED)
    ha, hb, hw = (small_values(s, dtype, seed) for seed, s in enumerate(((3, 4), (4,), (4, 3))))
    want = oracle(lambda a, b, w: a + b * w.reshape(3, 4) - 1, dtype, ha, hb, hw)
    got = k(ng.array(ha), ng.array(hb), ng.array(hw).reshape(12), 1)
    assert got.shape == (3, 4) and got.dtype == dtype
    np.testing.assert_array_equal(got.get(), want)
    # a transposed raw operand is indexed in its own C order (a copy)
    want_t = oracle(lambda a, b, w: a + b * w.T.reshape(3, 4) - 1, dtype, ha, hb, hw)
    np.testing.assert_array_equal(k(ng.array(ha), ng.array(hb), ng.array(hw).T, 1).get(), want_t)
    # non-raw operands read through strides: a transposed view and a broadcast row
    at = ng.array(np.ascontiguousarray(ha.T)).T
    np.testing.assert_array_equal(k(at, ng.array(hb), ng.array(hw), 1).get(), want)


@pytest.mark.parametrize("kind, dtype", on_both(INDEXED_DTYPES + [np.dtype(np.bool_)]))
def test_placeholders_bound_through_raw(kind, dtype):
    ng = get_factory(kind)
    host = small_values((6,), dtype, seed=3)
    if dtype != np.bool_:
        got = ng.ElementwiseKernel(*TWICE)(ng.array(host), size=6)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.get(), oracle(lambda h: h + h, dtype, host))
    y = ng.zeros(6, np.float64)  # U is bound by the raw output given
    assert ng.ElementwiseKernel(*CONVERT)(ng.array(host), y, size=6) is y
    np.testing.assert_array_equal(y.get(), host.astype(np.float64))
    f32 = ng.ElementwiseKernel("raw float32 x", "float32 y", "y = x[i] * 2", "f32")
    got = f32(ng.array(host.astype(np.float64)), size=6)  # a cast copy
    np.testing.assert_array_equal(got.get(), host.astype(np.float32) * 2)


def test_indexed_kernel_runs_at_the_call_and_compiles_per_structure(ng):
    rev = ng.ElementwiseKernel(*REVERSE)
    rev(ng.ones(3, np.float32), size=3)
    for n in (7, 1000, 70001):  # new sizes: no new kernel
        host = np.arange(n, dtype=np.float32)
        x = ng.array(host)
        before = ng.stats()
        y = rev(x, size=n)
        after = ng.stats()
        assert after["kernels_compiled"] == before["kernels_compiled"]
        assert after["kernels_launched"] - before["kernels_launched"] == 1
        x.fill(0)  # the call read x already
        np.testing.assert_array_equal(y.get(), host[::-1])
    assert rev(ng.ones(0, np.float32), size=0).shape == (0,)
    bad = ng.ElementwiseKernel("raw T x", "T y", "T v = x[i];\ny = v +* 2;", "broken_raw")
    with pytest.raises(CompileError, match=compile_error("broken_raw", 2)):
        bad(ng.ones(3), size=3)


def test_indexed_kernel_bad_input(ng):
    make = ng.ElementwiseKernel
    rev, weighted, into = make(*REVERSE), make(*WEIGHTED), make(*NEIGHBOUR_INTO)
    x, a, b = ng.ones(12, np.float32), ng.ones((3, 4), np.float32), ng.ones(4, np.float32)
    with pytest.raises(TypeError, match="raw parameter x takes a tensor of this factory"):
        rev(2.0, size=6)
    with pytest.raises(TypeError, match="host numpy arrays"):
        rev(np.ones(6, np.float32), size=6)
    with pytest.raises(ValueError, match="^Loop size is undecided"):
        rev(x)  # only raw arrays, and neither size nor out
    for size in (5, 12):  # CuPy: size with a non-raw array, whatever its size
        with pytest.raises(ValueError, match="^Specified 'size' can be used only if all"):
            weighted(a, b, x, 1, size=size)
    with pytest.raises(ValueError, match="^Specified 'size' can be used only if all"):
        rev(x, ng.empty(12, np.float32), size=12)  # a non-raw out is an array too
    with pytest.raises(ValueError, match="non-broadcastable output operand with shape"):
        weighted(a, b, x, 1, ng.empty((2, 4), np.float32))
    with pytest.raises(ValueError, match="could not be broadcast"):
        weighted(a, ng.ones(3, np.float32), x, 1)
    with pytest.raises(ValueError, match="Output array size is undecided"):
        make("T a, raw T x", "raw T y", "y[i] = a + x[i]", "k")(b, x)
    with pytest.raises(ValueError, match="raw output y must be C-contiguous"):
        into(x, 12, ng.empty(24, np.float32)[::2], size=12)
    with pytest.raises(TypeError, match="raw output y must be of dtype float32, not float64"):
        into(x, 12, ng.empty(12, np.float64), size=12)
    with pytest.raises(TypeError, match="out must be a tensor"):
        weighted(a, b, x, 1, np.empty((3, 4), np.float32))
    with pytest.raises(TypeError, match="Cannot cast y from float32 to int32"):
        weighted(a, b, x, 1, ng.empty((3, 4), np.int32))
    with pytest.raises(TypeError, match="Type is mismatched"):
        weighted(a, b, ng.ones(12, np.float64), 1)
    with pytest.raises(TypeError, match="size must be an int"):
        rev(x, size=12.0)
    with pytest.raises(ValueError, match="size must not be negative"):
        rev(x, size=-1)
    with pytest.raises(ValueError, match="Can not use 'i' as a parameter name"):
        make("T i", "T y", "y = i", "k")


def test_uses_index():
    assert indexed.uses_index("y = x[i]") and indexed.uses_index("y = _ind.size()")
    assert indexed.uses_index("for (int i = 0; i < 3; ++i) y += x;")  # runs unfused, same values
    assert not indexed.uses_index("y = x.i + p->i + xi + i2; // i\n/* _ind */ z = 'i';")
    assert not ElementwiseKernel(gpuarray.CPU(), *SQDIFF).indexed
    assert ElementwiseKernel(gpuarray.CPU(), *TWICE).indexed


def test_indexed_spec_keys_on_structure_not_sizes():
    ng = gpuarray.CPU()
    k = ElementwiseKernel(ng, *WEIGHTED)

    def spec(m, n, dtype=np.float32):
        operands = ng.operands((ng.ones((m, n), dtype), ng.ones(n, dtype), ng.ones(m * n, dtype), 1))
        return indexed.plan(k, operands, None, None).spec
    assert spec(3, 4) == spec(300, 41)
    assert spec(3, 4) != spec(3, 4, np.float64)
    assert indexed.collapse((2, 1, 3, 4), [(0, 0, 4, 1), (12, 0, 4, 1)]) == ((2, 12), [(0, 1), (12, 1)])


@pytest.mark.skipif(NO_COMPILER, reason="neither nvcc nor NVRTC installed")
@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16, np.dtype(np.float64),
                                   np.dtype(np.int8), np.dtype(np.uint64), np.dtype(np.bool_)],
                         ids=dtype_id)
def test_indexed_kernels_compile_for_sm90(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUARRAY_CACHE_DIR", str(tmp_path))
    ng = gpuarray.CPU()
    x, row = ng.ones(12, dtype), ng.ones(4, dtype)
    calls = [(REVERSE, (x,), None, 12), (CONVERT, (x,), ng.empty(12, np.float64), 12),
             (INDEX, (ng.ones((4, 3), dtype).T, row), None, None)]
    if dtype != np.bool_:
        calls += [(NEIGHBOUR, (x, 12), None, 12),
                  (NEIGHBOUR_INTO, (x, 12), ng.empty(12, dtype), 12),
                  (WEIGHTED, (ng.ones((3, 4), dtype), row, x, 1), None, None), (TWICE, (x,), None, 12)]
    for params, operands, out, size in calls:
        call = indexed.plan(ElementwiseKernel(ng, *params), ng.operands(operands), out, size)
        compiler.compile_source(indexed_source.generate(call.spec).text, "sm_90", generate.HEADERS)
    broken = ElementwiseKernel(ng, "raw T x", "T y", "T v = x[i];\ny = v +* 2;", "broken_raw")
    call = indexed.plan(broken, ng.operands((x,)), None, 12)
    with pytest.raises(CompileError, match=r"broken_raw\(2\)"):
        compiler.compile_source(indexed_source.generate(call.spec).text, "sm_90", generate.HEADERS)

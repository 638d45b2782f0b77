"""User kernels in CuPy's syntax: ng.ElementwiseKernel, ng.ReductionKernel and ng.RawKernel.

On the GPU, numpy as the oracle: values for several dtypes, broadcasting,
Python scalars, placeholders and fixed types; an elementwise kernel used
inside an expression is one fused kernel; out= and errors (malformed
parameters, wrong arguments, code that does not compile -- the compiler's
message with the line in the user's code).  Without a GPU: the generated
source of a tree holding a user function compiles for sm_90 (nvcc), and
the CPU factory refuses user kernels with a clear error.
"""
import shutil
import subprocess

import numpy as np
import pytest

import gpuarray
from gpuarray.core import ops, optree
from gpuarray.cuda.compiler import CompileError
from gpuarray.fusion import generate, launch, plan
from gpuarray.userkernels.elementwise import UserFunction
from gpuarray.userkernels.reduction import UserReduction

SQDIFF = ("T x, T y", "T z", "z = (x - y) * (x - y)", "sqdiff")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
def test_elementwise_kernel_values_and_broadcasting(gpu_ng, dtype):
    ng = gpu_ng
    k = ng.ElementwiseKernel(*SQDIFF)
    rng = np.random.default_rng(0)
    x, y = (rng.integers(-5, 5, shape).astype(dtype) for shape in ((3, 4), (4,)))
    got = k(ng.array(x), ng.array(y))
    assert got.shape == (3, 4) and got.dtype == dtype
    np.testing.assert_array_equal(got.get(), ((x - y) * (x - y)).astype(dtype))
    np.testing.assert_array_equal(k(ng.array(x), 2).get(), ((x - 2) * (x - 2)).astype(dtype))


def test_fixed_types_cast_and_refuse(gpu_ng):
    ng = gpu_ng
    k = ng.ElementwiseKernel("float32 x, int32 n", "float64 z", "z = x * n + 0.5", "scale")
    x = np.arange(5, dtype=np.float64)
    got = k(ng.array(x), np.int32(3))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.get(), x.astype(np.float32) * 3 + 0.5)
    with pytest.raises(TypeError, match="Cannot cast n from float64 to int32"):
        k(ng.array(x), ng.array(x))


def test_elementwise_kernel_fuses_with_the_expression(gpu_ng):
    ng = gpu_ng
    k = ng.ElementwiseKernel(*SQDIFF)
    a = ng.array(np.linspace(-1, 1, 4096, dtype=np.float32))
    b = ng.array(np.linspace(2, 0, 4096, dtype=np.float32))
    out = ng.empty(4096, np.float32)
    before = ng.stats()["kernels_launched"]
    out[:] = ng.sqrt(k(a * 2, b) + 1)
    assert ng.stats()["kernels_launched"] - before == 1
    ha, hb = a.get() * 2, b.get()
    np.testing.assert_allclose(out.get(), np.sqrt((ha - hb) ** 2 + 1), rtol=1e-6)
    total = float(ng.sum(k(a, b)))
    assert total == pytest.approx(float(np.sum((a.get() - hb) ** 2, dtype=np.float64)), rel=1e-5)
    result = ng.empty(4096, np.float32)
    assert k(a, b, result) is result
    np.testing.assert_allclose(result.get(), (a.get() - hb) ** 2, rtol=1e-6)


def test_elementwise_kernel_errors(gpu_ng):
    ng = gpu_ng
    with pytest.raises(ValueError, match="Syntax error"):
        ng.ElementwiseKernel("float32", "float32 z", "z = 1", "k")
    with pytest.raises(ValueError, match="exactly one output"):
        ng.ElementwiseKernel("T x", "T y, T z", "y = x; z = x", "k")
    with pytest.raises(NotImplementedError, match="raw parameters"):
        ng.ElementwiseKernel("raw T x", "T z", "z = x[0]", "k")
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
    with pytest.raises(CompileError, match=r"broken\(1\)"):
        bad(ng.ones(3))


L2 = ("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)], ids=str)
def test_reduction_kernel_values(gpu_ng, axis):
    ng = gpu_ng
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


def test_reduction_kernel_max_fuses_and_splits(gpu_ng):
    ng = gpu_ng
    absmax = ng.ReductionKernel("T x", "T y", "fabs(x)", "a > b ? a : b", "y = a", "0", "absmax")
    host = np.random.default_rng(2).standard_normal(1 << 21).astype(np.float64)
    host[12345] = -9.5
    x = ng.array(host)
    assert float(absmax(x * 2)) == 19.0  # a long row: split into partials, as sum is
    out = ng.empty((64, 1), np.float64)
    before = ng.stats()["kernels_launched"]
    out[:] = absmax(x.reshape(64, -1), axis=1, keepdims=True) + 1
    assert ng.stats()["kernels_launched"] - before == 1
    np.testing.assert_array_equal(out.get(), np.abs(host.reshape(64, -1)).max(1, keepdims=True) + 1)
    count = ng.ReductionKernel("T x", "int64 n", "x > 0", "a + b", "n = a", "0", "positives",
                               reduce_type=np.int64)
    assert int(count(x)) == int((host > 0).sum())


def test_reduction_kernel_errors(gpu_ng):
    ng = gpu_ng
    with pytest.raises(ValueError, match="identity"):
        ng.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "", "k")
    k = ng.ReductionKernel(*L2)
    with pytest.raises(np.exceptions.AxisError):
        k(ng.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match="wrong shape"):
        k(ng.ones((2, 3)), axis=1, out=ng.empty((2, 1)))
    bad = ng.ReductionKernel("T x", "T y", "x", "a +* b", "y = a", "0", "badreduce")
    with pytest.raises(CompileError, match=r"badreduce\(1\)"):
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


def test_the_cpu_factory_refuses_user_kernels():
    ng = gpuarray.CPU()
    with pytest.raises(NotImplementedError, match="needs the GPU factory"):
        ng.ElementwiseKernel(*SQDIFF)
    with pytest.raises(NotImplementedError, match="needs the GPU factory"):
        ng.RawKernel(ADD, "add")
    with pytest.raises(NotImplementedError, match="needs the GPU factory"):
        ng.ReductionKernel(*L2)


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

"""User kernels on the CPU factory: C++ compiled for the host.

On both factories (the GPU is the reference the host must match): a
snippet calling CUDA's math by its CUDA names compiles and computes the
same; a float16 operand computed in the same expression is read unrounded,
as the fused kernel reads it; out= into a transposed view and in place.
On the CPU factory: one compile per structure (a second kernel of the same
structure compiles nothing, new sizes and strides neither), libraries kept
on disk and loaded by a new process's kernels; the compiler's error with
the line in the user's code; a clear error without a C++ compiler.
"""
import numpy as np
import pytest

import gpuarray
from gpuarray.cuda.compiler import CompileError
from gpuarray.userkernels import host_compiler

#: CUDA's names, as user code writes them on the GPU
MATH = ("float32 x, float64 d, int32 n", "float32 y",
        "y = sqrtf(fabsf(x)) + (float)exp(d) * rsqrtf(2.0f) + min(n, 3) + max(x, 0.5f)"
        " + __expf(x) * __fdividef(1.0f, 4.0f) + (__float_as_int(1.0f) == 0x3f800000)"
        " + __popc(n) + floorf(x) + (float)fmin(d, 1.0)", "cuda_math")


def test_cuda_math_names(ng):
    k = ng.ElementwiseKernel(*MATH)
    x = np.linspace(-2, 2, 7, dtype=np.float32)
    d = np.linspace(-1, 1, 7)
    n = np.arange(7, dtype=np.int32)
    f = np.float32
    want = (np.sqrt(np.abs(x)) + np.exp(d).astype(f) * f(1 / np.sqrt(2)) + np.minimum(n, 3)
            + np.maximum(x, f(0.5)) + np.exp(x) * f(0.25) + 1
            + np.array([bin(v).count("1") for v in n]) + np.floor(x) + np.minimum(d, 1).astype(f))
    np.testing.assert_allclose(k(ng.array(x), ng.array(d), ng.array(n)).get(), want, rtol=2e-6,
                               atol=2e-6)


def test_float16_operands_of_an_expression_are_read_unrounded(ng):
    k = ng.ElementwiseKernel("T x", "T y", "y = (x - 3) * 1024", "excess")
    host = np.full(4, 1 + 2**-10, np.float16)  # 3 * host needs more bits than float16 has
    a = ng.array(host)
    want = ((host.astype(np.float32) * 3 - 3) * 1024).astype(np.float16)
    np.testing.assert_array_equal(k(a * 3).get(), want)
    stored = ng.evaluate(a * 3)  # a tensor holds the rounded value
    np.testing.assert_array_equal(k(stored).get(), ((stored.get().astype(np.float32) - 3) * 1024)
                                  .astype(np.float16))


def test_out_views_and_in_place(ng):
    k = ng.ElementwiseKernel("T x, T y", "T z", "z = x * 10 + y", "axpy10")
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    y = np.arange(4, dtype=np.float64)
    out = ng.zeros((4, 3)).T  # not contiguous
    assert k(ng.array(x), ng.array(y), out) is out
    np.testing.assert_array_equal(out.get(), x * 10 + y)
    a = ng.array(x)
    k(a, a[::-1], a)  # reads as if copied first
    np.testing.assert_array_equal(a.get(), x * 10 + x[::-1])
    r = ng.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "plain_sum")
    b = ng.array(x)
    r(b, axis=0, out=b[0])
    np.testing.assert_array_equal(b.get()[0], x.sum(0))


def test_host_kernels_compile_once_per_structure(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUARRAY_CACHE_DIR", str(tmp_path))
    ng = gpuarray.CPU()
    params = ("T x, T y", "T z", "z = x * 3 - y", "cache_probe")
    x = ng.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    compiled = host_compiler.COUNTS["compiled"]
    np.testing.assert_array_equal(ng.ElementwiseKernel(*params)(x, x).get(), x.get() * 2)
    assert ng.stats()["kernels_compiled"] == 1
    assert host_compiler.COUNTS["compiled"] == compiled + 1
    assert len(list((tmp_path / "host").glob("*.so"))) == 1
    k = ng.ElementwiseKernel(*params)  # another kernel, other sizes and strides: nothing new
    np.testing.assert_array_equal(k(x.T, x[0, 0, :2]).get(), x.get().T * 3 - x.get()[0, 0, :2])
    np.testing.assert_array_equal(k(x[:, ::2], x[0, :2]).get(), x.get()[:, ::2] * 3 - x.get()[0, :2])
    assert ng.stats()["kernels_compiled"] == 1
    monkeypatch.setattr(host_compiler, "_LOADED", {})  # as in a new process: from the disk
    np.testing.assert_array_equal(ng.ElementwiseKernel(*params)(x, x).get(), x.get() * 2)
    assert ng.stats()["kernels_compiled"] == 2
    assert host_compiler.COUNTS["compiled"] == compiled + 1


def test_host_compile_error():
    ng = gpuarray.CPU()
    bad = ng.ElementwiseKernel("T x", "T z", "T v = x;\nz = v +* 2;", "broken_host")
    with pytest.raises(CompileError, match=r"(?s)failed to compile for the host .*source saved at "
                       r".*broken_host:2:\d+: error"):
        bad(ng.ones(3))


def test_no_host_compiler(tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", "")
    monkeypatch.setenv("PATH", str(tmp_path))
    host_compiler.compiler_command.cache_clear()
    try:
        ng = gpuarray.CPU()
        with pytest.raises(CompileError, match=r"no(ne)? .*install one, e\.g\. 'apt-get install g\+\+'"):
            ng.ElementwiseKernel("T x", "T y", "y = x", "no_compiler")(ng.ones(2))
    finally:
        host_compiler.compiler_command.cache_clear()

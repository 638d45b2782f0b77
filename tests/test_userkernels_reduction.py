"""ReductionKernel's indexed calls: CuPy's ``raw`` parameters and indices.

On both factories, numpy as the oracle: raw parameters indexed by the
reduced index ``_J``, the flat input index ``_j`` and the output index
``_i`` (in the map and the post map), ``_in_ind.size()`` and
``_out_ind.size()``, a scalar named by the identity (CuPy's own
``first_nonzero``), a raw output written by the post map; shapes that make
the GPU kernel give each output many threads, or each thread few elements
and many outputs a block (past one grid); empty reductions; one compile
per structure; CuPy's errors.  Without a GPU: the CUDA source of indexed
reductions compiles for sm_90.
"""
import numpy as np
import pytest

from conftest import BF16, get_factory
from gpuarray.cuda import compiler
from gpuarray.cuda.compiler import CompileError
from gpuarray.fusion import generate
from gpuarray.userkernels import reduction_source
from gpuarray.userkernels.indexed_source import Slot
from gpuarray.userkernels.reduction import UserReduction
from test_userkernels import (INDEXED_DTYPES, NO_COMPILER, compile_error, on_both, oracle,
                              small_values)

WEIGHTED_SUM = ("T x, raw T w", "T y", "x * w[_J]", "a + b", "y = a", "0", "weighted_sum")
FLAT_WEIGHTS = ("T x, raw T w", "T y", "x * w[_j]", "a + b", "y = a", "0", "flat_weights")
SCALED = ("T x, raw T s", "T y", "x", "a + b", "y = a * s[_i]", "0", "scaled_sum")
INTO = ("T x", "raw T y", "x", "a + b", "y[_i] = a", "0", "sum_into")
MEAN = ("T x", "T y", "x", "a + b", "y = a / (T)(_in_ind.size() / _out_ind.size())", "0", "imean")
#: CuPy's (cupy/_manipulation/add_remove.py): the identity names a scalar parameter
FIRST_NONZERO = ("T data, int64 len", "int64 y", "data == T(0) ? len : _j", "min(a, b)", "y = a",
                 "len", "first_nonzero")


@pytest.mark.parametrize("kind, dtype", on_both([d for d in INDEXED_DTYPES]))
def test_raw_reduction_weighted_sum(kind, dtype):
    ng = get_factory(kind)
    k = ng.ReductionKernel(*WEIGHTED_SUM)
    x = small_values((5, 3, 4), dtype)
    for axis, n in ((0, 5), ((0, 1), 15), (None, 60)):
        w = small_values((n,), dtype, seed=n)
        got = k(ng.array(x), ng.array(w), axis=axis)
        want = oracle(lambda h, v: np.sum(h.reshape(n, -1) * v[:, None], axis=0), dtype, x, w)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.get(), want.reshape(np.sum(x, axis=axis).shape))
    kept = k(ng.array(x), ng.array(w[:5]), axis=0, keepdims=True)
    assert kept.shape == (1, 3, 4)


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_raw_reduction_indices(kind):
    ng = get_factory(kind)
    x = small_values((4, 6), np.float32)
    w = small_values((24,), np.float32, seed=1)
    got = ng.ReductionKernel(*FLAT_WEIGHTS)(ng.array(x), ng.array(w), axis=0)
    np.testing.assert_array_equal(got.get(), np.sum(x * w.reshape(4, 6), axis=0))
    s = small_values((6,), np.float32, seed=2)
    got = ng.ReductionKernel(*SCALED)(ng.array(x), ng.array(s), axis=0)
    np.testing.assert_array_equal(got.get(), np.sum(x, axis=0) * s)
    mean = ng.ReductionKernel(*MEAN)  # indices alone, no raw: any axis
    np.testing.assert_allclose(mean(ng.array(x), axis=1).get(), x.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose((mean(ng.array(x), axis=0) * 2).get(), x.mean(axis=0) * 2, rtol=1e-6)
    first = ng.ReductionKernel(*FIRST_NONZERO)
    assert int(first(ng.array(np.array([0, 0, 3, 0, 5], np.float32)), 5)) == 2
    assert int(first(ng.zeros(4, np.int32), 4)) == 4
    h = np.array([[0, 1, 0], [0, 0, 2], [0, 3, 4], [0, 0, 0]], np.int32)
    np.testing.assert_array_equal(first(ng.array(h), 99, axis=0).get(), [99, 1, 5])
    # reduced over a trailing axis, _j counts as CuPy's does, reduced axes first:
    # _J * _out_ind.size() + _i
    np.testing.assert_array_equal(first(ng.array(h), 99, axis=1).get(), [4, 9, 6, 99])


@pytest.mark.parametrize("kind, dtype", on_both([np.dtype(np.float16), BF16, np.dtype(np.float32),
                                                 np.dtype(np.int8), np.dtype(np.int64)]))
def test_raw_reduction_output(kind, dtype):
    ng = get_factory(kind)
    k = ng.ReductionKernel(*INTO)
    x = small_values((3, 2, 4), dtype)
    y = ng.zeros(10, dtype)  # written where the post map says: the first 8 elements
    assert k(ng.array(x), axis=0, out=y) is y
    np.testing.assert_array_equal(y.get()[:8], oracle(lambda h: h.sum(0), dtype, x).ravel())
    np.testing.assert_array_equal(y.get()[8:], 0)
    z = ng.zeros(4, dtype)
    k(ng.array(x), axis=(0, 1), out=z)
    np.testing.assert_array_equal(z.get(), oracle(lambda h: h.sum((0, 1)), dtype, x))


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_raw_reduction_launch_shapes(kind):
    ng = get_factory(kind)
    k = ng.ReductionKernel(*WEIGHTED_SUM)
    long = small_values((3000, 5), np.float64)  # few outputs, many elements each
    w = small_values((3000,), np.float64, seed=1)
    np.testing.assert_array_equal(k(ng.array(long), ng.array(w), axis=0).get(),
                                  np.sum(long * w[:, None], axis=0))
    before = ng.stats()
    wide = small_values((2, 600001), np.float64, seed=2)  # many outputs of two elements
    got = k(ng.array(wide), ng.array(w[:2]), axis=0)
    after = ng.stats()
    assert after["kernels_compiled"] == before["kernels_compiled"]  # same structure
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    np.testing.assert_array_equal(got.get(), wide[0] * w[0] + wide[1] * w[1])
    empty = k(ng.ones((0, 4)), ng.ones(0), axis=0)  # nothing reduced: the identity
    np.testing.assert_array_equal(empty.get(), np.zeros(4))
    assert k(ng.ones((3, 0)), ng.ones(3), axis=0).shape == (0,)


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_raw_reduction_errors(kind):
    ng = get_factory(kind)
    k = ng.ReductionKernel(*WEIGHTED_SUM)
    x, w = ng.ones((3, 4)), ng.ones(3)
    for axis in (1, -1, (1,)):
        with pytest.raises(NotImplementedError, match="^Illegal conditions"):
            k(x, w, axis=axis)
    only_raw = ng.ReductionKernel("raw T x", "T y", "x[_j]", "a + b", "y = a", "0", "only_raw")
    with pytest.raises(ValueError, match=r"^Loop size is undecided\.$"):
        only_raw(w)
    with pytest.raises(TypeError, match="raw parameter w takes a tensor of this factory"):
        k(x, 2.0, axis=0)
    with pytest.raises(ValueError, match="wrong shape"):
        k(x, w, axis=0, out=ng.empty((1, 4)))
    into = ng.ReductionKernel(*INTO)
    with pytest.raises(ValueError, match="Output array size is undecided"):
        into(x, axis=0)
    with pytest.raises(ValueError, match="raw output y must be C-contiguous"):
        into(x, axis=0, out=ng.empty(8)[::2])
    with pytest.raises(TypeError, match="raw output y must be of dtype float64, not float32"):
        into(x, axis=0, out=ng.empty(4, np.float32))
    bad = ng.ReductionKernel("T x, raw T w", "T y", "x *\n* w[_J]", "a + b", "y = a", "0", "badmap")
    with pytest.raises(CompileError, match=compile_error("badmap_map", 2)):
        bad(x, w, axis=0)


@pytest.mark.skipif(NO_COMPILER, reason="neither nvcc nor NVRTC installed")
@pytest.mark.parametrize("storage, ctype", [("ga_half", "float"), ("ga_bf16", "float"),
                                            ("ga_fp8e4m3", "float"), ("signed char", "int"),
                                            ("double", "double"), ("bool", "bool")])
def test_raw_reductions_compile_for_sm90(storage, ctype, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUARRAY_CACHE_DIR", str(tmp_path))
    typedefs = (("T", ctype),)
    combiner = UserReduction("probe", "a + b", "n", ctype, typedefs)
    inputs = (Slot("x", "strided", storage, ctype), Slot("w", "raw", storage, ctype),
              Slot("n", "scalar", "long long", "long long"))
    for post, out in (("y = a + w[_i]", Slot("y", "flat", storage, ctype)),
                      ("y[_i] = a", Slot("y", "raw", storage, ctype))):
        spec = reduction_source.ReductionSpec("probe", "x * w[_J] + (T)(_j % 3)", post, combiner,
                                              inputs, out, 2, 1, typedefs)
        compiler.compile_source(reduction_source.generate(spec).text, "sm_90", generate.HEADERS)

"""Shared fixtures and helpers for the gpuarray test-suite.

* ``ng``      -- a factory, parametrized over the CPU and the GPU backend
                 (ids ``cpu`` / ``gpu``); the GPU case skips with
                 ``"no GPU: <reason>"`` where no GPU or no pycuda is present.
* ``gpu_ng``  -- the GPU factory only (kernel-count checks).
* ``factory_kind`` -- ``"cpu"`` / ``"gpu"``, for tests that must build fresh
                 factories themselves (seeds, stochastic rounding); use
                 :func:`new_factory`.

Factories are created once per session per kind: creating CUDA contexts and
loading the kernel cache is slow.

:func:`assert_matches` compares a result with a numpy oracle using tolerances
chosen by dtype (see its docstring).
"""

import ml_dtypes
import numpy as np
import pytest

import gpuarray

BF16 = np.dtype(ml_dtypes.bfloat16)

#: every dtype gpuarray supports, in a fixed order (ids below)
ALL_DTYPES = [
    np.dtype(np.float16),
    BF16,
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.int8),
    np.dtype(np.uint8),
    np.dtype(np.int16),
    np.dtype(np.uint16),
    np.dtype(np.int32),
    np.dtype(np.uint32),
    np.dtype(np.int64),
    np.dtype(np.uint64),
    np.dtype(np.bool_),
]
FLOAT_DTYPES = [d for d in ALL_DTYPES if d.kind == "f" or d == BF16]
INT_DTYPES = [d for d in ALL_DTYPES if d.kind in "iu"]
#: dtypes numpy knows natively (everything but bfloat16)
NUMPY_DTYPES = [d for d in ALL_DTYPES if d != BF16]


def dtype_id(dt):
    dt = np.dtype(dt)
    return "bfloat16" if dt == BF16 else dt.name


def is_float(dt):
    dt = np.dtype(dt)
    return dt.kind == "f" or dt == BF16


# --------------------------------------------------------------------------
# factories
# --------------------------------------------------------------------------

_GPU_STATE = {}


def gpu_skip_reason():
    """None when a GPU can be used, otherwise the reason string."""
    if "reason" not in _GPU_STATE:
        try:
            ok = bool(gpuarray.gpu_available())
        except Exception as exc:  # pragma: no cover - defensive
            ok = False
            _GPU_STATE["reason"] = f"gpu_available() raised {exc!r}"
        if ok:
            _GPU_STATE["reason"] = None
        elif "reason" not in _GPU_STATE:
            try:
                _GPU_STATE["reason"] = str(gpuarray.gpu_unavailable_reason())
            except Exception as exc:  # pragma: no cover - defensive
                _GPU_STATE["reason"] = f"unknown ({exc!r})"
    return _GPU_STATE["reason"]


def skip_if_no_gpu():
    reason = gpu_skip_reason()
    if reason is not None:
        pytest.skip(f"no GPU: {reason}")


def new_factory(kind, **kwargs):
    """Build a fresh factory of the given kind (uncached)."""
    if kind == "gpu":
        skip_if_no_gpu()
        kw = {"stochastic_round": False, "seed": 0}
        kw.update(kwargs)
        return gpuarray.GPU(**kw)
    kw = {"seed": 0}
    kw.update(kwargs)
    return gpuarray.CPU(**kw)


_FACTORIES = {}


def get_factory(kind, **kwargs):
    """Session-cached factory of the given kind and options."""
    key = (kind, tuple(sorted(kwargs.items())))
    if key not in _FACTORIES:
        _FACTORIES[key] = new_factory(kind, **kwargs)
    return _FACTORIES[key]


@pytest.fixture(scope="session", params=["cpu", "gpu"])
def ng(request):
    return get_factory(request.param)


@pytest.fixture(scope="session")
def gpu_ng():
    return get_factory("gpu")


@pytest.fixture(params=["cpu", "gpu"])
def factory_kind(request):
    if request.param == "gpu":
        skip_if_no_gpu()
    return request.param


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------


def random_array(rng, shape, dtype, lo=None, hi=None, integer_valued=False):
    """Random host data of ``dtype`` in [lo, hi).

    Defaults: floats in [-2, 2), signed ints in [-20, 20), unsigned in
    [0, 40), bool 50/50.  bfloat16 data is produced through float32.
    """
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if lo is None:
            lo = -20 if dtype.kind == "i" else 0
        if hi is None:
            hi = 20 if dtype.kind == "i" else 40
        lo = max(int(lo), int(info.min))
        hi = min(int(hi), int(info.max) + 1)
        return rng.integers(lo, hi, size=shape, dtype=dtype)
    lo = -2.0 if lo is None else lo
    hi = 2.0 if hi is None else hi
    if integer_valued:
        vals = rng.integers(int(np.ceil(lo)), int(np.ceil(hi)), size=shape).astype(np.float64)
    else:
        vals = rng.uniform(lo, hi, size=shape)
    return vals.astype(dtype)


def normal_array(dtype, shape, seed=0):
    """Standard normal host data of ``dtype``; complex values get a normal
    imaginary part too."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


# --------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------

#: default relative tolerances by dtype for "arithmetic" results
RTOL = {
    "float64": 1e-12,
    "float32": 1e-5,
    "float16": 2e-3,
    "bfloat16": 1.6e-2,
}
#: float32 tolerance for transcendental functions (CUDA libm, a few ulp)
RTOL_TRANSCENDENTAL_F32 = 5e-5
#: smallest absolute slack, by dtype (subnormal granularity and the like)
ATOL_FLOOR = {
    "float64": 1e-300,
    "float32": 1e-37,
    "float16": 1e-7,
    "bfloat16": 1e-37,
}


def default_rtol(dtype, transcendental=False):
    name = dtype_id(dtype)
    if name == "float32" and transcendental:
        return RTOL_TRANSCENDENTAL_F32
    return RTOL[name]


def same_error(ours, theirs):
    """``ours()`` raises what ``theirs()`` (numpy) raises: class and message."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(Exception) as got:
        ours()
    assert type(got.value) is type(expected.value), (got.value, expected.value)
    assert str(got.value) == str(expected.value)


def to_host(x):
    """Host numpy array from a tensor, an op-tree, or anything array-like."""
    if hasattr(x, "get") and not isinstance(x, np.ndarray):
        return np.asarray(x.get())
    return np.asarray(x)


def assert_matches(got, expected, dtype=None, rtol=None, atol=None, scale=None,
                   transcendental=False, err_msg=""):
    """Compare ``got`` with the oracle ``expected``.

    * ``dtype`` is the dtype the result must have (default: expected's);
      ``got`` must carry exactly that dtype and expected's shape.
    * integers and bool: exact.
    * floats: ``|got - expected| <= atol + rtol * |expected|`` with
      rtol by dtype (float64 1e-12, float32 1e-5 or 5e-5 for transcendental
      functions, float16 2e-3, bfloat16 1.6e-2 -- fp16/bf16 math runs in
      fp32 and is rounded on store, so one ulp or so of the float64 result
      rounded to the dtype), and ``atol = rtol * scale``; ``scale`` defaults
      to the largest finite magnitude of ``expected`` (pass ``scale=1`` for
      elementwise results that should be accurate relative to each element).
      NaN positions and infinities (with sign) must match.
    """
    got = to_host(got)
    expected = np.asarray(expected)
    dtype = np.dtype(dtype) if dtype is not None else expected.dtype
    assert got.dtype == dtype, f"dtype {got.dtype} != expected {dtype}. {err_msg}"
    assert got.shape == expected.shape, (
        f"shape {got.shape} != expected {expected.shape}. {err_msg}")
    if not is_float(dtype):
        np.testing.assert_array_equal(got, expected.astype(dtype), err_msg=err_msg)
        return
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    if rtol is None:
        rtol = default_rtol(dtype, transcendental)
    if atol is None:
        if scale is None:
            fin = np.abs(e[np.isfinite(e)])
            scale = float(fin.max()) if fin.size else 1.0
        atol = rtol * scale + ATOL_FLOOR[dtype_id(dtype)]
    np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True,
                               err_msg=err_msg)


def round_to(values, dtype):
    """float64 oracle values rounded (nearest-even) to ``dtype``."""
    return np.asarray(values, dtype=np.float64).astype(dtype) if is_float(dtype) \
        else np.asarray(values).astype(dtype)


def assert_no_new_allocations(ng, before):
    """The pool made no device allocation since ``before`` (an ``ng.stats()``).

    Except to replace blocks it gave back to the driver on running out of
    memory: under ``make sanitize`` many processes share the device, and a
    recovery releases the whole cache, which later requests allocate again.
    """
    after = ng.stats()

    def grew(key):
        return after.get(key, 0) - before.get(key, 0)

    new = grew("device_allocations")
    if grew("oom_recoveries"):
        new -= grew("device_frees")
    assert new <= 0, (f"{new} new device allocation(s)",
                      {k: (before[k], after[k]) for k in before if before[k] != after[k]})


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "no_sanitizer: left out of make sanitize (a kernel that faults on purpose, a forked "
        "child, tests of when memory returns, which the tool delays, and the thread tests)")


def pytest_addoption(parser):
    parser.addoption(
        "--shard", default=None, metavar="I/N",
        help="run every N-th collected test starting at the I-th (0-based); "
             "make sanitize runs N sanitizer processes side by side with it")


def pytest_collection_modifyitems(config, items):
    shard = config.getoption("--shard")
    if shard is None:
        return
    try:
        index, count = (int(part) for part in shard.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard wants I/N, not {shard!r}") from None
    if not 0 <= index < count:
        raise pytest.UsageError(f"--shard {shard}: I must be in [0, N)")
    # round robin, so that each shard gets a slice of every test file
    kept = items[index::count]
    left = [item for position, item in enumerate(items) if position % count != index]
    config.hook.pytest_deselected(items=left)
    items[:] = kept

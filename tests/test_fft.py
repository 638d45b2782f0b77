"""``ng.fft``: numpy.fft as the oracle, on both factories (cuFFT on the GPU).

Every transform with its ``n``/``s``, ``axis``/``axes`` and ``norm``,
numpy 2's result dtypes, views and lazy inputs, more than three axes and
repeated axes, frequencies and shifts, plans reused without device
allocations growing, and numpy's errors.
"""
import numpy as np
import pytest

import gpuarray

from conftest import assert_no_new_allocations, normal_array

DTYPES = [np.dtype(d) for d in (np.float32, np.float64, np.complex64, np.complex128)]
IDS = ["f32", "f64", "c64", "c128"]


def _check(got, want):
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    single = want.dtype in (np.float32, np.complex64)
    scale = max(np.abs(want).max(), 1.0) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=(2e-5 if single else 1e-12) * scale)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("name, kwargs", [
    ("fft", {}), ("fft", {"n": 13, "axis": 0}), ("fft", {"n": 5, "norm": "ortho"}),
    ("ifft", {}), ("ifft", {"axis": 1, "norm": "forward"}), ("ifft", {"n": 40}),
    ("fftn", {}), ("fftn", {"s": (3, 20), "axes": (0, 2)}), ("ifftn", {"norm": "ortho"}),
    ("fft2", {}), ("ifft2", {"s": (9, 7)}),
    ("irfft", {}), ("irfft", {"n": 19, "axis": 0}), ("irfftn", {"axes": (0, 2)}),
    ("irfft2", {"s": (6, 10), "norm": "forward"}), ("hfft", {}), ("hfft", {"n": 9, "norm": "ortho"}),
])
def test_transforms_of_any_input(ng, dtype, name, kwargs):
    host = normal_array(dtype, (6, 5, 16))
    got = getattr(ng.fft, name)(ng.array(host), **kwargs)
    _check(got, getattr(np.fft, name)(host, **kwargs))


@pytest.mark.parametrize("dtype", DTYPES[:2], ids=IDS[:2])
@pytest.mark.parametrize("name, kwargs", [
    ("rfft", {}), ("rfft", {"n": 11, "axis": 1, "norm": "ortho"}), ("rfftn", {}),
    ("rfftn", {"s": (4, 9), "axes": (2, 0)}), ("rfft2", {"norm": "forward"}), ("ihfft", {}),
    ("ihfft", {"n": 6, "axis": 0}),
])
def test_real_input_transforms(ng, dtype, name, kwargs):
    host = normal_array(dtype, (6, 5, 16))
    _check(getattr(ng.fft, name)(ng.array(host), **kwargs), getattr(np.fft, name)(host, **kwargs))


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.bool_, gpuarray.bfloat16],
                         ids=["f16", "i8", "bool", "bf16"])
def test_result_dtypes_follow_numpy(ng, dtype):
    host = (np.arange(8) % 3).astype(dtype)
    reference = host.astype(np.float32) if dtype == gpuarray.bfloat16 else host
    for name in ("fft", "rfft", "ifft"):
        _check(getattr(ng.fft, name)(ng.array(host)), getattr(np.fft, name)(reference))


def test_views_lazy_inputs_and_out(ng):
    host = normal_array(np.complex64, (12, 10))
    t = ng.array(host)
    _check(ng.fft.fft(t), np.fft.fft(host))  # read in place: left as it was
    assert np.array_equal(t.get(), host)
    real = ng.array(host.real.copy())
    _check(ng.fft.rfft2(real), np.fft.rfft2(host.real))
    assert np.array_equal(real.get(), host.real)
    _check(ng.fft.fft(t.T), np.fft.fft(host.T))  # a strided view
    _check(ng.fft.fft(t[::2, 1:]), np.fft.fft(host[::2, 1:]))
    _check(ng.fft.ifft(t * 2 - 1j), np.fft.ifft(host * 2 - 1j))  # a lazy op-tree
    out = ng.empty((12, 10), np.complex64)
    ng.fft.fft(t, out=out)
    _check(out, np.fft.fft(host))
    _check(ng.fft.fft(host), np.fft.fft(host))  # a host array_like


def test_more_than_three_axes_and_repeated_axes(ng):
    host = normal_array(np.complex128, (3, 4, 5, 6, 2))
    t = ng.array(host)
    _check(ng.fft.fftn(t), np.fft.fftn(host))
    _check(ng.fft.ifftn(t, axes=(1, 1, 3)), np.fft.ifftn(host, axes=(1, 1, 3)))
    real = normal_array(np.float64, (3, 4, 5, 6))
    _check(ng.fft.rfftn(ng.array(real)), np.fft.rfftn(real))
    _check(ng.fft.irfftn(t), np.fft.irfftn(host))


def test_long_and_awkward_lengths(ng):
    for n in (1, 2, 97, 1000, 4096 * 3, 1 << 18):
        host = normal_array(np.complex64, (n,), seed=n)
        _check(ng.fft.fft(ng.array(host)), np.fft.fft(host))
    host = normal_array(np.float32, (7, 1 << 12))
    _check(ng.fft.irfft(ng.fft.rfft(ng.array(host))), np.fft.irfft(np.fft.rfft(host)))


def test_frequencies_and_shifts(ng):
    for n, d in ((8, 1.0), (7, 0.25)):
        _check(ng.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
        _check(ng.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    assert ng.fft.fftfreq(4, dtype=np.float32).dtype == np.float32
    host = normal_array(np.float32, (5, 6))
    t = ng.array(host)
    _check(ng.fft.fftshift(t), np.fft.fftshift(host))
    _check(ng.fft.ifftshift(t, axes=0), np.fft.ifftshift(host, axes=0))
    _check(ng.fft.ifftshift(ng.fft.fftshift(t)), host)


def test_module_namespace_has_fft():
    import gpuarray.numpy as gnp

    host = normal_array(np.complex64, (8,))
    _check(gnp.fft.fft(gnp.asarray(host)), np.fft.fft(host))


def test_errors_are_numpys(ng):
    t = ng.array(normal_array(np.complex64, (4, 6)))
    with pytest.raises(ValueError, match="Invalid norm value"):
        ng.fft.fft(t, norm="bad")
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        ng.fft.fft(t, n=0)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        ng.fft.fftfreq(0)
    with pytest.raises(np.exceptions.AxisError):
        ng.fft.fft(t, axis=2)
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        ng.fft.fftn(t, s=(2, 2), axes=(0,))
    with pytest.raises(TypeError, match="real input"):
        ng.fft.rfft(t)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        ng.fft.irfft(ng.array(np.ones(1, np.complex64)))  # n = 2 * (1 - 1)


def test_plans_are_reused_and_allocations_do_not_grow(gpu_ng):
    ng = gpu_ng
    t = ng.array(normal_array(np.complex64, (64, 256)))
    out = ng.empty((64, 256), np.complex64)
    ng.fft.fft(t, out=out)
    plans = len(ng._fft_plans.plans)
    before = ng.stats()
    for _ in range(3):
        ng.fft.fft(t, out=out)
    assert_no_new_allocations(ng, before)
    assert len(ng._fft_plans.plans) == plans

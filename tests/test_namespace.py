"""``gpuarray.numpy`` (the default factory as a module), ``get_array_module`` and
``__array_namespace__``."""
import numpy as np
import pytest

import gpuarray
import gpuarray.numpy as gnp
from conftest import get_factory, gpu_skip_reason


@pytest.fixture
def fresh_default(monkeypatch):
    """The module's default factory made again under the test's environment."""
    monkeypatch.setattr(gnp, "_DEFAULT", [])
    return monkeypatch


def test_tensor_names_its_factory_as_namespace(ng):
    x = ng.zeros((2, 3))
    assert x.__array_namespace__() is ng
    assert x.__array_namespace__(api_version="2024.12") is ng
    with pytest.raises(ValueError, match="unsupported array API version '2021.01'"):
        x.__array_namespace__(api_version="2021.01")


def test_get_array_module(ng):
    x = ng.ones(3)
    assert gpuarray.get_array_module(x) is ng
    assert gpuarray.get_array_module(np.ones(3), x, 2.0) is ng
    assert gpuarray.get_array_module(np.ones(3)) is np
    assert gpuarray.get_array_module() is np
    other = get_factory("cpu", seed=5)
    with pytest.raises(ValueError, match="different factories"):
        gpuarray.get_array_module(x, other.ones(3))


def test_module_forwards_to_the_default_factory(fresh_default):
    fresh_default.setenv("GPUARRAY_DEVICE", "cpu")
    x = gnp.arange(4, dtype=gnp.float32)
    assert isinstance(gnp.default_factory(), gpuarray.CPU)
    assert x.__array_namespace__() is gnp.default_factory()
    assert float(gnp.evaluate(gnp.sum(x * 2)).get().item()) == 12.0
    assert (gnp.float32, gnp.bfloat16, gnp.pi, gnp.newaxis) == (
        np.dtype(np.float32), gpuarray.bfloat16, np.pi, None)
    assert "zeros" in dir(gnp)
    with pytest.raises(AttributeError, match="module 'gpuarray.numpy' has no attribute 'nope'"):
        gnp.nope  # noqa: B018


def test_default_factory_choice(fresh_default):
    fresh_default.setenv("GPUARRAY_DEVICE", "tpu")
    with pytest.raises(ValueError, match="GPUARRAY_DEVICE must be 'cpu' or 'gpu', not 'tpu'"):
        gnp.default_factory()
    fresh_default.setenv("GPUARRAY_DEVICE", "gpu")
    if gpu_skip_reason() is None:
        assert isinstance(gnp.default_factory(), gpuarray.GPU)
    else:
        with pytest.raises(RuntimeError, match="GPUARRAY_DEVICE=gpu, but no GPU can be used"):
            gnp.default_factory()
    fresh_default.delenv("GPUARRAY_DEVICE")
    fresh_default.setattr(gnp, "_DEFAULT", [])
    expected = gpuarray.GPU if gpu_skip_reason() is None else gpuarray.CPU
    assert isinstance(gnp.default_factory(), expected)


def test_module_forwards_the_array_api_dunders(fresh_default):
    fresh_default.setenv("GPUARRAY_DEVICE", "cpu")
    assert gnp.__array_api_version__ == "2024.12"
    assert gnp.__array_namespace_info__().devices() == ["cpu"]
    with pytest.raises(AttributeError):
        gnp.__not_a_name__

"""gpuarray.datasets: MNIST from IDX files and the dlsys pickle, and the digits fallback.

The tests write tiny MNIST-shaped files in a temporary folder -- IDX plain
and gzipped, and mnist.pkl.gz -- and read them back; malformed files and
missing ones must raise naming the file.
"""
import gzip
import pickle
import struct

import numpy as np
import pytest

from gpuarray import datasets
from gpuarray.datasets import mnist


def _idx(path, array, code=0x08, compress=False):
    header = struct.pack(">BBBB", 0, 0, code, array.ndim)
    header += struct.pack(f">{array.ndim}I", *array.shape)
    body = array.astype(mnist._IDX_TYPES[code]).tobytes()
    # Closed explicitly: a GzipFile left to the garbage collector loses its
    # buffered data and trailer (Python 3.12 buffers writes).
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(header + body)


def _mnist_folder(folder, rng, n_train=20, n_test=6, compress=False):
    images = {k: rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
              for k, n in (("train", n_train), ("test", n_test))}
    labels = {k: rng.integers(0, 10, n, dtype=np.uint8)
              for k, n in (("train", n_train), ("test", n_test))}
    suffix = ".gz" if compress else ""
    for part in ("train", "test"):
        for kind, arrays in (("images", images), ("labels", labels)):
            name = mnist.MNIST_FILES[f"{part}_{kind}"] + suffix
            _idx(folder / name, arrays[part], compress=compress)
    return images, labels


@pytest.mark.parametrize("compress", [False, True])
def test_idx_folder(tmp_path, compress):
    images, labels = _mnist_folder(tmp_path, np.random.default_rng(0), compress=compress)
    data = datasets.load_mnist(tmp_path)
    (xt, yt), (xv, yv), (xs, ys) = data.train, data.valid, data.test
    assert xt.dtype == np.float32 and yt.dtype == np.int64 and data.features == 784
    assert len(xt) == len(xv) == 10 and len(xs) == 6  # small files: half validates
    np.testing.assert_allclose(xt[3], images["train"][3].reshape(-1) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(np.concatenate([yt, yv]), labels["train"])
    np.testing.assert_array_equal(ys, labels["test"])
    assert str(tmp_path) in data.source


@pytest.mark.parametrize("code", sorted(mnist._IDX_TYPES))
def test_read_idx_types(tmp_path, code):
    values = np.arange(-3, 9).reshape(3, 4) if code not in (0x08,) else np.arange(12).reshape(3, 4)
    _idx(tmp_path / "x.idx", values, code)
    got = datasets.read_idx(tmp_path / "x.idx")
    assert got.shape == (3, 4) and got.dtype.isnative
    np.testing.assert_array_equal(got, values)


def test_dlsys_pickle(tmp_path):
    rng = np.random.default_rng(1)
    parts = tuple((rng.random((n, 784)).astype(np.float32), rng.integers(0, 10, n))
                  for n in (8, 4, 4))
    with gzip.open(tmp_path / "mnist.pkl.gz", "wb") as f:
        pickle.dump(parts, f)
    for where in (tmp_path, tmp_path / "mnist.pkl.gz"):
        data = datasets.load_mnist(where)
        np.testing.assert_array_equal(data.valid[0], parts[1][0])
        np.testing.assert_array_equal(data.test[1], parts[2][1])


def test_environment_variable(tmp_path, monkeypatch):
    _mnist_folder(tmp_path, np.random.default_rng(2))
    monkeypatch.setenv(mnist.ENV, str(tmp_path))
    assert datasets.load().features == 784


@pytest.mark.parametrize("damage, match", [
    (lambda b: b"\x01" + b[1:], "not an IDX file"),
    (lambda b: b[:2] + b"\x07" + b[3:], "unknown IDX type code"),
    (lambda b: b[:-5], "bytes, but its header"),
    (lambda b: b[:6], "truncated IDX header"),
])
def test_malformed_idx_names_the_file(tmp_path, damage, match):
    _idx(tmp_path / "bad", np.zeros((2, 3, 3), np.uint8))
    (tmp_path / "bad").write_bytes(damage((tmp_path / "bad").read_bytes()))
    with pytest.raises(ValueError, match=match) as info:
        datasets.read_idx(tmp_path / "bad")
    assert "bad" in str(info.value)


def test_missing_files(tmp_path, monkeypatch):
    monkeypatch.delenv(mnist.ENV, raising=False)
    with pytest.raises(FileNotFoundError, match="GPUARRAY_MNIST"):
        datasets.load_mnist()
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        datasets.load_mnist(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such file"):
        datasets.load_mnist(tmp_path / "mnist.pkl.gz")
    with pytest.raises(FileNotFoundError):
        datasets.load(tmp_path)  # an explicit path never falls back


def test_mismatched_counts(tmp_path):
    _mnist_folder(tmp_path, np.random.default_rng(3))
    _idx(tmp_path / mnist.MNIST_FILES["test_labels"], np.zeros(5, np.uint8))
    with pytest.raises(ValueError, match="do not match"):
        datasets.load_mnist(tmp_path)


def test_digits_fallback(monkeypatch):
    pytest.importorskip("sklearn", reason="scikit-learn is not installed")
    monkeypatch.delenv(mnist.ENV, raising=False)
    data = datasets.load()
    assert "digits" in data.source and data.features == 64
    assert [len(p[0]) for p in (data.train, data.valid, data.test)] == [1077, 360, 360]
    assert 0 <= data.train[0].min() and data.train[0].max() <= 1
    again = datasets.load_digits()
    np.testing.assert_array_equal(again.test[1], data.test[1])  # seeded

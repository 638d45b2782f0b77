"""MNIST from local files, and scikit-learn's digits when there are none.

In: a path -- a folder holding the four IDX files (``train-images-idx3-ubyte``
and so on, each optionally ``.gz``) or the ``mnist.pkl.gz`` pickle the dlsys
scripts read -- or the ``GPUARRAY_MNIST`` environment variable.  Out: a
:class:`Dataset` of float32 images in [0, 1] flattened to rows and int64
labels, split into train, validation and test as the pickle splits them (the IDX
training set's last 10 000 images validate; half of it, for files of
fewer than 20 000).  Nothing is
downloaded: machines without network (the GPU machine) use the digits.
"""
import gzip
import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: IDX file names; each may also be gzipped (``.gz``)
MNIST_FILES = {"train_images": "train-images-idx3-ubyte",
               "train_labels": "train-labels-idx1-ubyte",
               "test_images": "t10k-images-idx3-ubyte",
               "test_labels": "t10k-labels-idx1-ubyte"}
PICKLE = "mnist.pkl.gz"
ENV = "GPUARRAY_MNIST"
#: training images the IDX split keeps for validation (as mnist.pkl.gz does)
VALIDATION = 10_000
#: IDX type codes: numpy dtypes, big-endian as the format stores them
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


@dataclass
class Dataset:
    """Images as float32 rows in [0, 1] and int64 labels, split three ways.

    Attributes
    ----------
    train, valid, test : tuple of (numpy.ndarray, numpy.ndarray)
        ``(x, y)``: x of shape (n, pixels), y of shape (n,).
    source : str
        Where the data came from (a path, or the scikit-learn digits).
    """

    train: tuple
    valid: tuple
    test: tuple
    source: str

    @property
    def features(self):
        """Pixels per image (784 for MNIST, 64 for the digits)."""
        return self.train[0].shape[1]


def read_idx(path):
    """An IDX file (gzipped when its name ends in ``.gz``) as a numpy array.

    Raises
    ------
    ValueError
        A bad magic number, an unknown type code, or a size that does not
        match the header, naming the file.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (its magic number must start with two "
                         "zero bytes)")
    code, ndim = data[2], data[3]
    if code not in _IDX_TYPES:
        raise ValueError(f"{path}: unknown IDX type code {code:#04x}")
    if len(data) < 4 + 4 * ndim:
        raise ValueError(f"{path}: truncated IDX header")
    shape = tuple(int(d) for d in np.frombuffer(data, ">u4", ndim, 4))
    dtype = np.dtype(_IDX_TYPES[code])
    expected = 4 + 4 * ndim + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(f"{path}: {len(data)} bytes, but its header {shape} of "
                         f"{dtype.name} needs {expected}")
    values = np.frombuffer(data, dtype, offset=4 + 4 * ndim).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


def load_mnist(path=None):
    """MNIST from ``path`` (a folder of IDX files or ``mnist.pkl.gz``), or ``$GPUARRAY_MNIST``.

    Raises
    ------
    FileNotFoundError
        No path given and the variable unset, or the files are not there
        (the message lists the names looked for).
    """
    path = path if path is not None else os.environ.get(ENV)
    if path is None:
        raise FileNotFoundError(f"no MNIST path: pass one or set ${ENV} (a folder with "
                                f"{', '.join(MNIST_FILES.values())} or {PICKLE})")
    path = Path(path)
    if path.is_file() or path.name.endswith(".pkl.gz"):
        return _from_pickle(path)
    if (path / PICKLE).is_file() and not _idx_path(path, "train_images"):
        return _from_pickle(path / PICKLE)
    return _from_idx(path)


def _idx_path(folder, key):
    for name in (MNIST_FILES[key], MNIST_FILES[key] + ".gz"):
        if (folder / name).is_file():
            return folder / name
    return None


def _from_idx(folder):
    arrays = {}
    for key, name in MNIST_FILES.items():
        found = _idx_path(folder, key)
        if found is None:
            raise FileNotFoundError(f"{folder}: no {name} (or {name}.gz); MNIST needs "
                                    f"{', '.join(MNIST_FILES.values())}, or {PICKLE}")
        arrays[key] = read_idx(found)
    for part in ("train", "test"):
        images, labels = arrays[f"{part}_images"], arrays[f"{part}_labels"]
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise ValueError(f"{folder}: {part} images {images.shape} and labels "
                             f"{labels.shape} do not match")
    x, y = _rows(arrays["train_images"]), arrays["train_labels"].astype(np.int64)
    cut = len(x) - VALIDATION if len(x) > 2 * VALIDATION else len(x) // 2
    test = (_rows(arrays["test_images"]), arrays["test_labels"].astype(np.int64))
    return Dataset((x[:cut], y[:cut]), (x[cut:], y[cut:]), test, str(folder))


def _rows(images):
    """uint8 images -> float32 rows in [0, 1]."""
    scale = 255.0 if images.dtype == np.uint8 else 1.0
    return (images.reshape(len(images), -1) / scale).astype(np.float32)


def _from_pickle(path):
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (MNIST as the dlsys {PICKLE})")
    with gzip.open(path, "rb") as f:
        parts = pickle.load(f, encoding="latin1")
    if len(parts) != 3 or any(len(p) != 2 for p in parts):
        raise ValueError(f"{path}: expected ((train_x, train_y), (valid_x, valid_y), "
                         f"(test_x, test_y))")
    train, valid, test = ((np.asarray(x, np.float32).reshape(len(x), -1),
                           np.asarray(y).astype(np.int64)) for x, y in parts)
    return Dataset(train, valid, test, str(path))


def load_digits(seed=0):
    """scikit-learn's bundled 8x8 digits (1797 images) as a :class:`Dataset`.

    A seeded split: 1077 train, 360 validation, 360 test images; pixels
    scaled from 0..16 to [0, 1].  Needs scikit-learn (ImportError otherwise).
    """
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    x = (digits.data / 16).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cuts = (1077, 1437)
    parts = np.split(order, cuts)
    return Dataset(*((x[p], y[p]) for p in parts), "scikit-learn digits (8x8)")


def load(path=None, seed=0):
    """MNIST when ``path`` or ``$GPUARRAY_MNIST`` names its files, else the digits.

    The returned :class:`Dataset` says in ``source`` which it is.  A path
    given explicitly must hold MNIST (FileNotFoundError otherwise); only an
    absent path falls back.
    """
    if path is not None or os.environ.get(ENV):
        return load_mnist(path)
    return load_digits(seed)

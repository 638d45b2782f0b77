"""Datasets for the examples and benchmarks, read from local files only.

:func:`load_mnist` reads MNIST from the standard IDX files (gzipped or not)
or from the ``mnist.pkl.gz`` pickle; :func:`load_digits` splits
scikit-learn's bundled 8x8 digits; :func:`load` takes MNIST when its files
are there and the digits otherwise, saying which.  Pure host code: numpy
arrays out, for either factory.  Imports nothing else of the package.
"""
from .mnist import Dataset, MNIST_FILES, load, load_digits, load_mnist, read_idx

__all__ = ["Dataset", "MNIST_FILES", "load", "load_digits", "load_mnist", "read_idx"]

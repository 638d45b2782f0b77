"""What tensors and lazy op-trees share as numpy arrays: sizes, iteration,
and conversions to Python and numpy values.

In: an object with ``backend``, ``shape`` and ``dtype``, ``get()`` (its
values as a numpy array), ``self[key]`` and ``transpose()`` -- a
:class:`~gpuarray.core.array.Tensor` or an evaluated-on-demand
:class:`~gpuarray.core.optree.OpTreeNode`.  Out: numpy's attributes
(``ndim``, ``size``, ``itemsize``, ``nbytes``, ``T``, ``real``, ``imag``,
``conj``), ``len``, iteration,
``item``, ``tolist``, ``bool``/``float``/``int``/``complex``/``operator.index``,
``numpy.asarray`` and ``__array_namespace__``, each with numpy's errors.
"""
import operator

import numpy as np

from . import shapes
from .operand import Operand

#: array API standard versions ``__array_namespace__`` accepts (conformance: docs/usage.rst)
API_VERSIONS = ("2023.12", "2024.12")


class ArrayLike(Operand):
    """Mixin base: numpy's array attributes and conversions, on ``get()`` and indexing."""

    @property
    def ndim(self):
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self):
        """Number of elements."""
        return shapes.size_of(self.shape)

    @property
    def itemsize(self):
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self):
        """Bytes the elements occupy."""
        return self.size * self.itemsize

    @property
    def T(self):
        """The axes reversed (a view)."""
        return self.transpose()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def item(self, *args):
        """The element at ``args`` (none: the only one) as a Python scalar, as numpy's.

        Raises
        ------
        ValueError
            No index given and the size is not 1.
        IndexError
            An index out of range.
        """
        # numpy checks the arguments on a stand-in of this shape, so its
        # messages come out unchanged and nothing is copied first
        np.broadcast_to(np.zeros((), np.bool_), self.shape).item(*args)
        if len(args) == 1 and not isinstance(args[0], tuple):
            index = np.unravel_index(operator.index(args[0]) % max(self.size, 1), self.shape)
        else:
            index = args[0] if len(args) == 1 else args
        return self[tuple(index)].get().item()

    def tolist(self):
        """The values as nested Python lists of Python scalars, as numpy's."""
        return self.get().tolist()

    @property
    def device(self):
        """The device the array lives on (``"cpu"`` or ``"cuda:N"``), as the array API names it."""
        return self.backend.array_api_device

    def to_device(self, device, /, *, stream=None):
        """The array on ``device``: itself, its only device.

        Raises
        ------
        ValueError
            Another device (moving between factories goes through DLPack).
        """
        if device != self.device:
            raise ValueError(f"an array on {self.device} cannot move to {device!r}; "
                             "use the other factory's from_dlpack or asarray")
        return self

    @property
    def real(self):
        """The real part: a view of a complex tensor, as numpy's."""
        return self.backend.real(self)

    @property
    def imag(self):
        """The imaginary part: a view of a complex tensor, as numpy's."""
        return self.backend.imag(self)

    def conj(self):
        """The complex conjugate, lazy (``numpy.conj``)."""
        return self.backend.conjugate(self)

    conjugate = conj

    @property
    def mT(self):  # noqa: N802 - the standard's name
        """The last two axes swapped (a view)."""
        return self.backend.matrix_transpose(self)

    def __array_namespace__(self, api_version=None):
        """The factory that made this array: its functions are the array namespace.

        Raises
        ------
        ValueError
            An ``api_version`` other than None or one of ``API_VERSIONS``.
        """
        if api_version is not None and api_version not in API_VERSIONS:
            raise ValueError(f"unsupported array API version {api_version!r}; "
                             f"gpuarray knows {', '.join(API_VERSIONS)}")
        return self.backend

    def __array__(self, dtype=None, copy=None):
        host = self.get()
        return host if dtype is None else host.astype(dtype)

    def __bool__(self):
        if self.size == 0:
            raise ValueError("The truth value of an empty array is ambiguous. Use "
                             "`array.size > 0` to check that an array is not empty.")
        if self.size != 1:
            raise ValueError("The truth value of an array with more than one element "
                             "is ambiguous. Use a.any() or a.all()")
        return bool(self.get().reshape(()))

    def __float__(self):
        return float(self._only_value())

    def __int__(self):
        return int(self._only_value())

    def __complex__(self):
        return complex(self._only_value())

    def __index__(self):
        if self.ndim or self.dtype.kind not in "iu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._only_value())

    def _only_value(self):
        # numpy 2.4 ended the deprecated conversion of size-1 arrays of any ndim
        if self.ndim:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        return self.get()[()]

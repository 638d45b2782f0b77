"""numpy's creation and joining functions every factory offers.

In: numpy's arguments of ``arange``, ``linspace``, ``eye``, ``identity``,
``asarray``, ``concatenate``, ``stack``, ``hstack`` and ``vstack``.  Out:
new tensors of the factory (``asarray`` may return its argument).

``arange`` and ``linspace`` are computed by numpy on the host and uploaded
(one copy of the result, no kernel): numpy's own code then gives numpy's
values, dtypes and errors bit for bit.  ``eye`` runs on the device (a fill,
then a fill of the diagonal view).  The joining functions allocate the
result and assign each input to its slice, so each input is one fused copy
kernel, and an op-tree input is evaluated straight into its slice.
"""
import operator

import numpy as np

from . import dtypes, ops, shapes
from .array import Tensor
from .optree import Expression


class CreationFunctions:
    """Mixin of :class:`gpuarray.core.backend.Backend`: creation and joining."""

    # -- creation -------------------------------------------------------
    def arange(self, start, stop=None, step=None, dtype=None, *, device=None):
        """Evenly spaced values in ``[start, stop)``, as ``numpy.arange``.

        Parameters
        ----------
        start, stop, step : numbers
            As numpy's; ``arange(n)`` counts from 0.
        dtype : dtype-like, optional
            Default: int64 for integer arguments, float64 otherwise.
        """
        self._check_device(device)
        return self.array(np.arange(start, stop, step, dtype=_dtype_or_none(dtype)))

    def linspace(self, start, stop, num=50, endpoint=True, dtype=None, *, device=None):
        """``num`` evenly spaced values from ``start`` to ``stop``, as ``numpy.linspace``.

        Parameters
        ----------
        start, stop : numbers
            The end points (``stop`` left out when ``endpoint`` is False).
        num : int
            Number of values (non-negative).
        dtype : dtype-like, optional
            Default float64.
        """
        self._check_device(device)
        return self.array(np.linspace(start, stop, num, endpoint, dtype=_dtype_or_none(dtype)))

    def eye(self, N, M=None, k=0, dtype=np.float64, *, device=None):
        """2-D tensor with ones on diagonal ``k`` and zeros elsewhere, as ``numpy.eye``.

        Parameters
        ----------
        N, M : int
            Rows and columns (``M`` defaults to ``N``).
        k : int
            Diagonal: 0 the main one, positive above, negative below.
        dtype : dtype-like
            Element type (default float64).
        """
        rows = operator.index(N)
        cols = rows if M is None else operator.index(M)
        k = operator.index(k)
        out = self.zeros((rows, cols), dtype, device=device)
        first_row, first_col = max(-k, 0), max(k, 0)
        length = min(rows - first_row, cols - first_col)
        if length > 0:
            # the diagonal is a strided view: one step is a row and a column
            offset = out.offset + (first_row * cols + first_col) * out.itemsize
            out._view((length,), ((cols + 1) * out.itemsize,), offset).fill(1)
        return out

    def identity(self, n, dtype=None):
        """Square identity matrix of size ``n`` (float64 unless ``dtype`` is given)."""
        return self.eye(n, dtype=np.float64 if dtype is None else dtype)

    def asarray(self, obj, dtype=None, *, device=None, copy=None):
        """``obj`` as a tensor of this factory, copying only when needed.

        A tensor of this factory with the requested dtype (or none asked)
        is returned as is; an op-tree is evaluated; anything else
        (host arrays, lists, scalars, another factory's tensors) is copied
        in, as :meth:`array` does.

        Parameters
        ----------
        device : optional
            The array API's: only the factory's own device.
        copy : bool, optional
            True: always a new tensor; False: never (ValueError where one
            is needed); None: only when needed.
        """
        self._check_device(device)
        if isinstance(obj, Tensor) and obj.backend is self:
            if dtype is None or dtypes.as_dtype(dtype) == obj.dtype:
                return obj.copy() if copy else obj
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        return self.array(obj, dtype)

    # -- joining --------------------------------------------------------
    def concatenate(self, arrays, axis=0, dtype=None):
        """Join tensors along an existing axis, as ``numpy.concatenate``.

        Parameters
        ----------
        arrays : sequence of array_like
            Tensors, op-trees or host data of the same shape but along ``axis``.
        axis : int or None
            The axis to join along; None joins the flattened inputs.
        dtype : dtype-like, optional
            Result dtype (default: numpy's promotion of the inputs); the
            inputs must cast to it under 'same_kind'.

        Raises
        ------
        ValueError
            No inputs, 0-d inputs, or shapes that differ off ``axis``.
        numpy.exceptions.AxisError
            ``axis`` out of range.
        """
        items = self._joinable(arrays, "concatenate")
        if axis is None:
            items = [self.asarray(_value(x)).ravel() for x in items]
            axis = 0
        if items[0].ndim == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
        axis = shapes.normalize_axis(axis, items[0].ndim)
        _check_concatenable(items, axis)
        shape = list(items[0].shape)
        shape[axis] = sum(x.shape[axis] for x in items)
        out = self.empty(tuple(shape), _joined_dtype(items, dtype))
        start, lead = 0, (slice(None),) * axis
        for x in items:
            out[lead + (slice(start, start + x.shape[axis]),)] = _value(x)
            start += x.shape[axis]
        return out

    def stack(self, arrays, axis=0, dtype=None):
        """Join same-shape tensors along a new axis, as ``numpy.stack``.

        Parameters
        ----------
        arrays : sequence of array_like
            Inputs of one shape.
        axis : int
            Position of the new axis in the result.
        dtype : dtype-like, optional
            As :meth:`concatenate`'s.
        """
        items = self._joinable(arrays, "stack")
        if any(x.shape != items[0].shape for x in items):
            raise ValueError("all input arrays must have the same shape")
        axis = shapes.normalize_axis(axis, items[0].ndim + 1)
        shape = items[0].shape[:axis] + (len(items),) + items[0].shape[axis:]
        out = self.empty(shape, _joined_dtype(items, dtype))
        lead = (slice(None),) * axis
        for i, x in enumerate(items):
            out[lead + (i,)] = x
        return out

    def hstack(self, arrays, dtype=None):
        """Join along the second axis (the first for 1-D inputs), as ``numpy.hstack``."""
        items = [x if x.ndim else _at_least(x, 1) for x in self._joinable(arrays, "concatenate")]
        return self.concatenate(items, axis=0 if items[0].ndim == 1 else 1, dtype=dtype)

    def vstack(self, arrays, dtype=None):
        """Join along the first axis, 0-d and 1-D inputs as rows, as ``numpy.vstack``."""
        items = [_at_least(x, 2) for x in self._joinable(arrays, "concatenate")]
        return self.concatenate(items, axis=0, dtype=dtype)

    def _joinable(self, arrays, verb):
        """The inputs as tensors or trees of this factory (host data copied in)."""
        if isinstance(arrays, (Expression, np.ndarray)):
            arrays = list(arrays)  # numpy iterates an array argument over its first axis
        items = [x if isinstance(x, (Expression, _Raised)) and x.backend is self else self.asarray(x)
                 for x in arrays]
        if not items:
            raise ValueError(f"need at least one array to {verb}")
        return items


class _Raised:
    """An input seen with more leading axes of size 1 (``atleast_2d`` without
    a reshape): assignment broadcasts it into its slice of the result."""

    def __init__(self, value, shape):
        self.value, self.shape, self.dtype = value, shape, value.dtype
        self.backend = value.backend

    @property
    def ndim(self):
        return len(self.shape)


def _at_least(x, ndim):
    """``x`` seen with ``ndim`` dimensions, numpy's ``atleast_1d``/``atleast_2d``
    (a 1-D ``(n,)`` becomes a row ``(1, n)``)."""
    if x.ndim >= ndim:
        return x
    return _Raised(x, (1,) * (ndim - x.ndim) + tuple(x.shape))


def _value(x):
    """The tensor or tree behind a join input."""
    return x.value if isinstance(x, _Raised) else x


def _check_concatenable(items, axis):
    """numpy's ValueErrors for inputs whose dimensions differ off ``axis``."""
    first = items[0]
    for i, x in enumerate(items[1:], 1):
        if x.ndim != first.ndim:
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {first.ndim} dimension(s) and the array at index {i} has "
                f"{x.ndim} dimension(s)")
        for d, (a, b) in enumerate(zip(first.shape, x.shape)):
            if d != axis and a != b:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {d}, the array at index 0 has size "
                    f"{a} and the array at index {i} has size {b}")


def _joined_dtype(items, dtype):
    """Result dtype of a join: numpy's promotion, or ``dtype`` checked 'same_kind'."""
    if dtype is None:
        return ops.result_type(*[x.dtype for x in items])
    dtype = dtypes.as_dtype(dtype)
    for x in items:
        if not dtypes.can_cast_same_kind(x.dtype, dtype):
            raise TypeError(f"Cannot cast array data from {x.dtype!r} to {dtype!r} "
                            "according to the rule 'same_kind'")
    return dtype


def _dtype_or_none(dtype):
    return None if dtype is None else dtypes.as_dtype(dtype)

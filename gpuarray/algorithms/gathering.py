"""Gathers: ``take``, ``take_along_axis`` and indexing with one integer or boolean array.

In: a tensor, op-tree or array_like of one factory and indices -- host
data, or int tensors on the device -- or an indexing key holding one
integer or boolean array among basic entries.  Out: a new contiguous
tensor.

How: one gather kernel, ``out[o, j, i] = src[o, index(o, j, i), i]``, over
the source as (outer, axis, inner).  Indices from the host are checked on
the host; indices on the device are checked by the kernel, which records
the first bad output position (its value is read back, so the call waits
for the device).  Either way a bad index raises numpy's IndexError before
the result is returned.  A boolean mask becomes the flat positions of its
true elements (:mod:`.searching`), gathered from its axes merged into one.
Keys with several arrays go to :mod:`.multi_index`.  A boolean scalar
entry (``True``, ``np.False_``, a 0-d boolean array) adds an axis of
length one or zero, as numpy's: it becomes the index array ``[0]`` or
``[]`` on a new axis of length one (:func:`expand_boolean_scalars`).
"""
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core import dtypes
from ..core.array import Tensor
from ..core.index_tricks import check_clip_mode
from ..core.optree import Expression

I64 = np.dtype(np.int64)


class GatherFunctions:
    """Mixin: ``take``, ``take_along_axis``, and array keys of ``t[key]``."""

    def take(self, a, indices, axis=None, out=None, mode="raise"):
        """Elements of ``a`` at ``indices`` along ``axis``, as ``numpy.take``.

        Parameters
        ----------
        a : array_like
        indices : array_like of int, or an int tensor
            Negative ones count from the end of the axis.
        axis : int, optional
            None takes from the flattened ``a``.
        out : Tensor, optional
            Receives the result.
        mode : {"raise", "wrap", "clip"}
            What an index outside the axis does: raise IndexError, wrap
            around, or clip to the ends.

        Returns
        -------
        Tensor
            Of shape ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``.

        Raises
        ------
        IndexError
            An index out of range (mode "raise"), or a non-empty take from an empty axis.
        """
        check_clip_mode(mode)
        x = self._as_tensor(a)
        if axis is None:
            x, axis = self._contiguous(x).reshape(-1), 0
        axis = normalize_axis_index(operator.index(axis), x.ndim)
        index, checked = self._index_operand(indices, x.shape[axis], mode, axis)
        result = self._take(x, index, axis, mode, axis, checked)
        return result if out is None else self._finish(result, out)

    def take_along_axis(self, arr, indices, axis=-1):
        """Elements of ``arr`` at ``indices`` along ``axis``, as ``numpy.take_along_axis``.

        ``indices`` has ``arr``'s number of dimensions; the other axes
        broadcast.  None takes from the flattened ``arr`` with 1-D ``indices``.

        Raises
        ------
        IndexError
            Non-integer indices, or one out of range.
        ValueError
            ``indices`` and ``arr`` of different numbers of dimensions.
        """
        x = self._as_tensor(arr)
        index = self._as_tensor(indices)
        if dtypes.kind(index.dtype) not in "iu":
            raise IndexError("`indices` must be an integer array")
        if axis is None:
            x, axis = self._contiguous(x).reshape(-1), 0
        if index.ndim != x.ndim:
            raise ValueError("`indices` and `arr` must have the same number of dimensions")
        axis = normalize_axis_index(operator.index(axis), x.ndim)
        shape = _along_shape(x.shape, index.shape, axis)
        source = self._contiguous(self.broadcast_to(x, shape[:axis] + (x.shape[axis],)
                                                    + shape[axis + 1:]))
        index = self._contiguous(self._as_index(self.broadcast_to(index, shape)))
        checked = not isinstance(indices, (Tensor, Expression))
        if checked:
            check_host(np.asarray(indices), x.shape[axis], axis)
        result = self.empty(shape, x.dtype)
        if result.size:
            count, inner = shape[axis], _prod(shape[axis + 1:])
            sizes = (_prod(shape[:axis]), count, x.shape[axis], inner)
            self._gather(source, index, result, sizes, (count * inner, inner, 1), axis,
                         lambda p: p, not checked)
        return result

    def _take(self, x, index, axis, mode, label, checked):
        """``take`` of the int64 tensor ``index`` along ``axis`` (an error names axis
        ``label``; ``checked``: the indices are known to be in range)."""
        size = x.shape[axis]
        shape = x.shape[:axis] + index.shape + x.shape[axis + 1:]
        result = self.empty(shape, x.dtype)
        if not result.size:
            return result
        if size == 0:
            raise IndexError("cannot do a non-empty take from an empty axes.")
        if mode == "wrap":
            index = self.evaluate(self.mod(index, size))
        elif mode == "clip":
            index = self.evaluate(self.clip(index, 0, size - 1))
        inner = _prod(x.shape[axis + 1:])
        sizes = (_prod(x.shape[:axis]), index.size, size, inner)
        self._gather(self._contiguous(x), index, result, sizes, (0, 1, 0), label,
                     lambda p: p // inner % index.size, not checked and mode == "raise")
        return result

    def _gather(self, source, index, result, sizes, strides, label, index_at, check):
        """Run the gather; on a bad index raise numpy's IndexError naming it
        (``index_at`` maps the output position to the index's)."""
        bad = self._algorithm("gather", source, index, result, sizes, strides, check)
        if bad is not None:
            value = int(index.reshape(-1)[index_at(bad)].get())
            raise IndexError(f"index {value} is out of bounds for axis {label} with size "
                             f"{sizes[2]}")

    def _index_with_array(self, x, key):
        """``x[key]`` for a key holding one integer or boolean array among basic
        entries (numpy's advanced indexing with a single array)."""
        x, key = expand_boolean_scalars(x, key)
        if array_count(key) > 1:
            return self._index_with_arrays(x, key)
        items, at, index = _array_entry(key)
        view, axis, label, covered = self._indexed_axes(x, items, at, index)
        if dtypes.kind(index.dtype) == "b":
            mask = self._as_tensor(index)
            _check_mask(mask.shape, view.shape[axis:axis + covered], label)
            merged = self._contiguous(view).reshape(_merged(view.shape, axis, covered))
            if merged.ndim == 1:
                result, added = self._select(merged, self._mask(mask)), 1
            else:
                flat = self._flat_nonzero(mask)
                result, added = self._take(merged, flat, axis, "raise", label, True), 1
        else:
            index, checked = self._index_operand(index, view.shape[axis], "raise", label)
            result, added = self._take(view, index, axis, "raise", label, checked), index.ndim
        if axis and _split_advanced(items, at):
            # numpy puts the array's axes first when integers stand apart from it
            result = self._contiguous(self.moveaxis(result, list(range(axis, axis + added)),
                                                    list(range(added))))
        return result

    def _select(self, values, mask):
        """The elements of the 1-D contiguous ``values`` where ``mask`` is true."""
        result = self.empty((self._count_true(mask),), values.dtype)
        if result.size:
            self._algorithm("select", values, mask, result)
        return result

    def _indexed_axes(self, x, items, at, index):
        """The basic view of ``x`` with the array entry at ``at`` made full slices,
        the position of its first axis there and in ``x``, and how many it covers."""
        covered = index.ndim if dtypes.kind(index.dtype) == "b" else 1
        basic = items[:at] + [slice(None)] * covered + items[at + 1:]
        view = x[tuple(basic)]
        used = sum(1 for item in basic if item is not None and item is not Ellipsis)
        fill = x.ndim - used if any(item is Ellipsis for item in items[:at]) else 0
        before = items[:at]
        axis = fill + sum(1 for item in before if item is None or isinstance(item, slice))
        label = fill + sum(1 for item in before if item is not None and item is not Ellipsis)
        return view, axis, label, covered

    def _index_operand(self, indices, size, mode, label):
        """Indices as a contiguous int64 tensor, and whether they were checked
        here (host indices are, in mode "raise")."""
        if isinstance(indices, (Tensor, Expression)):
            return self._contiguous(self._as_index(self._as_tensor(indices))), False
        host = np.asarray(indices)
        if host.dtype.kind not in "iubf" and host.size:
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        host = host.astype(np.int64)
        if mode == "raise" and size:
            check_host(host, size, label)
        return self.array(host), True

    def _as_index(self, index):
        return index if index.dtype == I64 else self.evaluate(self.astype(index, I64))


def is_boolean_scalar(item):
    """Whether an index entry is a boolean scalar: Python's or numpy's bool, or
    a 0-d boolean array (numpy reads each as a 0-d boolean mask)."""
    if type(item) is bool or isinstance(item, np.bool_):
        return True
    return getattr(item, "ndim", None) == 0 and getattr(item, "dtype", None) == np.bool_


def expand_boolean_scalars(x, key):
    """``(view, key)`` with each boolean scalar entry of ``key`` made an index
    array on a new axis of ``x``'s view: ``[0]`` for True, ``[]`` for False.

    numpy reads a boolean scalar as a 0-d mask: it consumes no axis of
    ``x`` and adds one of length 1 or 0, broadcasting with the key's other
    arrays as a 1- or 0-element index (``x[[0, 2], True]`` has shape
    ``(2,) + x.shape[1:]``).  A key without one is returned as it is.
    """
    items = list(key) if type(key) is tuple else [key]
    if not any(is_boolean_scalar(item) for item in items):
        return x, key
    used = sum(_axes_used(item) for item in items if item is not Ellipsis)
    axis, inserted = 0, []
    for item in items:
        if item is Ellipsis:
            axis += max(x.ndim - used, 0)
        elif is_boolean_scalar(item):
            inserted.append(axis)
        else:
            axis += _axes_used(item)
    parts = []
    for d in range(x.ndim + 1):
        parts += [None] * inserted.count(d)
        parts += [slice(None)] if d < x.ndim else []
    view = x[tuple(parts)]
    index = [np.zeros(1 if bool(item) else 0, I64) if is_boolean_scalar(item) else item
             for item in items]
    return view, tuple(index)


def _axes_used(item):
    """How many of the indexed tensor's axes a (non-Ellipsis) key entry consumes."""
    if item is None or is_boolean_scalar(item):
        return 0
    if getattr(item, "dtype", None) is not None and dtypes.kind(item.dtype) == "b":
        return item.ndim
    if isinstance(item, (list, tuple)):
        host = np.asarray(item)
        return host.ndim if host.dtype.kind == "b" else 1
    return 1


def _is_array(item):
    return isinstance(item, (list, tuple)) or getattr(item, "ndim", 0) > 0


def array_count(key):
    """How many integer or boolean arrays (and lists) a key holds."""
    return sum(1 for item in (key if type(key) is tuple else (key,)) if _is_array(item))


def _array_entry(key):
    """The key's entries, the position of its one array entry, and that entry."""
    items = list(key) if type(key) is tuple else [key]
    at = [k for k, item in enumerate(items) if _is_array(item)]
    index = items[at[0]]
    if not isinstance(index, (Tensor, Expression)):
        index = host_index(index)
    return items, at[0], index


def host_index(item):
    """A host index entry as numpy reads it, or numpy's IndexError for one of no
    index type."""
    index = np.asarray(item)
    if index.size == 0 and index.dtype.kind == "f":
        index = index.astype(np.int64)  # numpy reads an empty list as an integer index
    if index.dtype.kind not in "iub":
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                         "(`None`) and integer or boolean arrays are valid indices")
    return index


def _split_advanced(items, at):
    """Whether integer entries and the array entry are apart (a slice, None or
    '...' between them): numpy then broadcasts them as one advanced index whose
    axes come first."""
    def advanced(k):
        item = items[k]
        return k == at or not (item is None or item is Ellipsis or isinstance(item, slice))
    marked = [k for k in range(len(items)) if advanced(k)]
    return any(not advanced(k) for k in range(marked[0], marked[-1] + 1))


def _check_mask(mask_shape, shape, label):
    """numpy's IndexError for a boolean index not shaped as the axes it covers."""
    for d, (m, n) in enumerate(zip(mask_shape, shape)):
        if m != n:
            raise IndexError(f"boolean index did not match indexed array along axis "
                             f"{label + d}; size of axis is {n} but size of corresponding "
                             f"boolean axis is {m}")
    if len(mask_shape) > len(shape):
        raise IndexError(f"too many indices for array: array is {label + len(shape)}-"
                         f"dimensional, but {label + len(mask_shape)} were indexed")


def check_host(host, size, label):
    """numpy's IndexError for the first host index outside ``[-size, size)``."""
    wrong = (host < -size) | (host >= size)
    if wrong.any():
        raise IndexError(f"index {host[wrong].flat[0]} is out of bounds for axis {label} with "
                         f"size {size}")


def _merged(shape, axis, covered):
    """``shape`` with the ``covered`` axes from ``axis`` on merged into one."""
    return shape[:axis] + (_prod(shape[axis:axis + covered]),) + shape[axis + covered:]


def _prod(sizes):
    return int(np.prod(sizes, dtype=np.int64))


def _along_shape(shape, index_shape, axis):
    """take_along_axis's result shape: the index's along ``axis``, else broadcast."""
    result = []
    for d, (n, m) in enumerate(zip(shape, index_shape)):
        if d == axis or n == m or n == 1:
            result.append(m)
        elif m == 1:
            result.append(n)
        else:
            raise IndexError(f"shape mismatch: indices of shape {tuple(index_shape)} do not "
                             f"broadcast against the array's shape {tuple(shape)} off axis {axis}")
    return tuple(result)

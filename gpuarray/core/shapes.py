"""Shape arithmetic shared by every factory: broadcasting, axis arguments,
basic indexing, transposes and reshapes of strided views.

In: shapes (tuples of ints), byte strides and offsets, user index keys and
axis arguments.  Out: new (shape, strides, offset) triples describing views
of the same memory, or numpy-worded exceptions.  Nothing here touches
memory, so the CPU and GPU factories make identical views.
"""
import operator

import numpy as np
from numpy.exceptions import AxisError

#: numpy's largest dimension and byte count (``npy_intp``)
MAX_INTP = 2**63 - 1


def as_shape(shape):
    """Normalise an int or a sequence of ints into a shape tuple."""
    if type(shape) is tuple and _plain_dims(shape):
        return shape  # the common case, a tensor's own shape: nothing to convert
    if isinstance(shape, (bool, np.bool_)):
        raise TypeError(f"expected a sequence of integers or a single integer, got '{shape}'")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError as err:
        raise TypeError(f"expected a sequence of integers for the shape, got {shape!r}") from err
    if any(d < 0 for d in dims):
        raise ValueError("negative dimensions are not allowed")
    return dims


def _plain_dims(shape):
    """True when every dimension is a Python int (not a bool) and not negative."""
    for d in shape:
        if type(d) is not int or d < 0:
            return False
    return True


def nbytes_of(shape, itemsize):
    """Bytes of a C-contiguous array of ``shape``, checked before any allocation.

    Raises numpy's ValueError for a dimension or a byte count above the
    largest signed 64-bit integer (numpy's ``npy_intp``), which no
    allocator could take.
    """
    if any(d > MAX_INTP for d in shape):
        raise ValueError("Maximum allowed dimension exceeded")
    # numpy counts the other dimensions even when one of them is 0
    nbytes = size_of(d for d in shape if d) * itemsize
    if nbytes > MAX_INTP:
        raise ValueError(
            "array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum "
            f"possible size. (shape {shape_str(shape)} of {itemsize}-byte elements: "
            f"{nbytes} bytes)")
    return 0 if 0 in shape else nbytes


def as_shape_allow_unknown(shape):
    """Like :func:`as_shape` but keeps -1 entries (for reshape)."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError as err:
        raise TypeError(f"expected a sequence of integers for the shape, got {shape!r}") from err


def size_of(shape):
    """Number of elements of a shape."""
    n = 1
    for d in shape:
        n *= d
    return n


def contiguous_strides(shape, itemsize):
    """Byte strides of a C-contiguous array."""
    n = len(shape)
    if n == 1:  # the common cases without a list
        return (itemsize,)
    if n == 0:
        return ()
    strides, step = [0] * n, itemsize
    for k in range(n - 1, -1, -1):
        strides[k] = step
        step *= max(shape[k], 1)
    return tuple(strides)


def is_contiguous(shape, strides, itemsize):
    """True when (shape, strides) walks memory in C order with no gaps."""
    expected = itemsize
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def byte_span(shape, strides, itemsize):
    """(lowest, highest + 1) byte offsets from element 0 that a view touches."""
    if 0 in shape:
        return 0, 0
    lo = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides))
    hi = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides)) + itemsize
    return lo, hi


def broadcast_shapes(*shapes):
    """numpy's broadcast of several shapes, with numpy's error message."""
    if len(shapes) == 2 and len(shapes[0]) == len(shapes[1]):
        a, b = shapes
        if all(x == y or x == 1 or y == 1 for x, y in zip(a, b)):
            return tuple(y if x == 1 else x for x, y in zip(a, b))
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(-ndim, 0):
        dims = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(dims) > 1:
            listed = " ".join(shape_str(s) for s in shapes)
            raise ValueError(
                f"operands could not be broadcast together with shapes {listed} ")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcasts_to(value_shape, target_shape):
    """True when ``value_shape`` broadcasts to ``target_shape`` (numpy's rules)."""
    return len(value_shape) <= len(target_shape) and all(
        v in (1, t) for v, t in zip(reversed(value_shape), reversed(target_shape)))


def check_assignable(value_shape, target_shape):
    """Raise numpy's error when a value cannot be broadcast into a target."""
    if not broadcasts_to(value_shape, target_shape):
        raise ValueError(
            f"could not broadcast input array from shape {shape_str(value_shape)} "
            f"into shape {shape_str(target_shape)}")


def broadcast_strides(shape, strides, target):
    """Strides that read (shape, strides) broadcast to ``target`` (0 where repeated)."""
    lead = len(target) - len(shape)
    out = [0] * lead
    for d, s, t in zip(shape, strides, target[lead:]):
        out.append(s if d == t else 0)
    return tuple(out)


def normalize_axis(axis, ndim):
    """Map a possibly negative axis into range, raising numpy's AxisError."""
    if type(axis) is int and -ndim <= axis < ndim:
        return axis % ndim  # the common case: a Python int in range
    if isinstance(axis, (bool, np.bool_)):
        # operator.index takes True as 1; numpy refuses booleans as axes
        raise TypeError("an integer is required")
    try:
        axis = operator.index(axis)
    except TypeError as err:
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer") from err
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim)
    return axis % ndim


def normalize_axes(axis, ndim):
    """Axis argument (None, int or tuple) -> sorted tuple of distinct axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        axes = [normalize_axis(a, ndim) for a in axis]
        if len(set(axes)) != len(axes):
            raise ValueError("duplicate value in 'axis'")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def reduction_axes(axis, ndim):
    """:func:`normalize_axes` for reductions, with numpy's rule for 0-d operands:
    axis 0 or -1 (alone or in a tuple) reduces a 0-d operand over nothing."""
    if type(axis) is int and -ndim <= axis < ndim:
        return (axis % ndim,)
    if ndim == 0 and axis is not None:
        try:
            normalize_axes(axis, 1)
            return ()
        except AxisError:
            pass
    return normalize_axes(axis, ndim)


def transpose(shape, strides, axes):
    """Permute a view's axes; ``axes`` empty or None reverses them."""
    ndim = len(shape)
    if not axes or axes == (None,):
        axes = tuple(reversed(range(ndim)))
    elif len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    if len(axes) != ndim:
        raise ValueError("axes don't match array")
    axes = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(axes)) != ndim:
        raise ValueError("repeated axis in transpose")
    return tuple(shape[a] for a in axes), tuple(strides[a] for a in axes)


def reshape_shape(size, newshape):
    """Resolve a single unknown (negative, as numpy 2.4 takes it) dimension in
    ``newshape`` and check the element count."""
    newshape = list(newshape)
    unknown = [i for i, d in enumerate(newshape) if d < 0]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = size_of(d for d in newshape if d >= 0)
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape_str(newshape)}")
        newshape[unknown[0]] = size // known
    if size_of(newshape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape_str(newshape)}")
    return tuple(newshape)


def shape_str(shape):
    """A shape written as numpy writes it in error messages: ``(5,3)``, ``(4,)``."""
    shape = tuple(shape)
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ",".join(map(str, shape)) + ")"


def reshape_strides(shape, strides, newshape, itemsize):
    """Strides that view (shape, strides) as ``newshape`` without a copy, or None.

    Works group by group: a run of old axes whose strides chain
    contiguously (stride[k] == size[k+1] * stride[k+1]) holds the same
    elements as the run of new axes of equal total size, so the new axes
    can take strides stepping from the run's innermost stride.
    """
    if size_of(shape) <= 1:
        return contiguous_strides(newshape, itemsize)
    old = [(d, s) for d, s in zip(shape, strides) if d != 1]
    new = [(axis, d) for axis, d in enumerate(newshape) if d != 1]
    out = [itemsize] * len(newshape)  # size-1 axes may take any stride
    i = j = 0
    while i < len(old):
        old_group, new_group = [old[i]], [new[j]]
        old_size, new_size = old[i][0], new[j][1]
        while old_size != new_size:
            if old_size < new_size:
                i += 1
                old_group.append(old[i])
                old_size *= old[i][0]
            else:
                j += 1
                new_group.append(new[j])
                new_size *= new[j][1]
        if any(s0 != d1 * s1 for (_, s0), (d1, s1) in zip(old_group, old_group[1:])):
            return None
        step = old_group[-1][1]
        for axis, d in reversed(new_group):
            out[axis] = step
            step *= d
        i += 1
        j += 1
    return tuple(out)


def index_view(shape, strides, offset, key):
    """Apply a basic-indexing key to a view.

    Parameters
    ----------
    shape, strides, offset : tuple, tuple, int
        The view being indexed (strides and offset in bytes).
    key : int, slice, Ellipsis, None or a tuple of them
        numpy basic indexing.

    Returns
    -------
    (shape, strides, offset) of the resulting view.
    """
    key = _expand_key(key, len(shape))
    new_shape, new_strides = [], []
    axis = 0
    for item in key:
        if item is None:
            new_shape.append(1)
            new_strides.append(0)
            continue
        size, stride = shape[axis], strides[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            count = len(range(start, stop, step))
            if count:
                offset += start * stride
            new_shape.append(count)
            new_strides.append(stride * step)
        else:
            index = operator.index(item)
            if not -size <= index < size:
                raise IndexError(
                    f"index {index} is out of bounds for axis {axis} with size {size}")
            offset += (index % size) * stride
        axis += 1
    return tuple(new_shape), tuple(new_strides), offset


def _expand_key(key, ndim):
    """Turn a key into one entry per axis (plus Nones), Ellipsis expanded."""
    if not isinstance(key, tuple):
        key = (key,)
    for item in key:
        _check_basic(item)
    if sum(item is Ellipsis for item in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for item in key if item is not None and item is not Ellipsis)
    if used > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, "
            f"but {used} were indexed")
    fill = (slice(None),) * (ndim - used)
    at = next((k for k, item in enumerate(key) if item is Ellipsis), None)
    if at is not None:
        return key[:at] + fill + key[at + 1:]
    return key + fill


def _check_basic(item):
    if item is None or item is Ellipsis or isinstance(item, slice):
        return
    array_like = getattr(item, "shape", ()) != ()
    if isinstance(item, (bool, np.bool_)) or array_like or not hasattr(item, "__index__"):
        raise IndexError(
            "gpuarray supports basic indexing only (integers, slices, '...', "
            f"None); got an index of type {type(item).__name__}")

"""Tensors: N-D strided views of memory owned by a factory.

In: a factory (``gpuarray.GPU`` or ``gpuarray.CPU``), a buffer it
allocated, and a (shape, dtype, byte strides, byte offset) description.
Out: an object with numpy's attributes and view semantics.  Indexing,
transposes and reshapes make new views of the same buffer; arithmetic
builds op-trees (see :mod:`gpuarray.core.optree`); ``t[key] = value`` hands the
view and the value to the factory, which evaluates and stores it.  ``repr``,
``str``, ``item`` and ``tolist`` copy the values to the host and format or
convert them as numpy does.
"""

import itertools

import numpy as np

from . import dtypes, shapes
from .optree import Expression, OpTreeNode, owned, settled


def assign_owned(target, tree):
    """``target[...] = tree`` for a settled tensor or tree of target's factory
    (``Backend.assign`` after its conversions; ``t[:] = expr`` directly)."""
    operand = tree
    if operand.shape is not target.shape and operand.shape != target.shape:
        shapes.check_assignable(operand.shape, target.shape)
    if 0 in target.shape:
        return
    if type(tree) is OpTreeNode:
        node = tree
        if node.has_gemm:  # a matrix product or a convolution below
            target.backend._assign_products(target, tree)
            return
    target.backend._execute(target, tree)


def _whole(key):
    """True for the key ``[:]``, the common assignment's (fields compared
    one by one: ``key == slice(None)`` builds two tuples)."""
    if type(key) is not slice:
        return False
    whole = key
    return whole.start is None and whole.stop is None and whole.step is None


#: layout id by (shape, strides, dtype), bounded (a few MB at most): cleared
#: when full, beyond the recipes a factory keeps (dispatch.MAX_RECIPES)
_LAYOUTS = {}
_MAX_LAYOUTS = 1 << 14
_layout_ids = itertools.count()


def layout_sig(shape, strides, dtype):
    """A tensor's signature: an int naming its layout, the same for every
    tensor of that shape, strides and dtype.  An int because each cached
    assignment hashes its tensors' signatures in its recipe key (a tuple of
    three would cost three hashes each time).  Ids never repeat, so clearing
    the table when full only costs a recipe recorded again."""
    key = (shape, strides, dtype)
    sig = _LAYOUTS.get(key)
    if sig is None:
        if len(_LAYOUTS) >= _MAX_LAYOUTS:
            _LAYOUTS.clear()
        sig = _LAYOUTS[key] = next(_layout_ids)
    return sig


def _inplace_method(name):
    """``t op= other``: the elementwise ``name`` written into ``t`` itself."""
    def method(self, other):
        self.backend.elementwise(name, self, other, out=self)
        return self
    method.__name__ = f"__i{name}__"
    return method


class Tensor(Expression):
    """An N-D array view owned by a factory.

    Tensors are made by a factory (``ng.empty``, ``ng.array``...), never
    directly.  ``strides`` are in bytes, as numpy's.

    Attributes
    ----------
    backend : gpuarray.core.backend.Backend
        The factory that owns the memory.
    shape, dtype, strides
        As numpy's.
    """

    def __init__(self, backend, buffer, shape, dtype, strides=None, offset=0, rounding=None):
        self.backend = backend
        self.buffer = buffer
        self.shape = shapes.as_shape(shape)
        self.dtype = self.operand_type = dtypes.as_dtype(dtype)
        if strides is None:
            self.strides = shapes.contiguous_strides(self.shape, self.dtype.itemsize)
            self._contiguous = True
        else:
            self.strides = tuple(strides)
            # found on first use: most views are never asked
            self._contiguous = None
        self.offset = offset
        self._rounding = None
        if rounding is not None:
            self.rounding = rounding
        #: structural signature as an op-tree leaf; a view's layout never
        #: changes, so it is made once
        self.sig = layout_sig(self.shape, self.strides, self.dtype)

    # -- attributes -----------------------------------------------------
    def buffer_ptr(self):
        """Address of the start of the underlying allocation (device or host)."""
        ptr = getattr(self.buffer, "ptr", None)
        return ptr if ptr is not None else self.buffer.ctypes.data

    @property
    def is_contiguous(self):
        """True when the view is C-contiguous."""
        if self._contiguous is None:
            # a view's layout never changes: found once
            self._contiguous = shapes.is_contiguous(self.shape, self.strides, self.itemsize)
        return self._contiguous

    @property
    def rounding(self):
        """Stochastic rounding on store, for float16/bfloat16/fp8 tensors.

        None rounds to nearest-even.  An int keeps that many mantissa bits
        and rounds the rest away stochastically (unbiased: the mean of many
        rounded copies of x is x); True keeps all of the format's bits
        (10, 7, 3 for float8_e4m3fn, 2 for float8_e5m2).
        """
        return self._rounding

    @rounding.setter
    def rounding(self, nbits):
        if nbits in (None, False, 0):
            self._rounding = None
            return
        if not dtypes.is_low_precision(self.dtype):
            raise ValueError("stochastic rounding applies to float16/bfloat16/float8 tensors, "
                             f"not {self.dtype}")
        full = dtypes.mantissa_bits(self.dtype)
        bits = full if nbits is True else int(nbits)
        if not 1 <= bits <= full:
            raise ValueError(f"rounding must keep between 1 and {full} mantissa bits for "
                             f"{self.dtype}, got {nbits}")
        self._rounding = bits

    def __repr__(self):
        """numpy's repr of the values, named after the tensor class:
        ``GPUTensor([1., 2.], dtype=float32)`` (dtype shown where numpy shows it)."""
        name = type(self).__name__
        text = np.array_repr(self.get())
        # numpy indents continuation lines under "array(": re-indent them under our name
        return name + text[len("array"):].replace("\n" + " " * 6, "\n" + " " * (len(name) + 1))

    def __str__(self):
        return str(self.get())

    # -- views ----------------------------------------------------------
    def _view(self, shape, strides, offset):
        return type(self)(self.backend, self.buffer, shape, self.dtype, strides, offset,
                          self._rounding)

    @property
    def real(self):
        """The real part: a view of a complex tensor (writes go through), the
        tensor itself for a real dtype, as numpy's."""
        return self._part(0) if self.dtype.kind == "c" else self

    @real.setter
    def real(self, value):
        self.real[...] = value

    @property
    def imag(self):
        """The imaginary part: a view of a complex tensor (writes go through),
        zeros of the tensor's shape and dtype for a real dtype, as numpy's."""
        if self.dtype.kind == "c":
            return self._part(1)
        return self.backend.zeros(self.shape, self.dtype)

    @imag.setter
    def imag(self, value):
        if self.dtype.kind != "c":
            raise TypeError("array does not have imaginary part to set")
        self.imag[...] = value

    def _part(self, k):
        """View of the real (k=0) or imaginary (k=1) parts of a complex tensor."""
        part = dtypes.real_part(self.dtype)
        return type(self)(self.backend, self.buffer, self.shape, part, self.strides,
                          self.offset + k * part.itemsize)

    def __getitem__(self, key):
        if _check_index_types(key):
            return self.backend._index_with_array(self, key)
        shape, strides, offset = shapes.index_view(self.shape, self.strides, self.offset, key)
        return self._view(shape, strides, offset)

    def __setitem__(self, key, value):
        if key is Ellipsis or _whole(key):
            target = self
        elif _check_index_types(key):
            self.backend._assign_with_array(self, key, value)
            return
        else:  # the key is checked already: its view directly
            target = self._view(*shapes.index_view(self.shape, self.strides, self.offset, key))
        if not isinstance(value, Expression):  # tensors and trees pass unconverted
            value = dtypes.assigned_scalar(value, self.dtype)
        elif owned(self.backend, value):  # the common case, straight to the kernels
            assign_owned(target, settled(value))
            return
        self.backend.assign(target, value)

    def transpose(self, *axes):
        """View with permuted axes (reversed when none are given)."""
        shape, strides = shapes.transpose(self.shape, self.strides, axes)
        return self._view(shape, strides, self.offset)

    def reshape(self, *shape):
        """View with a new shape; a copy where numpy would copy.

        Parameters
        ----------
        *shape : ints or one tuple
            The new shape; one entry may be -1.
        """
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        newshape = shapes.reshape_shape(self.size, shapes.as_shape_allow_unknown(shape))
        strides = shapes.reshape_strides(self.shape, self.strides, newshape, self.itemsize)
        if strides is None:
            return self.copy().reshape(newshape)
        return self._view(newshape, strides, self.offset)

    def ravel(self):
        """1-D view (a copy when the tensor is not contiguous)."""
        return self.reshape(-1)

    # -- data -----------------------------------------------------------
    def get(self):
        """Copy the elements into a new numpy array."""
        return self.backend.to_host(self)

    def set_async(self, host, stream=None):
        """Copy a host array in, queued on ``stream``; returns self.

        Parameters
        ----------
        host : numpy.ndarray
            C-contiguous, of this tensor's shape and a dtype that casts to
            it ('same_kind').  A page-locked array of this dtype
            (``ng.pinned_empty``) is read by the copy engine directly, so it
            must stay unchanged until the stream reaches the copy; any other
            array is first copied into a pinned staging buffer.
        stream : Stream, optional
            Default: the current stream.
        """
        self.backend._set_async(self, host, stream)
        return self

    def get_async(self, stream=None, out=None):
        """Copy the elements into a host array, queued on ``stream``.

        The values are there once the stream has reached the copy (after
        ``stream.synchronize()``, or an event recorded after it).

        Parameters
        ----------
        stream : Stream, optional
            Default: the current stream.
        out : numpy.ndarray, optional
            Writeable C-contiguous array of this shape and dtype, page-locked
            for a copy that does not wait (``ng.pinned_empty``); default: a
            new page-locked array.

        Returns
        -------
        numpy.ndarray
            ``out``, or the new array.
        """
        return self.backend._get_async(self, stream, out)

    def copy(self):
        """A new contiguous tensor with the same values."""
        return self.backend.evaluate(self)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Sort in place along ``axis``, as ``numpy.ndarray.sort`` (see ``ng.sort``)."""
        if axis is None:
            raise TypeError("'NoneType' object cannot be interpreted as an integer")
        self.backend.assign(self, self.backend.sort(self, axis, kind, order, stable=stable))

    def fill(self, value):
        """Set every element to ``value``; returns self.

        Raises
        ------
        OverflowError
            For a Python int that ``dtype`` cannot hold, as numpy 2.
        """
        self.backend.assign(self, dtypes.assigned_scalar(value, self.dtype))
        return self

    __iadd__ = _inplace_method("add")
    __isub__ = _inplace_method("subtract")
    __imul__ = _inplace_method("multiply")
    __itruediv__ = _inplace_method("divide")
    __ifloordiv__ = _inplace_method("floor_divide")
    __imod__ = _inplace_method("mod")
    __ipow__ = _inplace_method("power")
    __iand__ = _inplace_method("bitwise_and")
    __ior__ = _inplace_method("bitwise_or")
    __ixor__ = _inplace_method("bitwise_xor")
    __ilshift__ = _inplace_method("left_shift")
    __irshift__ = _inplace_method("right_shift")


def _check_index_types(key):
    """numpy's IndexError, in numpy's words, for index entries of no index type;
    returns whether the key holds an integer or boolean array (or a list),
    which the factory's gathers take (:mod:`gpuarray.algorithms.gathering`).
    """
    arrays = False
    for item in key if type(key) is tuple else (key,):
        if type(item) is bool or isinstance(item, np.bool_):
            arrays = True  # a 0-d mask, not the integer 0 or 1, as numpy reads it
        elif isinstance(item, (Expression, np.ndarray)):
            if dtypes.kind(item.dtype) not in "iub":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            arrays = arrays or item.ndim > 0 or item.dtype.kind == "b"
        elif isinstance(item, (list, tuple)):
            arrays = True
        elif not (item is None or item is Ellipsis or hasattr(item, "__index__")
                  or isinstance(item, slice)):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                             "(`None`) and integer or boolean arrays are valid indices")
    return arrays

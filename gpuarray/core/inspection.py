"""numpy's functions that inspect arrays and dtypes without computing:
``ndim``, ``shape``, ``size``, ``isscalar``, ``iscomplexobj``, ``isrealobj``,
``shares_memory``, ``may_share_memory``, ``broadcast_shapes``,
``promote_types``.

In: tensors, op-trees, array_likes, shapes or dtypes.  Out: Python values
(ints, tuples, bools, dtypes), as numpy's; nothing is evaluated or copied.
Two tensors share memory when they view overlapping bytes of one buffer
(the byte spans their strides reach; as ``may_share_memory``, a
conservative answer).  Mixed into both factories through
:class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import numpy as np

from . import dtypes, shapes
from .array import Tensor
from .optree import Expression


class InspectionFunctions:
    """Mixin: numpy's array and dtype inspection."""

    def ndim(self, a):
        """Number of dimensions of ``a`` (``numpy.ndim``)."""
        return a.ndim if isinstance(a, Expression) else np.ndim(a)

    def shape(self, a):
        """Shape of ``a`` (``numpy.shape``)."""
        return tuple(a.shape) if isinstance(a, Expression) else np.shape(a)

    def size(self, a, axis=None):
        """Number of elements of ``a``, or along ``axis`` (``numpy.size``)."""
        if not isinstance(a, Expression):
            return np.size(a, axis)
        if axis is None:
            return a.size
        return a.shape[shapes.normalize_axes((axis,), a.ndim)[0]]

    def isscalar(self, element):
        """True for Python and numpy scalars, False for arrays of any shape (``numpy.isscalar``)."""
        return not isinstance(element, Expression) and bool(np.isscalar(element))

    def iscomplexobj(self, x):
        """Whether ``x`` has a complex dtype (``numpy.iscomplexobj``)."""
        if isinstance(x, Expression):
            return x.dtype.kind == "c"
        return bool(np.iscomplexobj(x))

    def isrealobj(self, x):
        """Whether ``x`` has no complex dtype (``numpy.isrealobj``)."""
        return not self.iscomplexobj(x)

    def shares_memory(self, a, b, max_work=None):
        """Whether two tensors view overlapping bytes of one buffer (op-trees
        and host data own none here)."""
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a.buffer is not b.buffer:
            return False
        if a.size == 0 or b.size == 0:
            return False
        (a_lo, a_hi), (b_lo, b_hi) = _span(a), _span(b)
        return a_lo < b_hi and b_lo < a_hi

    def may_share_memory(self, a, b, max_work=None):
        """As :meth:`shares_memory` (its byte-span test is already conservative)."""
        return self.shares_memory(a, b)

    def broadcast_shapes(self, *args):
        """The shape the given shapes broadcast to (``numpy.broadcast_shapes``).

        Raises
        ------
        ValueError
            Shapes that do not broadcast (numpy's message).
        """
        return shapes.broadcast_shapes(*(shapes.as_shape(s) for s in args))

    def promote_types(self, type1, type2):
        """The smallest dtype both cast to safely (``numpy.promote_types``; bfloat16 included)."""
        first, second = dtypes.as_dtype(type1), dtypes.as_dtype(type2)
        return np.promote_types(first, second)


def _span(t):
    """[first, last + 1) byte offsets ``t`` reaches in its buffer."""
    low = high = t.offset
    for d, s in zip(t.shape, t.strides):
        reach = (d - 1) * s
        low, high = (low + reach, high) if reach < 0 else (low, high + reach)
    return low, high + t.itemsize

"""The numpy-style math API every factory offers (``ng.add``, ``ng.mean``...).

In: tensors, op-trees and scalars of one factory, plus numpy's keyword
arguments (``axis``, ``keepdims``, ``ddof``, ``out``).  Out: a lazy
op-tree, or, when ``out=`` is given, ``out`` after the tree was evaluated
into it.  Composite functions (mean, var, std, ptp, clip) are written in
terms of the primitive ops so the fusion compiler sees through them.

A reduction over no axes (``axis=()``, a 0-d operand, a scalar) gives each
value on its own in the reduction's dtype, as numpy's; for a scalar that is
a 0-d result.

Reductions drop the reduced axes unless ``keepdims=True`` is asked for, as
numpy's do (nervanagpu kept them): ``A - ng.mean(A, axis=1, keepdims=True)``
broadcasts.  Composite functions build on keepdims nodes and drop the axes
last, with one ``squeeze`` view the fusion compiler sees through.
"""
import numpy as np

from . import dtypes, ops, optree, shapes
from .optree import apply
from .signatures import binary_table, unary_table


#: clip's "bound not passed" (None is a bound left open)
_UNSET = object()


class MathFunctions:
    """Mixin: the public math functions, built on ``self.elementwise``."""

    def elementwise(self, name, *args, out=None):
        """Apply elementwise op ``name`` (see :data:`gpuarray.core.ops.OPS`)."""
        return self._finish(optree.elementwise(self, name, self.operands(args)), out)

    def where(self, condition, x=None, y=None, out=None):
        """``x`` where ``condition`` is true, else ``y`` (numpy.where); with
        ``condition`` alone, its ``nonzero`` indices."""
        if x is None or y is None:
            if x is not None or y is not None:
                raise ValueError("either both or neither of x and y should be given")
            return self.nonzero(condition)
        args = self.operands((condition, x, y))
        return self._finish(optree.elementwise(self, "where", args), out)

    def clip(self, a, a_min=_UNSET, a_max=_UNSET, out=None, *, min=None, max=None):  # noqa: A002
        """Limit values to [a_min, a_max]; either bound may be None (both None:
        a copy, as numpy 2 gives); ``min``/``max`` are numpy 2's and the array
        API's names for them.

        Raises
        ------
        ValueError
            ``min`` or ``max`` passed with ``a_min``/``a_max`` (numpy's message).
        """
        if (a_min is not _UNSET or a_max is not _UNSET) and (min is not None or max is not None):
            raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` "
                             "are provided is forbidden.")
        a_min = min if a_min is _UNSET else a_min
        a_max = max if a_max is _UNSET else a_max
        node = self.operand(a)
        dtype = node.dtype
        if a_min is not None and not dtypes.clip_bound_is_void(a_min, dtype, upper=False):
            node = self.maximum(node, a_min)
        if a_max is not None and not dtypes.clip_bound_is_void(a_max, dtype, upper=True):
            node = self.minimum(node, a_max)
        if node is a or not isinstance(node, optree.OpTreeNode):
            node = optree.astype(self, node, dtype)  # a copy, never the input itself
        return self._finish(node, out)

    def astype(self, a, dtype, out=None, *, copy=True, device=None):
        """``a`` converted to ``dtype`` (lazy); with ``copy=False``, ``a``
        itself where it has that dtype already (the array API's keywords)."""
        self._check_device(device)
        value, dtype = self.operand(a), dtypes.as_dtype(dtype)
        if not copy and out is None and value.dtype == dtype:
            return value
        return self._finish(optree.astype(self, value, dtype), out)

    def rand(self):
        """Uniform [0, 1) float32 numbers, a fresh one per element, from the seed."""
        return optree.rand(self)

    # -- reductions -----------------------------------------------------
    def _reduction(self, name, a, axis, keepdims, out, dtype=None):
        a = self.operand(a if dtype is None else self.astype(a, dtype))
        axes = shapes.reduction_axes(axis, a.ndim)
        if axes:
            node = optree.reduction(self, name, a, axes)
        else:
            node = self._reduce_no_axes(name, a)
        if dtype is not None and node.dtype != dtypes.as_dtype(dtype):
            # numpy accumulates in dtype; a wider sum cast back wraps alike
            node = optree.astype(self, node, dtypes.as_dtype(dtype))
        return self._finish(self._drop_axes(node, axes, keepdims), out, "unsafe")

    def _reduce_no_axes(self, name, a):
        """A reduction over no axes (``axis=()``, or a 0-d operand or scalar):
        each element on its own, in the reduction's result dtype, as numpy's.

        A cast node rather than a reduction node, so no kernel reduces over
        nothing; a scalar operand becomes a 0-d result.
        """
        if name in ("argmax", "argmin"):
            # only a 0-d operand gets here (a tuple axis is refused): index 0
            a = optree.Scalar(np.int64(0))
        return optree.astype(self, a, ops.reduction_dtype(name, a.dtype))

    def _keepdims(self, node, a, axis, keepdims):
        return self._drop_axes(node, shapes.reduction_axes(axis, a.ndim), keepdims)

    def _drop_axes(self, node, axes, keepdims):
        """A keepdims reduction result with its reduced ``axes`` dropped, unless ``keepdims``."""
        if keepdims or not axes:
            return node
        if len(axes) == len(node.shape):
            shape = ()
        else:
            shape = tuple(d for i, d in enumerate(node.shape) if i not in axes)
        return optree.squeeze(self, node, shape)

    def sum(self, a, axis=None, keepdims=False, out=None, *, dtype=None):
        """Sum over ``axis`` (None, an int or a tuple), accumulated in ``dtype``
        when given (numpy's and the array API's keyword)."""
        return self._reduction("sum", a, axis, keepdims, out, dtype)

    def prod(self, a, axis=None, keepdims=False, out=None, *, dtype=None):
        """Product over ``axis``, accumulated in ``dtype`` when given."""
        return self._reduction("prod", a, axis, keepdims, out, dtype)

    def max(self, a, axis=None, keepdims=False, out=None):
        """Maximum over ``axis`` (NaN propagates, as numpy's)."""
        return self._reduction("max", a, axis, keepdims, out)

    def min(self, a, axis=None, keepdims=False, out=None):
        """Minimum over ``axis`` (NaN propagates, as numpy's)."""
        return self._reduction("min", a, axis, keepdims, out)

    def any(self, a, axis=None, keepdims=False, out=None):
        """True where any element over ``axis`` is nonzero."""
        return self._reduction("any", a, axis, keepdims, out)

    def all(self, a, axis=None, keepdims=False, out=None):
        """True where every element over ``axis`` is nonzero."""
        return self._reduction("all", a, axis, keepdims, out)

    def argmax(self, a, axis=None, keepdims=False, out=None):
        """Index of the first maximum along ``axis`` (flat index for None)."""
        return self._arg_reduction("argmax", a, axis, keepdims, out)

    def argmin(self, a, axis=None, keepdims=False, out=None):
        """Index of the first minimum along ``axis`` (flat index for None)."""
        return self._arg_reduction("argmin", a, axis, keepdims, out)

    def _arg_reduction(self, name, a, axis, keepdims, out):
        if isinstance(axis, (tuple, list)):
            raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer")
        return self._reduction(name, a, axis, keepdims, out)

    def mean(self, a, axis=None, keepdims=False, out=None):
        """Arithmetic mean over ``axis`` (float64 for integer input)."""
        a = self._float_operand(a)
        total = self.sum(a, axis, keepdims=True)
        node = self.divide(total, self._count(a, axis))
        return self._finish(self._keepdims(node, a, axis, keepdims), out, "unsafe")

    def var(self, a, axis=None, keepdims=False, out=None, ddof=0, *, correction=None):
        """Variance over ``axis`` with ``ddof`` delta degrees of freedom
        (``correction``, the array API's name for it, as numpy 2 takes it).

        Raises
        ------
        ValueError
            Both ``ddof`` and ``correction`` given (numpy's message).
        """
        ddof = _correction(ddof, correction)
        a = self._float_operand(a)
        centred = self.subtract(a, self.mean(a, axis, keepdims=True))
        if dtypes.is_complex(a.dtype):  # |z|^2, real as numpy's
            magnitude = self.add(self.square(self.real(centred)), self.square(self.imag(centred)))
        else:
            magnitude = self.multiply(centred, centred)
        squares = self.sum(magnitude, axis, keepdims=True)
        node = self.divide(squares, max(self._count(a, axis) - ddof, 0))
        return self._finish(self._keepdims(node, a, axis, keepdims), out, "unsafe")

    def std(self, a, axis=None, keepdims=False, out=None, ddof=0, *, correction=None):
        """Standard deviation over ``axis`` (``ddof`` or ``correction``, as :meth:`var`)."""
        ddof = _correction(ddof, correction)
        a = self.operand(a)
        node = self.sqrt(self.var(a, axis, keepdims=True, ddof=ddof))
        return self._finish(self._keepdims(node, a, axis, keepdims), out, "unsafe")

    def ptp(self, a, axis=None, keepdims=False, out=None):
        """Range (max - min) over ``axis``."""
        a = self.operand(a)
        node = self.subtract(self.max(a, axis, keepdims=True), self.min(a, axis, keepdims=True))
        return self._finish(self._keepdims(node, a, axis, keepdims), out, "unsafe")

    def _float_operand(self, a):
        a = self.operand(a)
        return a if dtypes.is_inexact(a.dtype) else self.astype(a, np.float64)

    @staticmethod
    def _count(a, axis):
        return shapes.size_of(a.shape[i] for i in shapes.normalize_axes(axis, a.ndim))


def _add_elementwise(name):
    arity = ops.OPS[name].arity
    params = ", ".join("abc"[:arity])
    # the op's signature table, found once here rather than by name per call
    table = binary_table(name) if arity == 2 else unary_table(name) if arity == 1 else None

    def function(self, *args, out=None):
        if len(args) != arity:
            raise TypeError(f"{name}() takes {arity} operand(s) ({len(args)} given)")
        node = apply(self, name, args, table)
        return node if out is None else self._finish(node, out)

    function.__name__ = name
    function.__doc__ = (f"Elementwise ``{name}({params})``, lazy; "
                        f"numpy's dtype rules; ``out=`` evaluates at once.")
    setattr(MathFunctions, name, function)


for _name in ops.ELEMENTWISE:
    # real and imag of a tensor are views (array_api.py); conjugate is built here
    if _name not in ("real", "imag"):
        _add_elementwise(_name)

MathFunctions.abs = MathFunctions.absolute
MathFunctions.conj = MathFunctions.conjugate
MathFunctions.true_divide = MathFunctions.divide
MathFunctions.remainder = MathFunctions.mod


def _correction(ddof, correction):
    """The delta degrees of freedom from numpy's ``ddof`` or the array API's ``correction``."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction

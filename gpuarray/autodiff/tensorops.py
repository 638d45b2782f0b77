"""Operators over whole axes: matrix products, sums, views, softmax and its loss.

In: nodes.  Out: new nodes, like :mod:`gpuarray.autodiff.ops`.  Matrix
products of float16/float32 values run as the factory's GEMM (``ng.dot``);
other dtypes (float64 on the CPU factory, for gradient checks) multiply by a
broadcast product and a sum.  Reshape and transpose are views: no kernel.
"""
import numpy as np

from ..core import shapes as core_shapes
from .graph import Node, Op, ReshapingOp
from .ops import GEMM_DTYPES


class MatMulOp(Op):
    """``op(A) @ op(B)`` for 2-D operands, op transposing where asked."""

    name = "matmul"
    kind = "matmul"

    def shape(self, node, shapes):
        a, b = shapes
        if len(a) != 2 or len(b) != 2:
            raise ValueError(f"matmul takes 2-D operands, not shapes {a} and {b}")
        (m, k), (k2, n) = a[::-1] if node.attrs["trans_A"] else a, b[::-1] if node.attrs["trans_B"] else b
        if k != k2:
            raise ValueError(f"shapes {a} and {b} not aligned (trans_A={node.attrs['trans_A']}, "
                             f"trans_B={node.attrs['trans_B']}): {k} (dim 1) != {k2} (dim 0)")
        return (m, n)

    def expr(self, ng, node, args, shapes):
        a, b = args
        a = a.T if node.attrs["trans_A"] else a
        b = b.T if node.attrs["trans_B"] else b
        if a.dtype in GEMM_DTYPES:
            return ng.dot(a, b)
        return ng.sum(a[:, :, None] * b[None, :, :], axis=1, keepdims=False)

    def gradient(self, node, grad):
        a, b = node.inputs
        ta, tb = node.attrs["trans_A"], node.attrs["trans_B"]
        ga = matmul(b, grad, tb, True) if ta else matmul(grad, b, False, not tb)
        gb = matmul(grad, a, True, ta) if tb else matmul(a, grad, not ta, False)
        return [ga, gb]


def matmul(a, b, trans_A=False, trans_B=False):
    """Matrix product of 2-D nodes, ``a`` and/or ``b`` transposed where asked."""
    return Node(MatMulOp(), [a, b], trans_A=bool(trans_A), trans_B=bool(trans_B))


class ReduceSumOp(Op):
    """Sum over ``axis``; ``axis=None`` gives the dlsys scalar, shape ``(1,)``."""

    name = "reduce_sum"
    kind = "reduce"

    def shape(self, node, shapes):
        axis, (shape,) = node.attrs["axis"], shapes
        if axis is None:
            return (1,)
        axes = core_shapes.normalize_axes(axis, len(shape))
        if node.attrs["keepdims"]:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def expr_shape(self, node, expr_shapes, shape):
        return () if node.attrs["axis"] is None else shape

    def expr(self, ng, node, args, shapes):
        axis = node.attrs["axis"]
        return ng.sum(args[0], axis=axis, keepdims=node.attrs["keepdims"] and axis is not None)

    def gradient(self, node, grad):
        return [Node(UnreduceOp(), [grad, node.inputs[0]], **node.attrs)]


def reduce_sum(a, axis=None, keepdims=False):
    """Sum of ``a`` over ``axis`` (an int or a tuple; None: everything, shape ``(1,)``)."""
    axis = tuple(axis) if isinstance(axis, list) else axis
    return Node(ReduceSumOp(), [a], axis=axis, keepdims=bool(keepdims))


class UnreduceOp(ReshapingOp):
    """The gradient of a sum: ``grad`` broadcast back over the summed axes."""

    name = "unreduce"

    def shape(self, node, shapes):
        return shapes[1]

    def _kept_shape(self, node, shapes):
        """The sum's keepdims shape when ``grad`` must be reshaped to broadcast, else None."""
        axis, target = node.attrs["axis"], shapes[node.inputs[1]]
        if axis is None or node.attrs["keepdims"]:
            return None
        axes = core_shapes.normalize_axes(axis, len(target))
        if axes == tuple(range(len(axes))):
            return None  # summed leading axes broadcast back by themselves
        return tuple(1 if i in axes else d for i, d in enumerate(target))

    def needs_tensor(self, node, index, shapes):
        return self._kept_shape(node, shapes) is not None

    def expr_shape(self, node, expr_shapes, shape):
        return expr_shapes[0]

    def expr(self, ng, node, args, shapes):
        kept = self._kept_shape(node, shapes)
        return args[0] if kept is None else args[0].reshape(kept)

    def gradient(self, node, grad):
        return [reduce_sum(grad, **node.attrs), None]


class ReshapeOp(ReshapingOp):
    """A view of ``a`` with a new shape (given, or that of a second node)."""

    name = "reshape"
    kind = "view"

    def shape(self, node, shapes):
        new = shapes[1] if len(shapes) > 1 else node.attrs["shape"]
        return core_shapes.reshape_shape(core_shapes.size_of(shapes[0]),
                                         core_shapes.as_shape_allow_unknown(new))

    def expr(self, ng, node, args, shapes):
        return args[0].reshape(shapes[node])

    def gradient(self, node, grad):
        a = node.inputs[0]
        return [Node(ReshapeOp(), [grad, a])] + [None] * (len(node.inputs) - 1)


def reshape(a, shape):
    """``a`` with a new shape (one entry may be -1)."""
    return Node(ReshapeOp(), [a], shape=tuple(shape))


class TransposeOp(Op):
    """A view of ``a`` with permuted axes (reversed when ``axes`` is None)."""

    name = "transpose"
    kind = "view"

    def shape(self, node, shapes):
        axes = node.attrs["axes"] or tuple(reversed(range(len(shapes[0]))))
        if sorted(core_shapes.normalize_axis(x, len(shapes[0])) for x in axes) != list(range(len(shapes[0]))):
            raise ValueError(f"axes {axes} don't match an array of shape {shapes[0]}")
        return tuple(shapes[0][x] for x in axes)

    def expr(self, ng, node, args, shapes):
        axes = node.attrs["axes"]
        return args[0].transpose(*axes) if axes else args[0].T

    def gradient(self, node, grad):
        axes = node.attrs["axes"]
        return [transpose(grad, None if axes is None else tuple(np.argsort(axes)))]


def transpose(a, axes=None):
    """``a`` with its axes permuted (reversed when ``axes`` is None)."""
    return Node(TransposeOp(), [a], axes=None if axes is None else tuple(int(x) for x in axes))


def _softmax(ng, x):
    e = ng.exp(x - ng.max(x, axis=-1, keepdims=True))
    return e / ng.sum(e, axis=-1, keepdims=True)


def _logsumexp(ng, x):
    top = ng.max(x, axis=-1, keepdims=True)
    return top + ng.log(ng.sum(ng.exp(x - top), axis=-1, keepdims=True))


class SoftmaxOp(Op):
    """Softmax over the last axis."""

    name = "softmax"
    kind = "reduce"

    def shape(self, node, shapes):
        return shapes[0]

    def expr(self, ng, node, args, shapes):
        return _softmax(ng, args[0])

    def gradient(self, node, grad):
        return [node * (grad - reduce_sum(grad * node, axis=-1, keepdims=True))]


def softmax(a):
    """Softmax of ``a`` over its last axis."""
    return Node(SoftmaxOp(), [a])


class SoftmaxCrossEntropyOp(Op):
    """Mean over rows of ``-sum(labels * log_softmax(logits))``, shape ``(1,)``."""

    name = "softmax_cross_entropy"
    kind = "reduce"

    def shape(self, node, shapes):
        if shapes[0] != shapes[1] or not shapes[0]:
            raise ValueError(f"logits of shape {shapes[0]} and labels of shape {shapes[1]} differ")
        return (1,)

    def expr_shape(self, node, expr_shapes, shape):
        return ()

    def expr(self, ng, node, args, shapes):
        x, y = args
        rows = core_shapes.size_of(shapes[node.inputs[0]][:-1])
        return ng.sum(y * (_logsumexp(ng, x) - x), axis=None, keepdims=False) / float(rows)

    def gradient(self, node, grad):
        return [Node(SoftmaxCrossEntropyGradientOp(), [*node.inputs, grad], wrt=i,
                     scaled=node.attrs["scaled"]) for i in (0, 1)]


class SoftmaxCrossEntropyGradientOp(Op):
    """Gradient of the loss with respect to the logits (``wrt=0``) or the labels."""

    name = "softmax_cross_entropy_gradient"
    kind = "reduce"

    def shape(self, node, shapes):
        return shapes[node.attrs["wrt"]]

    def takes_broadcast(self, index):
        return index == 2

    def expr(self, ng, node, args, shapes):
        x, y, grad = args
        shape = shapes[node.inputs[0]]
        scale = 1.0 / core_shapes.size_of(shape[:-1]) if node.attrs["scaled"] else 1.0
        if node.attrs["wrt"] == 0:
            value = _softmax(ng, x) * ng.sum(y, axis=-1, keepdims=True) - y
        else:
            value = _logsumexp(ng, x) - x
        return value * grad * scale


def softmax_cross_entropy(logits, labels, scaled=True):
    """Softmax cross-entropy of ``logits`` against ``labels`` (rows of probabilities),
    averaged over the rows: shape ``(1,)``.

    ``scaled=True`` (the default) gives the true gradient of that mean;
    ``scaled=False`` gives the dlsys assignment's gradient, ``softmax - labels``
    without the ``1/rows`` factor, which its learning rates assume
    (:func:`softmaxcrossentropy_op` uses it).
    """
    return Node(SoftmaxCrossEntropyOp(), [logits, labels], scaled=bool(scaled))

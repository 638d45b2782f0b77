"""The graph operators: arithmetic, activations, losses, shape operators.

In: nodes (and Python numbers for constants).  Out: new nodes, each with
its operator's shape rule, its value as an op-tree of a factory (so the
executor can fuse chains of them into one assignment) and its gradient
built from these same operators.  ``+ - * /`` on nodes land here too.
"""
import numpy as np

from ..core import shapes as core_shapes
from .graph import Node, Op, ReshapingOp, broadcast

#: dtypes the factories' GEMM kernels take; other dtypes multiply by reduction
GEMM_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))


class ConstantOp(Op):
    """A Python number, broadcast over whatever it meets."""

    name = "constant"

    def shape(self, node, shapes):
        return ()

    def expr(self, ng, node, args, shapes):
        return node.attrs["value"]

    def gradient(self, node, grad):
        return []


def _node(value):
    """``value`` as a node: nodes pass, numbers become constants."""
    if isinstance(value, Node):
        return value
    if isinstance(value, (bool, int, float, np.number)):
        return Node(ConstantOp(), [], name=repr(value), value=float(value))
    raise TypeError(f"graph operands must be nodes or numbers, not {type(value).__name__}")


class BinaryOp(Op):
    """An elementwise binary operator with numpy broadcasting."""

    def __init__(self, name, function, gradient):
        self.name, self._function, self._gradient = name, function, gradient

    def shape(self, node, shapes):
        return broadcast(*shapes)

    def expr(self, ng, node, args, shapes):
        return self._function(*args)

    def gradient(self, node, grad):
        a, b = node.inputs
        ga, gb = self._gradient(a, b, grad, node)
        return [sum_to(ga, a), sum_to(gb, b)]


class UnaryOp(Op):
    """An elementwise function of one operand; ``gradient(x, y, g)`` with y the output."""

    def __init__(self, name, gradient):
        self.name, self._gradient = name, gradient

    def shape(self, node, shapes):
        return shapes[0]

    def expr(self, ng, node, args, shapes):
        return ng.elementwise(self.name, args[0])

    def gradient(self, node, grad):
        return [self._gradient(node.inputs[0], node, grad)]


_ADD = BinaryOp("add", lambda a, b: a + b, lambda a, b, g, y: (g, g))
_SUB = BinaryOp("subtract", lambda a, b: a - b, lambda a, b, g, y: (g, g * -1.0))
_MUL = BinaryOp("multiply", lambda a, b: a * b, lambda a, b, g, y: (g * b, g * a))
_DIV = BinaryOp("divide", lambda a, b: a / b, lambda a, b, g, y: (g / b, g * y / b * -1.0))
_RELU = UnaryOp("relu", lambda x, y, g: relu_gradient(y, g))
_SIGMOID = UnaryOp("sigmoid", lambda x, y, g: g * y * (1.0 - y))
_TANH = UnaryOp("tanh", lambda x, y, g: g * (1.0 - y * y))
_EXP = UnaryOp("exp", lambda x, y, g: g * y)
_LOG = UnaryOp("log", lambda x, y, g: g / x)


def add(a, b):
    """``a + b`` (nodes or numbers, numpy broadcasting)."""
    return Node(_ADD, [_node(a), _node(b)])


def subtract(a, b):
    """``a - b``."""
    return Node(_SUB, [_node(a), _node(b)])


def multiply(a, b):
    """``a * b``."""
    return Node(_MUL, [_node(a), _node(b)])


def divide(a, b):
    """``a / b``."""
    return Node(_DIV, [_node(a), _node(b)])


def relu(a):
    """``max(a, 0)`` elementwise."""
    return Node(_RELU, [a])


def sigmoid(a):
    """``1 / (1 + exp(-a))`` elementwise."""
    return Node(_SIGMOID, [a])


def tanh(a):
    """Hyperbolic tangent elementwise."""
    return Node(_TANH, [a])


def exp(a):
    """Exponential elementwise."""
    return Node(_EXP, [a])


def log(a):
    """Natural logarithm elementwise."""
    return Node(_LOG, [a])


Node.__add__ = lambda self, other: add(self, other)
Node.__radd__ = lambda self, other: add(other, self)
Node.__sub__ = lambda self, other: subtract(self, other)
Node.__rsub__ = lambda self, other: subtract(other, self)
Node.__mul__ = lambda self, other: multiply(self, other)
Node.__rmul__ = lambda self, other: multiply(other, self)
Node.__truediv__ = lambda self, other: divide(self, other)
Node.__rtruediv__ = lambda self, other: divide(other, self)
Node.__neg__ = lambda self: multiply(self, -1.0)


class ReluGradientOp(Op):
    """``grad`` where ``a > 0``, else 0: the gradient ReLU passes back."""

    name = "relu_gradient"

    def shape(self, node, shapes):
        return broadcast(*shapes)

    def expr(self, ng, node, args, shapes):
        a, grad = args
        return ng.where(a > 0, grad, 0.0)

    def gradient(self, node, grad):
        a, _ = node.inputs
        return [None, relu_gradient(a, grad)]  # the mask is flat almost everywhere


def relu_gradient(a, grad):
    """``grad * (a > 0)``: what ReLU passes back to its input ``a``."""
    return Node(ReluGradientOp(), [a, grad])


class LikeOp(Op):
    """Ones or zeros of an operand's shape."""

    def __init__(self, value):
        self.value = value
        self.name = "ones_like" if value else "zeros_like"

    def value_inputs(self, node):
        return ()

    def shape(self, node, shapes):
        return shapes[0]

    def expr_shape(self, node, expr_shapes, shape):
        return ()

    def expr(self, ng, node, args, shapes):
        return self.value

    def gradient(self, node, grad):
        return [None]


def ones_like(a):
    """Ones of ``a``'s shape."""
    return Node(LikeOp(1.0), [a])


def zeros_like(a):
    """Zeros of ``a``'s shape."""
    return Node(LikeOp(0.0), [a])


class BroadcastToOp(ReshapingOp):
    """``a`` broadcast (numpy's rules) to the shape of ``b``."""

    name = "broadcast_to"

    def shape(self, node, shapes):
        if not core_shapes.broadcasts_to(shapes[0], shapes[1]):
            raise ValueError(f"cannot broadcast shape {shapes[0]} to {shapes[1]}")
        return shapes[1]

    def expr_shape(self, node, expr_shapes, shape):
        return expr_shapes[0]

    def expr(self, ng, node, args, shapes):
        return args[0]

    def gradient(self, node, grad):
        return [sum_to(grad, node.inputs[0]), None]


def broadcast_to(a, b):
    """``a`` broadcast to the shape of node ``b`` (numpy's rules)."""
    return Node(BroadcastToOp(), [a, b])


class SumToOp(ReshapingOp):
    """``grad`` summed down to the shape of ``a``: undoes a broadcast."""

    name = "sum_to"
    kind = "reduce"

    def shape(self, node, shapes):
        if not core_shapes.broadcasts_to(shapes[1], shapes[0]):
            raise ValueError(f"cannot sum shape {shapes[0]} down to {shapes[1]}")
        return shapes[1]

    def expr(self, ng, node, args, shapes):
        grad, target = args[0], shapes[node.inputs[1]]
        lead = len(grad.shape) - len(target)
        kept = tuple(i + lead for i, d in enumerate(target) if d == 1 and grad.shape[i + lead] != 1)
        if kept:
            grad = ng.sum(grad, axis=kept, keepdims=True)
        if lead:
            grad = ng.sum(grad, axis=tuple(range(lead)), keepdims=False)
        return grad

    def gradient(self, node, grad):
        return [broadcast_to(grad, node.inputs[0]), None]


def sum_to(grad, a):
    """``grad`` summed over the axes along which ``a`` was broadcast."""
    return Node(SumToOp(), [grad, a])

"""Dense and elementwise layers: FullyConnected, ReLU, Bias, Dropout.

In: activations of any shape (FullyConnected flattens all but the batch
axis; the others keep the shape).  Out: the layer's output buffer, and in
bprop the parameter gradients and the input gradient.  FullyConnected is
``ng.dot`` with its bias and ReLU in the GEMM's epilogue; the elementwise
layers are one fused kernel per pass and write their input gradient over
the incoming gradient (no buffer of their own).
"""
import numpy as np

from ..core import shapes
from .layer import Layer, relu_and_bias_grads


def _features(shape):
    n = 1
    for d in shape[1:]:
        n *= d
    return n


class FullyConnected(Layer):
    """``y = relu(x @ W.T + b)`` over the flattened input, as torch's Linear.

    ``W`` has torch's shape ``(nout, nin)``, nin the product of the input's
    non-batch sizes, flattened in the input's own order (for a native 5-D
    activation: D, H, W, C).

    Parameters
    ----------
    nout : int
        Output features.
    bias : bool
        Learn ``b`` of shape (nout,).
    relu : bool
        Clamp negative outputs; bprop masks the gradient accordingly.
    name : str, optional
    """

    kind = "fc"

    def __init__(self, nout, bias=True, relu=False, name=None):
        super().__init__(name)
        self.nout, self.has_bias, self.relu = nout, bool(bias), bool(relu)
        self.W = self.b = None

    def _configure(self, in_shape):
        if len(in_shape) < 2:
            raise ValueError(f"{self.label}: needs a batch axis and features, got input shape "
                             f"{shapes.shape_str(in_shape)}")
        if not isinstance(self.nout, (int, np.integer)) or self.nout < 1:
            raise ValueError(f"{self.label}: nout must be a positive integer, got {self.nout!r}")
        nin = _features(in_shape)
        self.W = self.parameter("W", (self.nout, nin), nin)
        self.b = self.parameter("b", (self.nout,), nin) if self.has_bias else None
        return (in_shape[0], self.nout)

    @property
    def flops(self):
        """Floating-point operations of one fprop."""
        return 2 * self.in_shape[0] * self.W.shape[0] * self.W.shape[1]

    def _fprop(self, x):
        bias = self.b.value if self.b is not None else None
        return self._product("fprop", x, self.W.value, self.output, bias)

    def _flat(self, t):
        return t.reshape(self.in_shape[0], self.W.shape[1])

    def _bprop(self, grad):
        relu_and_bias_grads(self, grad, self.output if self.relu else None, self.b)
        self._product("update", grad, self.x, self.W.grad)
        if self.input_grad is None:
            return None
        self._product("bprop", grad, self.W.value, self.input_grad)
        return self.input_grad

    def _product(self, kind, a, b, c, bias=None):
        """fprop ``flat(x) @ W.T`` (bias, relu), update ``grad.T @ flat(x)``,
        bprop ``grad @ W`` into ``flat(grad_in)``: bound once (``ng.bind_dot``)
        where the activations flatten to a view; a copy is made every call."""
        activations = b if kind == "update" else a if kind == "fprop" else c
        if not activations.is_contiguous:
            return self.ng.dot(*self._operands(kind, a, b, c), relu=self.relu and kind == "fprop",
                               bias=bias)
        return self._bound(kind, self._bind_product, kind, a, b, c, bias)()

    def _bind_product(self, kind, a, b, c, bias):
        return self.ng.bind_dot(*self._operands(kind, a, b, c),
                                relu=self.relu and kind == "fprop", bias=bias)

    def _operands(self, kind, a, b, c):
        if kind == "fprop":
            return self._flat(a), b.T, c
        if kind == "update":
            return a.T, self._flat(b), c
        return a, b, self._flat(c)


class ReLU(Layer):
    """``y = max(x, 0)``."""

    kind = "relu"
    grad_in_place = True

    def _configure(self, in_shape):
        return in_shape

    def _fprop(self, x):
        self.output[:] = self.ng.relu(x)
        return self.output

    def _bprop(self, grad):
        if not self.needs_input_grad:
            return None
        grad[:] = grad * (self.output > 0)
        return grad


class Bias(Layer):
    """``y = x + b``, b of shape (C,) added along the last (channel) axis."""

    kind = "bias"
    grad_in_place = True

    def __init__(self, name=None):
        super().__init__(name)
        self.b = None

    def _configure(self, in_shape):
        # zeros: the fan-in only scales a uniform initialisation
        self.b = self.parameter("b", (in_shape[-1],), 1, init="zeros")
        return in_shape

    def _fprop(self, x):
        self.output[:] = x + self.b.value
        return self.output

    def _bprop(self, grad):
        self.ng.update_bias(grad, self.b.grad)
        return grad if self.needs_input_grad else None


class Dropout(Layer):
    """Zero each element with probability ``p`` in training, scaling the rest by 1 / (1 - p).

    The mask is drawn by the device generator (``ng.rand()``), kept for
    bprop; in inference mode (``training = False``) the input passes through.
    """

    kind = "dropout"
    grad_in_place = True

    def __init__(self, p=0.5, name=None):
        super().__init__(name)
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p!r}")
        self.p = float(p)
        self.mask = None

    def _configure(self, in_shape):
        return in_shape

    def _allocate(self):
        self.mask = self.ng.empty(self.in_shape, self.dtype)

    def _fprop(self, x):
        if not self.training or self.p == 0.0:
            return x
        self.mask[:] = (self.ng.rand() >= self.p) * (1.0 / (1.0 - self.p))
        self.output[:] = x * self.mask
        return self.output

    def _bprop(self, grad):
        if not self.needs_input_grad:
            return None
        if self.training and self.p != 0.0:
            grad[:] = grad * self.mask
        return grad

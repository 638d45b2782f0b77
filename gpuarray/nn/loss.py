"""Softmax with cross-entropy: the classifier's last layer and its loss.

In: logits ``(N, K)`` in fprop; targets in ``loss`` / ``bprop``, either
class indices ``(N,)`` of an integer dtype or one-hot (or soft) rows
``(N, K)`` of the layer's dtype.  Out: the fp32 class probabilities (the
layer's output), the mean cross-entropy as a ``(1, 1)`` fp32 tensor, and
the logits' gradient ``(softmax - target) / N``.  Each is one fused kernel:
the row maximum, the exponentials' sum and the division run together.
"""
import numpy as np

from ..core import dtypes, shapes
from .layer import F32, Layer

#: probabilities are clamped here before the log: finite loss for a confident miss
TINY = 1e-30


class SoftmaxCrossEntropy(Layer):
    """``p = softmax(x)`` over the last axis; ``loss = -mean(sum(target * log p))``."""

    kind = "softmax"

    def __init__(self, name=None):
        super().__init__(name)
        self.value = self.classes = None

    def _configure(self, in_shape):
        if len(in_shape) != 2:
            raise ValueError(f"{self.label}: takes logits of shape (N, classes), got "
                             f"{shapes.shape_str(in_shape)}")
        return in_shape

    def _own_output(self, output):
        return self.ng.empty(self.out_shape, F32)

    def _allocate(self):
        ng = self.ng
        self.value = ng.zeros((1, 1), F32)
        self.classes = ng.array(np.arange(self.in_shape[1], dtype=np.int32).reshape(1, -1))

    def _fprop(self, x):
        ng = self.ng
        z = ng.astype(x, F32)
        e = ng.exp(z - ng.max(z, axis=1, keepdims=True))
        self.output[:] = e / ng.sum(e, axis=1, keepdims=True)
        return self.output

    def _target(self, targets):
        """Targets as an (N, K) fp32 expression, checked."""
        n, k = self.in_shape
        shape = tuple(getattr(targets, "shape", ()))
        kind = dtypes.as_dtype(targets.dtype).kind if hasattr(targets, "dtype") else None
        if shape == (n,) and kind in "iu":
            return self.ng.astype(self.ng.equal(targets.reshape(n, 1), self.classes), F32)
        if shape == (n, k) and kind == "f":
            return self.ng.astype(targets, F32)
        raise ValueError(f"{self.label}: targets must be class indices of shape ({n},) "
                         f"(an integer dtype) or rows of shape ({n}, {k}), got "
                         f"{shapes.shape_str(shape) if shape else type(targets).__name__}")

    def loss(self, targets):
        """Mean cross-entropy of the last fprop against ``targets``: a (1, 1) fp32 tensor."""
        self._ready()
        ng = self.ng
        logp = ng.log(ng.maximum(self.output, TINY))
        self.value[:] = ng.sum(-self._target(targets) * logp) * (1.0 / self.in_shape[0])
        return self.value

    def bprop(self, targets):
        """The logits' gradient ``(softmax - target) / N`` (targets as in :meth:`loss`)."""
        self._ready()
        if self.input_grad is None:
            return None
        self.input_grad[:] = (self.output - self._target(targets)) * (1.0 / self.in_shape[0])
        return self.input_grad

    def _ready(self):
        if self.ng is None:
            raise RuntimeError(f"{self.label}: call setup(ng, in_shape, dtype) first")
        if self.x is None:
            raise RuntimeError(f"{self.label}: loss or bprop before fprop")

"""Normalisation layers as fused op-trees: BatchNorm (with an optional ReLU) and LRN.

In: activations whose last axis is the channel axis (native 5-D, or
``(N, C)`` after a dense layer).  Out: the normalised activations and, in
bprop, the input gradient and (BatchNorm) the scale and shift gradients.

BatchNorm in training mode: two column reductions (mean, then the variance
about it, in fp32) and one elementwise kernel that normalises, scales,
shifts and clamps; bprop: two reductions and one elementwise kernel, the
ReLU mask recomputed inside each rather than written out.  LRN across
channels (AlexNet's): the squares go into a zero-padded buffer once, and
the window sum is a sum of shifted views of it inside one kernel.
"""
import numpy as np

from .layer import F32, Layer, rows


class BatchNorm(Layer):
    """Batch normalisation over every axis but the last (channels), as torch's BatchNorm.

    Parameters
    ----------
    eps : float
        Added to the variance.
    momentum : float
        Weight of the batch statistics in the running ones.
    relu : bool
        Clamp the output at 0 (fused into the normalisation kernel).
    name : str, optional

    Parameters ``gamma`` (ones) and ``beta`` (zeros) of shape (C,); running
    statistics ``running_mean`` / ``running_var`` (fp32, unbiased variance as
    torch's) used when ``training`` is False.
    """

    kind = "bn"

    def __init__(self, eps=1e-5, momentum=0.1, relu=False, name=None):
        super().__init__(name)
        self.eps, self.momentum, self.relu = float(eps), float(momentum), bool(relu)
        self.gamma = self.beta = None

    def _configure(self, in_shape):
        C = in_shape[-1]
        self.count = int(np.prod(in_shape[:-1]))
        self.gamma = self.parameter("gamma", (C,), 1, init="ones")
        self.beta = self.parameter("beta", (C,), 1, init="zeros")
        return in_shape

    def _allocate(self):
        ng, C = self.ng, self.in_shape[-1]
        # row 0: mean, row 1: variance (batch, then running)
        self.stats = ng.zeros((2, C), F32)
        self.running = ng.array(np.vstack([np.zeros(C), np.ones(C)]).astype(np.float32))
        # torch keeps the unbiased variance in the running statistics
        unbiased = self.count / max(self.count - 1, 1)
        self._blend = ng.array(np.array([[self.momentum], [self.momentum * unbiased]],
                                        np.float32))
        self.sums = ng.zeros((2, C), F32)

    @property
    def running_mean(self):
        """The running mean per channel, (C,) fp32 (a view)."""
        return self.running[0]

    @property
    def running_var(self):
        """The running unbiased variance per channel, (C,) fp32 (a view)."""
        return self.running[1]

    def _normalised(self, x2, stats):
        mean, var = stats[0:1], stats[1:2]
        return (x2 - mean) * self.ng.rsqrt(var + self.eps)

    def _fprop(self, x):
        ng = self.ng
        x2 = rows(x)
        if self.training:
            self.stats[0:1] = ng.mean(ng.astype(x2, F32), axis=0, keepdims=True)
            self.stats[1:2] = ng.mean(ng.square(ng.astype(x2, F32) - self.stats[0:1]), axis=0, keepdims=True)
            self.running[:] = self.running * (1.0 - self.momentum) + self.stats * self._blend
            stats = self.stats
        else:
            stats = self.running
        y = self._normalised(x2, stats) * self.gamma.value + self.beta.value
        rows(self.output)[:] = ng.relu(y) if self.relu else y
        return self.output

    def _bprop(self, grad):
        ng = self.ng
        g = rows(grad)
        if self.relu:
            g = g * (rows(self.output) > 0)
        stats = self.stats if self.training else self.running
        xhat = self._normalised(rows(self.x), stats)
        self.sums[0:1] = ng.sum(ng.astype(g, F32), axis=0, keepdims=True)
        self.sums[1:2] = ng.sum(ng.astype(g, F32) * xhat, axis=0, keepdims=True)
        self.beta.grad[:] = self.sums[0]
        self.gamma.grad[:] = self.sums[1]
        if not self.needs_input_grad:
            return None
        scale = self.gamma.value * ng.rsqrt(stats[1:2] + self.eps)
        if self.training:
            # the batch statistics depend on x too
            mean_g, mean_gx = self.sums[0:1] / self.count, self.sums[1:2] / self.count
            rows(self.input_grad)[:] = scale * (g - mean_g - xhat * mean_gx)
        else:
            rows(self.input_grad)[:] = scale * g
        return self.input_grad


class LRN(Layer):
    """Local response normalisation across channels, as torch's LocalResponseNorm.

    ``y_c = x_c / (k + alpha / n * sum of x_c'^2 over the n channels around c) ** beta``,
    the window running from ``c - n // 2`` to ``c + (n - 1) // 2``, clipped
    at the edges.
    """

    kind = "lrn"

    def __init__(self, size=5, alpha=1e-4, beta=0.75, k=1.0, name=None):
        super().__init__(name)
        if not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"LRN size must be a positive integer, got {size!r}")
        self.n, self.alpha, self.beta, self.k = int(size), float(alpha), float(beta), float(k)

    def _configure(self, in_shape):
        return in_shape

    def _allocate(self):
        # channels padded by n - 1 zeros; the pad never changes after set-up
        C, n = self.in_shape[-1], self.n
        positions = int(np.prod(self.in_shape[:-1]))
        self.squares = self.ng.zeros((positions, C + n - 1), F32)
        self.ratios = self.ng.zeros((positions, C + n - 1), F32)

    def _window_sum(self, padded):
        C = self.in_shape[-1]
        total = padded[:, 0:C]
        for i in range(1, self.n):
            total = total + padded[:, i:i + C]
        return total

    def _scale(self):
        return self.k + (self.alpha / self.n) * self._window_sum(self.squares)

    def _fprop(self, x):
        ng, C, lo = self.ng, self.in_shape[-1], self.n // 2
        x2 = rows(x)
        self.squares[:, lo:lo + C] = ng.square(ng.astype(x2, F32))
        rows(self.output)[:] = x2 * ng.power(self._scale(), -self.beta)
        return self.output

    def _bprop(self, grad):
        if not self.needs_input_grad:
            return None
        ng, C = self.ng, self.in_shape[-1]
        # channel c feeds the windows of c - (n - 1) // 2 ... c + n // 2: the mirror
        lo = (self.n - 1) // 2
        scale = self._scale()
        g, x2 = rows(grad), rows(self.x)
        self.ratios[:, lo:lo + C] = g * rows(self.output) / scale
        coefficient = 2.0 * self.alpha * self.beta / self.n
        rows(self.input_grad)[:] = (g * ng.power(scale, -self.beta)
                                    - coefficient * x2 * self._window_sum(self.ratios))
        return self.input_grad

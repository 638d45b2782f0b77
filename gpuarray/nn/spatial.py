"""Convolution and pooling layers on the factory's conv kernels.

In: native 5-D activations ``(N, D, H, W, C)``.  Out: ``(N, M, P, Q, K)``.
:class:`Conv` runs ``ng.fprop_conv`` with its bias and ReLU fused into the
GEMM's epilogue; its backward pass masks the gradient by the ReLU in place
and sums it for the bias in one ``update_bias`` call, then runs
``bprop_conv`` and ``update_conv``.
:class:`Pool` keeps the argmax of max pooling from fprop for bprop; a max
Pool right after a Conv with a ReLU applies that layer's ReLU and bias
gradients to its own, smaller, errors before routing them
(:func:`pair_relu_pools`, which containers call at set-up).
"""
from ..core import shapes
from .layer import Layer, relu_and_bias_grads, spatial


def _triple(name, value, fill):
    """An int, or an (h, w) or (d, h, w) tuple, as (d, h, w); ``fill`` is the depth
    of a 2-D value (1 for sizes, strides and dilations, 0 for padding)."""
    if isinstance(value, (tuple, list)):
        if len(value) not in (2, 3):
            raise ValueError(f"{name} takes an int or an (h, w) or (d, h, w) tuple, "
                             f"got {value!r}")
        return tuple(value) if len(value) == 3 else (fill,) + tuple(value)
    return (fill, value, value)


class Conv(Layer):
    """Convolution with an optional bias and ReLU fused into its epilogue.

    Learns ``W`` of shape ``(K, T, R, S, C)`` (KTRSC, see
    :mod:`gpuarray.conv.layer`) and ``b`` of shape ``(K,)``.

    Parameters
    ----------
    K : int
        Output channels (filters).
    size : int or tuple
        Filter extent: R = S = size, or (R, S) or (T, R, S).
    stride, pad, dilation : int or tuple
        As cuDNN's, per (h, w) or (d, h, w); an int applies to H and W.
    bias : bool
        Learn a per-channel bias (parameter ``b``, shape (K,)).
    relu : bool
        Clamp negative outputs; bprop masks the gradient accordingly.
    name : str, optional
    """

    kind = "conv"

    def __init__(self, K, size, stride=1, pad=0, dilation=1, bias=True, relu=False, name=None):
        super().__init__(name)
        self.K, self.relu, self.has_bias = K, bool(relu), bool(bias)
        self.size, self.stride = _triple("size", size, 1), _triple("stride", stride, 1)
        self.pad, self.dilation = _triple("pad", pad, 0), _triple("dilation", dilation, 1)
        self.layer = self.W = self.b = None
        #: the max Pool right after this layer, which applies the ReLU's and the
        #: bias's gradients on its (smaller) output instead (:func:`pair_relu_pools`)
        self.grads_at_pool = None

    def _configure(self, in_shape):
        N, D, H, W, C = spatial(self.label, in_shape)
        T, R, S = self.size
        try:
            self.layer = self.ng.conv_layer(
                self.dtype, N, C, self.K, D, H, W, T, R, S, *self.pad, *self.stride,
                *self.dilation)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self.label}: {e} (input shape {shapes.shape_str(in_shape)})") \
                from None
        fan_in = C * T * R * S
        self.W = self.parameter("W", self.layer.dimF, fan_in)
        self.b = self.parameter("b", (self.K,), fan_in) if self.has_bias else None
        return self.layer.dimO

    @property
    def flops(self):
        """Floating-point operations of one fprop (bprop and update: the same each)."""
        return self.layer.flops

    def _fprop(self, x):
        bias = self.b.value if self.b is not None else None
        return self._bound("fprop", self._bind, "fprop", x, self.W.value, self.output,
                           self.relu, bias)()

    def _bprop(self, grad):
        if self.grads_at_pool is None:
            relu_and_bias_grads(self, grad, self.output if self.relu else None, self.b)
        self._bound("update", self._bind, "update", self.x, grad, self.W.grad)()
        if self.input_grad is None:
            return None
        return self._bound("bprop", self._bind, "bprop", self.W.value, grad, self.input_grad)()

    def _bind(self, kind, a, b, out, relu=False, bias=None):
        # the layer's calls, bound once (ng.bind_conv): a step repeats them on the same tensors
        return self.ng.bind_conv(kind, self.layer, a, b, out, relu=relu, bias=bias)


class Pool(Layer):
    """Max or average pooling over T x R x S windows (J channels for maxout).

    Parameters
    ----------
    op : {"max", "avg"}
    size : int or tuple
        Window extent, as :class:`Conv`'s.
    stride : int or tuple, optional
        Default: the window (no overlap).
    pad : int or tuple
    channels : int
        J, channels per window (maxout when > 1); strides along C follow it.
    include_padding : bool
        Average pooling divides by the whole window, padding included.
    """

    kind = "pool"

    def __init__(self, op, size, stride=None, pad=0, channels=1, include_padding=False,
                 name=None):
        super().__init__(name)
        self.op, self.include_padding, self.J = op, include_padding, channels
        self.size = _triple("size", size, 1)
        self.stride = self.size if stride is None else _triple("stride", stride, 1)
        self.pad = _triple("pad", pad, 0)
        self.layer = self.argmax = None
        #: the Conv (with a ReLU) right before this layer whose ReLU and bias
        #: gradients this layer's bprop applies (:func:`pair_relu_pools`)
        self.relu_conv = None

    def _configure(self, in_shape):
        N, D, H, W, C = spatial(self.label, in_shape)
        try:
            self.layer = self.ng.pool_layer(
                self.dtype, self.op, N, C, D, H, W, self.J, *self.size, 0, *self.pad,
                self.J, *self.stride, include_padding=self.include_padding)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self.label}: {e} (input shape {shapes.shape_str(in_shape)})") \
                from None
        return self.layer.dimO

    def _allocate(self):
        if self.op == "max":
            self.argmax = self.ng.empty(self.layer.dimO, self.layer.argmax_dtype)

    def _fprop(self, x):
        self.ng.fprop_pool(self.layer, x, self.output, argmax=self.argmax)
        return self.output

    def _bprop(self, grad):
        if self.input_grad is None:
            return None
        if self.relu_conv is not None:
            relu_and_bias_grads(self, grad, self.output, self.relu_conv.b)
        self.ng.bprop_pool(self.layer, self.x, grad, self.input_grad, argmax=self.argmax)
        return self.input_grad


def pair_relu_pools(layers):
    """Let each max :class:`Pool` right after a :class:`Conv` with a ReLU apply
    that layer's ReLU and bias gradients on the pooled errors.

    Max pooling routes each error to its window's maximum, an element of the
    ReLU's output: that element is positive exactly where the window's
    maximum -- the pool's output -- is, and every error lands on one element,
    so the bias gradient sums the pooled errors as it would the routed ones.
    Masked and summed there, the pass reads a tensor a window's size smaller
    (VGG-A's conv1: 103 MB instead of 411).  Channel pooling (J > 1) keeps
    them apart.  ``layers``: a container's chain, in order.
    """
    for layer in layers:
        if isinstance(layer, Conv):
            layer.grads_at_pool = None
        elif isinstance(layer, Pool):
            layer.relu_conv = None
    for conv, pool in zip(layers, layers[1:]):
        if (isinstance(conv, Conv) and conv.relu and isinstance(pool, Pool)
                and pool.op == "max" and pool.J == 1):
            conv.grads_at_pool, pool.relu_conv = pool, conv

"""The numpy reference of convolution and pooling: what the CPU factory runs.

In: numpy arrays in the native layout (activations ``(N, D, H, W, C)``,
filters ``(K, T, R, S, C)``, see :mod:`~gpuarray.conv.layer`) and the
layer.  Out: float32 arrays -- fp16/bf16 inputs are computed in float32,
as the GEMM reference and the tensor-core kernels do; the caller rounds
to the output dtype when it stores.

Vectorised: a strided window view of the padded input (im2col without a
copy until the matrix product) turns each convolution into one GEMM; the
adjoints scatter-add the windows back, one filter tap at a time.
"""
import itertools

import numpy as np
from numpy.lib.stride_tricks import as_strided


def as_float32(x):
    """float32 copy-free where possible (fp16/bf16 widened)."""
    return np.asarray(x).astype(np.float32, copy=False)


def _padded(x, pads, fill):
    """``x`` padded by ``pads`` along axes 1..len(pads), with ``fill``."""
    width = [(0, 0)] + [(p, p) for p in pads] + [(0, 0)] * (x.ndim - 1 - len(pads))
    return np.pad(x, width, constant_values=fill)


def windows(x, outs, taps, strides, dilations):
    """Read-only window view of the padded ``x``: ``(N, *outs, *taps, *rest)``.

    Axes 1..k of ``x`` (k = ``len(outs)``) are slid over; the axes after
    them (``rest``) are kept whole in every window.
    """
    k = len(outs)
    s = x.strides
    shape = (x.shape[0],) + tuple(outs) + tuple(taps) + x.shape[1 + k:]
    strides = ((s[0],) + tuple(s[1 + i] * strides[i] for i in range(k))
               + tuple(s[1 + i] * dilations[i] for i in range(k)) + s[1 + k:])
    return as_strided(x, shape, strides, writeable=False)


def fold(cols, padded_shape, strides, dilations):
    """Adjoint of :func:`windows`: sum each window's values back onto the padded input."""
    k = len(strides)
    outs, taps = cols.shape[1:1 + k], cols.shape[1 + k:1 + 2 * k]
    grad = np.zeros(padded_shape, np.float32)
    for tap in itertools.product(*(range(t) for t in taps)):
        where = tuple(slice(t * dl, t * dl + (o - 1) * st + 1, st)
                      for t, o, st, dl in zip(tap, outs, strides, dilations))
        grad[(slice(None),) + where] += cols[(slice(None),) * (1 + k) + tap]
    return grad


def _crop(x, pads):
    return x[(slice(None),) + tuple(slice(p, x.shape[1 + i] - p) for i, p in enumerate(pads))]


def _conv_cols(layer, inputs):
    """The im2col matrix ``(N*M*P*Q, T*R*S*C)`` of the input, as a strided view."""
    x = _padded(as_float32(inputs), layer.pad, 0)
    cols = windows(x, layer.dimO[1:4], layer.dimF[1:4], layer.stride, layer.dilation)
    return cols.reshape(-1, int(np.prod(layer.dimF[1:])))


def fprop_conv(layer, inputs, filters):
    """Convolution (cuDNN's cross-correlation): ``O[n,m,p,q,k]``, float32."""
    f = as_float32(filters).reshape(layer.K, -1)
    return (_conv_cols(layer, inputs) @ f.T).reshape(layer.dimO)


def bprop_conv(layer, filters, errors):
    """Gradient with respect to the input, shape ``dimI``, float32."""
    e = as_float32(errors).reshape(-1, layer.K)
    cols = (e @ as_float32(filters).reshape(layer.K, -1)).reshape(
        layer.dimO[:4] + layer.dimF[1:])
    padded = tuple(n + 2 * p for n, p in zip(layer.dimI[1:4], layer.pad))
    grad = fold(cols, (layer.N,) + padded + (layer.C,), layer.stride, layer.dilation)
    return _crop(grad, layer.pad)


def update_conv(layer, inputs, errors):
    """Gradient with respect to the filters, shape ``dimF``, float32."""
    e = as_float32(errors).reshape(-1, layer.K)
    return (e.T @ _conv_cols(layer, inputs)).reshape(layer.dimF)


def epilogue(value, alpha=1.0, bias=None, relu=False, beta=0.0, previous=None):
    """``relu(alpha * value + bias) + beta * previous`` in float32, in place of ``value``.

    The bias is per output channel, the innermost axis; ReLU lets NaN
    through, as the kernels' ``max(x, 0)`` ordering does.
    """
    value *= np.float32(alpha)
    if bias is not None:
        value += as_float32(bias)
    if relu:
        value = np.where(value < 0, np.float32(0), value)
    if beta != 0:
        value += np.float32(beta) * as_float32(previous)
    return value


# -- pooling: windows over (channel, depth, height, width) ------------------
# The pooled axes of an NDHWC tensor seen as (N, D, H, W, C) are 4..1 out of
# order; moving C in front of D makes them 1..4 for windows() and fold().

def _channels_first(x):
    return np.moveaxis(x, 4, 1)


def _channels_last(x):
    return np.moveaxis(x, 1, 4)


def _pool_windows(pool, x, fill):
    """``(N, K, M, P, Q, J*T*R*S)`` windows; the last axis in (J, T, R, S) order."""
    x = _padded(_channels_first(x), pool.pad, fill)
    outs = (pool.K, pool.M, pool.P, pool.Q)
    cols = windows(x, outs, (pool.J, pool.T, pool.R, pool.S), pool.stride, (1, 1, 1, 1))
    return cols.reshape(cols.shape[:5] + (-1,))


def _inside(pool):
    """1 where a window element lies inside the input: ``(1, K, M, P, Q, J*T*R*S)``."""
    return _pool_windows(pool, np.ones((1,) + pool.dimI[1:], np.float32), 0)


def _counts(pool):
    """Elements each average divides by: ``(1, K, M, P, Q, 1)``, or the window size."""
    if pool.include_padding:
        return np.float32(pool.window)
    return _inside(pool).sum(axis=-1, keepdims=True)


def _argmax(pool, cols):
    """Index of each window's max; a window whose max is -inf points at an
    element inside the input, never at the padding."""
    index = np.argmax(cols, axis=-1)
    inside = np.broadcast_to(_inside(pool) > 0, cols.shape)
    chosen_inside = np.take_along_axis(inside, index[..., None], axis=-1)[..., 0]
    return np.where(chosen_inside, index, np.argmax(inside, axis=-1))


def fprop_pool(pool, inputs):
    """Pooled values ``(N, M, P, Q, K)`` float32 and, for max pooling, the
    argmax: the flat index in the window, ``((j*T + t)*R + r)*S + s``."""
    x = as_float32(inputs)
    if pool.op == "avg":
        cols = _pool_windows(pool, x, 0)
        return _channels_last((cols.sum(axis=-1, keepdims=True) / _counts(pool))[..., 0]), None
    cols = _pool_windows(pool, x, -np.inf)
    index = _argmax(pool, cols)
    value = np.take_along_axis(cols, index[..., None], axis=-1)[..., 0]
    return _channels_last(value), _channels_last(index)


def bprop_pool(pool, errors, argmax=None, inputs=None):
    """Gradient with respect to the input ``(N, D, H, W, C)``, float32.

    Max pooling sends each error to its window's argmax (``argmax`` in the
    output's layout, as :func:`fprop_pool` returns it, or found again in
    ``inputs`` when None); average pooling spreads it evenly over the
    window.  Overlapping windows add up.
    """
    e = _channels_first(as_float32(errors))[..., None]
    if pool.op == "max" and argmax is None:
        argmax = fprop_pool(pool, inputs)[1]
    if pool.op == "avg":
        cols = np.broadcast_to(e / _counts(pool), e.shape[:5] + (pool.window,))
    else:
        hot = np.arange(pool.window) == _channels_first(np.asarray(argmax))[..., None]
        cols = np.where(hot, e, np.float32(0))
    cols = cols.reshape(e.shape[:5] + (pool.J, pool.T, pool.R, pool.S))
    padded = tuple(n + 2 * p for n, p in zip((pool.C, pool.D, pool.H, pool.W), pool.pad))
    grad = fold(cols, (pool.N,) + padded, pool.stride, (1, 1, 1, 1))
    return _channels_last(_crop(grad, pool.pad))

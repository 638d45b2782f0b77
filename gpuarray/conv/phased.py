"""Strided data gradients as one stride-1 convolution over the stride's phases.

In: a checked bprop :class:`~gpuarray.conv.call.ConvCall` whose layer
strides H or W (AlexNet's conv1: 11x11, stride 4), and the factory.  Out:
grad_I filled in, by a stride-1 forward convolution of the errors E and
two small fused copies -- on Hopper the forward convolution runs as one
implicit-GEMM kernel (:mod:`~gpuarray.conv.implicit`), where the data
gradient of a strided layer would otherwise take the gather route
(``dcol = E @ F``, then col2im).

Why it works (one axis; H and W alike).  Row ``h`` of the gradient,
``dI[h] = sum over p, r with s*p + r - pad = h of E[p] * F[r]``.  Write
``h = s*h' + a`` with the phase ``a`` in ``[0, s)``: then ``r = a + pad -
s*j`` with ``j = p - h'``, and ``j`` runs over at most ``R' = j_max -
j_min + 1`` values, ``j_min = ceil((pad - R + 1) / s)``, ``j_max =
floor((s - 1 + pad) / s)``, the same for every phase.  So for each output
block ``h'`` every phase is a correlation of ``E[h' + j_min ...
h' + j_max]`` with its own ``R'`` taps of F (zero where ``r`` falls
outside the filter): a stride-1 convolution of E (K channels in, padding
``-j_min`` -- or ``j_max`` where that is more: the convolution pads both
sides alike, and the extra taps are zeros) with ``s_h * s_w * C``
filters, whose output channel ``(a, b, c)`` is the gradient at ``(s*h' +
a, s*w' + b, c)``.  The taps of
a phase are every s-th filter row, which a strided view of the filter
(flipped and zero-padded once per call) gives; the phases' order is
reversed in the filters so that the view's strides are positive.  The
output is spread back to ``dI`` by one copy through a 6-D view (``H`` a
multiple of ``s``), or through a temporary and a crop.  Where the
forward convolution's output would not cover every block (rows past the
last window, whose gradient is 0), the layer keeps the gather route.

It does ``s_h * s_w * R' * S' / (R * S)`` times the direct arithmetic
(AlexNet's conv1: 2.1x) on the tensor cores, with no col matrix in memory.
"""
import numpy as np

from ..core import dtypes
from .layer import ConvLayer

#: 16-bit dtypes: their forward convolution is one implicit-GEMM kernel on Hopper
_HALF = (np.dtype(np.float16), dtypes.bfloat16)
#: the most arithmetic the phases may do, as a multiple of the direct
#: convolution's.  H100, fp16, the call as made, against the gather route
#: in the same run (.device/s23_phase_probe.py): AlexNet's conv1 (2.1x)
#: 405 against 668 us, Overfeat's (1.2x) 541 against 743, a 5x5/2 layer
#: with C = 64 (1.4x) 225 against 351; a 3x3/2 layer (4x: padding 1 widens
#: each phase's window to 3 taps) 241 against 196 us (C = 64), 340
#: against 214 (C = 256)
MAX_OVERHEAD = 3.0


class Phases:
    """How one strided layer's data gradient runs as a forward convolution.

    Attributes
    ----------
    source : ConvLayer
        The strided layer.
    fits : bool
        Whether the forward convolution's output covers every block the
        gradient needs.
    taps : tuple of 2 ints
        ``R'`` and ``S'``, the taps of each phase.
    layer : ConvLayer or None
        The forward convolution: E as its input (K channels), ``s_h * s_w * C``
        filters of ``R' x S'`` taps, stride 1; None where its output would
        not cover every block the gradient needs (``fits`` False).
    stride : tuple of 2 ints
        The original layer's strides along H and W.
    rows, cols : int
        Output blocks ``h'`` and ``w'`` the gradient needs (``ceil(H / s)``).
    offsets : tuple of 2 ints
        Where the flipped filter sits in its zero-padded copy, along R and S.
    lengths : tuple of 2 ints
        The padded copy's extent along R and S.
    """

    def __init__(self, layer):
        axes = [_axis(size, taps, pad, stride) for size, taps, pad, stride in
                ((layer.H, layer.R, layer.pad[1], layer.stride[1]),
                 (layer.W, layer.S, layer.pad[2], layer.stride[2]))]
        (taps_h, pad_h, self.rows, lo_h, len_h), (taps_w, pad_w, self.cols, lo_w, len_w) = axes
        self.stride, self.taps = layer.stride[1:], (taps_h, taps_w)
        self.offsets, self.lengths = (lo_h, lo_w), (len_h, len_w)
        self.source = layer
        self.fits = (layer.P + 2 * pad_h - taps_h + 1 >= self.rows
                     and layer.Q + 2 * pad_w - taps_w + 1 >= self.cols)
        self.layer = ConvLayer(layer.dtype, layer.N, layer.K,
                               self.stride[0] * self.stride[1] * layer.C, H=layer.P, W=layer.Q,
                               R=taps_h, S=taps_w, pad_h=pad_h, pad_w=pad_w) if self.fits else None

    @property
    def overhead(self):
        """The forward convolution's arithmetic over the direct one's."""
        s_h, s_w = self.stride
        return s_h * s_w * self.taps[0] * self.taps[1] / (self.source.R * self.source.S)


def _axis(size, taps, pad, stride):
    """One axis: (taps R', padding, blocks needed, filter offset, padded length)."""
    j_min = -((taps - 1 - pad) // stride)
    j_max = (stride - 1 + pad) // stride
    # the convolution pads both sides alike: as far as E's window reaches
    # on either side (taps before j_min are zeros of the filters)
    j_low = min(j_min, -j_max)
    phased_taps = j_max - j_low + 1
    # the filter flipped sits here in its padded copy: tap t of phase
    # (s - 1 - a) is at index (s - 1 - a) + s * t, for every a and t
    offset = stride - taps + pad - stride * j_low
    length = max(stride * phased_taps, offset + taps)
    return phased_taps, -j_low, -(-size // stride), offset, length


def applies(ng, layer):
    """True when ``layer``'s data gradient should run by phases on ``ng``
    (see :func:`plan`)."""
    return plan(ng, layer) is not None


def plan(ng, layer):
    """The :class:`Phases` of ``layer`` where its data gradient should run by
    them on ``ng``, else None: a 2-D layer strided along H or W, without
    dilation, whose forward convolution by phases runs as an implicit GEMM
    (Hopper, 16-bit, K a multiple of 8), covers the whole gradient and does
    at most :data:`MAX_OVERHEAD` times the direct arithmetic."""
    if (layer.D, layer.T) != (1, 1) or layer.stride[0] != 1 or layer.stride[1:] == (1, 1):
        return None
    if layer.dilation != (1, 1, 1) or layer.dtype not in _HALF or layer.K % 8:
        return None
    if getattr(ng, "arch", None) != "sm_90":
        return None
    phases = Phases(layer)
    return phases if phases.fits and phases.overhead <= MAX_OVERHEAD else None


def bprop(ng, phases, F, E, grad_I, alpha=1.0, beta=0.0):
    """``grad_I = alpha * conv^T(E, F) + beta * grad_I`` by ``phases``, on any factory.

    ``E`` and ``grad_I`` must be contiguous (the caller checks).
    """
    layer, fwd = phases.source, phases.layer
    O = ng.empty(fwd.dimO, layer.dtype)  # noqa: E741
    ng.fprop_conv(fwd, E, _phase_filters(ng, phases, F), O)
    s_h, s_w = phases.stride
    size = O.dtype.itemsize
    n_stride, p_stride, q_stride = O.strides[0], O.strides[2], O.strides[3]
    # O as (n, h', w', phase along H (reversed), phase along W (reversed), c)
    blocks = O._view((layer.N, fwd.P, fwd.Q, s_h, s_w, layer.C),
                     (n_stride, p_stride, q_stride, s_w * layer.C * size, layer.C * size, size),
                     O.offset)
    blocks = blocks[:, :phases.rows, :phases.cols, ::-1, ::-1, :].transpose(0, 1, 3, 2, 4, 5)
    full = (phases.rows * s_h, phases.cols * s_w)
    grad = grad_I.reshape(layer.N, layer.H, layer.W, layer.C)
    if full == (layer.H, layer.W):
        _store(grad.reshape(layer.N, phases.rows, s_h, phases.cols, s_w, layer.C), blocks,
               alpha, beta)
        return
    spread = ng.empty((layer.N,) + full + (layer.C,), layer.dtype)
    spread.reshape(layer.N, phases.rows, s_h, phases.cols, s_w, layer.C)[...] = blocks
    _store(grad, spread[:, :layer.H, :layer.W, :], alpha, beta)


def _store(target, value, alpha, beta):
    """``target = alpha * value + beta * target``, one fused assignment."""
    if alpha != 1:
        value = value * alpha
    if beta != 0:
        value = value + target * beta
    target[...] = value


def _phase_filters(ng, phases, F):
    """The forward convolution's filters ``(s_h * s_w * C, 1, R', S', K)``:
    every tap of every phase, zero where it falls outside F."""
    layer, fwd = phases.source, phases.layer
    (lo_r, lo_s), (len_r, len_s) = phases.offsets, phases.lengths
    s_h, s_w = phases.stride
    # taken before the padded copy, which is freed first: the pool hands
    # both the same blocks on the next call, so the forward convolution's
    # filter descriptor keeps its address (no re-encoding)
    filters = ng.empty((s_h, s_w, layer.C, 1, fwd.R, fwd.S, layer.K), layer.dtype)
    padded = ng.zeros((layer.K, len_r, len_s, layer.C), layer.dtype)
    padded[:, lo_r:lo_r + layer.R, lo_s:lo_s + layer.S, :] = F[:, 0, ::-1, ::-1, :]
    k_stride, r_stride, s_stride, c_stride = padded.strides
    taps = padded._view((s_h, s_w, layer.C, 1, fwd.R, fwd.S, layer.K),
                        (r_stride, s_stride, c_stride, 0, s_h * r_stride, s_w * s_stride,
                         k_stride), padded.offset)
    filters[...] = taps
    return filters.reshape(fwd.dimF)


def try_run(gpu, call):
    """Run a bprop ``call`` by phases where that applies (see :func:`applies`);
    return whether it ran.  The decision is kept per layer structure."""
    layer = call.layer
    key = ("phases", layer.key)
    phases = gpu._conv_plans.get(key)
    if phases is None:
        phases = gpu._conv_plans[key] = plan(gpu, layer) or False
    if phases is False or not (call.b.is_contiguous and call.out.is_contiguous):
        return False
    bprop(gpu, phases, call.a, call.b, call.out, call.alpha, call.beta)
    return True

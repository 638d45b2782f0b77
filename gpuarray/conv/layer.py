"""Convolution and pooling layers: one layer's sizes, checked once.

In: cuDNN's parameters -- N (batch), C (input channels), K (filters),
D H W (input depth, height, width), T R S (filter depth, height, width),
padding, strides and dilations -- and a dtype.  Out: a :class:`ConvLayer`
or :class:`PoolLayer` holding the output sizes M P Q (cuDNN's formula
``(D + 2*pad - dil*(T-1) - 1) // str + 1``) and the shapes of its tensors
in the native layout, every bad size refused with a clear error.

Native layout, channel-innermost (the reduction axis of an implicit GEMM
is C, so the tensor cores read it contiguously and a filter tap is one
vector load):

=========== ===================== ======
tensor      shape                 name
=========== ===================== ======
activations ``(N, D, H, W, C)``   NDHWC
filters     ``(K, T, R, S, C)``   KTRSC
outputs     ``(N, M, P, Q, K)``   NDHWC
=========== ===================== ======

Shapes are always 5-D; a 2-D layer has ``D = T = M = 1``.
"""

import numpy as np

from ..core import arguments, dtypes

#: dtypes of convolution and pooling tensors (fp16/bf16 accumulate in fp32)
DTYPES = dtypes.KERNEL_FLOATS
POOL_OPS = ("max", "avg")
#: tensors are indexed with 32-bit integers in the kernels
MAX_ELEMENTS = 2**31 - 1


def _dtype(dtype):
    dt = dtypes.as_dtype(dtype)
    if dt not in DTYPES:
        raise TypeError(f"convolution and pooling support float16, bfloat16 and float32, "
                        f"not {dtypes.name(dt)}")
    return dt


def _output_size(axis, size, pad, extent, stride):
    """One output size by cuDNN's formula; ``axis`` names (in, filter, pad, out)."""
    name, fname, pname, oname = axis
    pad = arguments.integer(pname, pad)
    if pad < 0:
        raise ValueError(f"{pname} must be non-negative, got {pad}")
    if pad >= extent:
        raise ValueError(f"{pname} = {pad} must be smaller than the filter extent "
                         f"{extent} along {fname}")
    out = (size + 2 * pad - extent) // stride + 1
    if out < 1:
        raise ValueError(f"output size {oname} = {out} is smaller than 1: {name} + 2*{pname} "
                         f"= {size + 2 * pad} is smaller than the filter extent {extent}")
    return out


def _check_elements(dims):
    for what, shape in dims.items():
        if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
            raise ValueError(f"{what} of shape {shape} has more than 2**31 - 1 elements")


#: (input, filter, pad, output) names of the spatial axes
_CONV_AXES = (("D", "T", "pad_d", "M"), ("H", "R", "pad_h", "P"), ("W", "S", "pad_w", "Q"))
_POOL_AXES = (("C", "J", "pad_c", "K"),) + _CONV_AXES


class ConvLayer:
    """Sizes of one convolution; made by ``ng.conv_layer`` (see there).

    Attributes
    ----------
    dtype : numpy.dtype
    N, C, K, D, H, W, T, R, S, M, P, Q : int
        cuDNN's names; M P Q are the output depth, height and width.
    pad, stride, dilation : tuple of 3 ints
        Along (depth, height, width).
    dimI, dimF, dimO : tuple of 5 ints
        Shapes of the input ``(N, D, H, W, C)``, the filters
        ``(K, T, R, S, C)`` and the output ``(N, M, P, Q, K)``.
    key : tuple
        The layer's structure: dtype, shapes, padding, strides, dilations.
    """

    def __init__(self, dtype, N, C, K, D=1, H=1, W=1, T=1, R=1, S=1, pad_d=0, pad_h=0,
                 pad_w=0, str_d=1, str_h=1, str_w=1, dil_d=1, dil_h=1, dil_w=1):
        self.dtype = _dtype(dtype)
        self.N, self.C, self.K = (arguments.positive(n, v) for n, v in (("N", N), ("C", C), ("K", K)))
        self.D, self.H, self.W = (arguments.positive(n, v) for n, v in (("D", D), ("H", H), ("W", W)))
        self.T, self.R, self.S = (arguments.positive(n, v) for n, v in (("T", T), ("R", R), ("S", S)))
        self.stride = tuple(arguments.positive(n, v) for n, v in
                            (("str_d", str_d), ("str_h", str_h), ("str_w", str_w)))
        self.dilation = tuple(arguments.positive(n, v) for n, v in
                              (("dil_d", dil_d), ("dil_h", dil_h), ("dil_w", dil_w)))
        self.pad = (pad_d, pad_h, pad_w)
        sizes, taps = (self.D, self.H, self.W), (self.T, self.R, self.S)
        self.M, self.P, self.Q = (
            _output_size(axis, size, pad, dil * (tap - 1) + 1, st)
            for axis, size, tap, pad, st, dil in
            zip(_CONV_AXES, sizes, taps, self.pad, self.stride, self.dilation))
        self.pad = tuple(int(p) for p in self.pad)
        self.dimI = (self.N, self.D, self.H, self.W, self.C)
        self.dimF = (self.K, self.T, self.R, self.S, self.C)
        self.dimO = (self.N, self.M, self.P, self.Q, self.K)
        _check_elements({"the input": self.dimI, "the filter": self.dimF,
                         "the output": self.dimO})
        # everything a kernel plan depends on (plans are recorded per key)
        self.key = (self.dtype, self.dimI, self.dimF, self.pad, self.stride, self.dilation)

    @property
    def flops(self):
        """Floating-point operations of one fprop (bprop and update: the same)."""
        return 2 * self.N * self.K * self.M * self.P * self.Q * self.C * self.T * self.R * self.S

    def __repr__(self):
        return (f"ConvLayer({dtypes.name(self.dtype)}, N={self.N}, C={self.C}, K={self.K}, "
                f"DHW={self.dimI[1:4]}, TRS={self.dimF[1:4]}, MPQ={self.dimO[1:4]}, "
                f"pad={self.pad}, stride={self.stride}, dilation={self.dilation})")


def pointwise(layer):
    """True when a convolution's col matrix is its input itself (1x1x1
    filters, stride 1, no padding): each pass is one plain GEMM."""
    return (layer.T, layer.R, layer.S) == (1, 1, 1) and layer.stride == (1, 1, 1) \
        and layer.pad == (0, 0, 0)


class PoolLayer:
    """Sizes of one pooling layer; made by ``ng.pool_layer`` (see there).

    The window spans J channels and T x R x S positions; strides default to
    the window size (windows that do not overlap).

    Attributes
    ----------
    dtype : numpy.dtype
    op : {"max", "avg"}
    include_padding : bool
        Average pooling divides by the whole window (True) or by the
        elements inside the input (False, the default).
    N, C, D, H, W, J, T, R, S, K, M, P, Q : int
        K is the number of output channels, M P Q the output sizes.
    pad, stride : tuple of 4 ints
        Along (channel, depth, height, width).
    dimI, dimO : tuple of 5 ints
        Shapes of the input ``(N, D, H, W, C)`` and output ``(N, M, P, Q, K)``.
    window : int
        Elements per window, ``J * T * R * S``.
    argmax_dtype : numpy.dtype
        Of the argmax index (uint8 up to 256 elements per window, else int32).
    """

    def __init__(self, dtype, op, N, C, D=1, H=1, W=1, J=1, T=1, R=1, S=1, pad_c=0,
                 pad_d=0, pad_h=0, pad_w=0, str_c=None, str_d=None, str_h=None, str_w=None,
                 include_padding=False):
        self.dtype = _dtype(dtype)
        if not isinstance(op, str) or op not in POOL_OPS:
            raise ValueError(f"pooling op must be 'max' or 'avg', not {op!r}")
        self.op = op
        self.include_padding = bool(include_padding)
        self.N, self.C = arguments.positive("N", N), arguments.positive("C", C)
        self.D, self.H, self.W = (arguments.positive(n, v) for n, v in (("D", D), ("H", H), ("W", W)))
        taps = tuple(arguments.positive(n, v) for n, v in (("J", J), ("T", T), ("R", R), ("S", S)))
        self.J, self.T, self.R, self.S = taps
        strides = (str_c, str_d, str_h, str_w)
        self.stride = tuple(tap if st is None else arguments.positive(name, st)
                            for name, st, tap in zip(("str_c", "str_d", "str_h", "str_w"),
                                                     strides, taps))
        pads = (pad_c, pad_d, pad_h, pad_w)
        sizes = (self.C, self.D, self.H, self.W)
        self.K, self.M, self.P, self.Q = (
            _output_size(axis, size, pad, tap, st)
            for axis, size, pad, tap, st in zip(_POOL_AXES, sizes, pads, taps, self.stride))
        self.pad = tuple(int(p) for p in pads)
        self.window = self.J * self.T * self.R * self.S
        self.argmax_dtype = np.dtype(np.uint8 if self.window <= 256 else np.int32)
        self.dimI = (self.N, self.D, self.H, self.W, self.C)
        self.dimO = (self.N, self.M, self.P, self.Q, self.K)
        _check_elements({"the input": self.dimI, "the output": self.dimO})
        # everything a kernel plan depends on (passes are recorded per key)
        self.key = (self.dtype, self.op, self.include_padding, self.dimI,
                    (self.J, self.T, self.R, self.S), self.stride, self.pad)

    def __repr__(self):
        return (f"PoolLayer({dtypes.name(self.dtype)}, {self.op!r}, N={self.N}, C={self.C}, "
                f"DHW={self.dimI[1:4]}, JTRS={(self.J, self.T, self.R, self.S)}, "
                f"KMPQ={(self.K, self.M, self.P, self.Q)}, pad={self.pad}, "
                f"stride={self.stride})")

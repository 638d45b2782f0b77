"""Convolution and pooling in the factory API: the :class:`ConvFunctions` mixin.

In: layers, tensors in the native layout (see :mod:`~gpuarray.conv.layer`)
and cuDNN-style options.  Out: the output tensor filled in.  Arguments
are checked in :mod:`~gpuarray.conv.call`; the factory's ``_conv`` /
``_pool`` hook runs the checked call (numpy on the CPU; gathers, GEMMs
and pooling kernels on the GPU).  Layout conversions (``to_layout`` /
``from_layout``) are strided copies, so they run on both factories today.
Both factories mix :class:`ConvFunctions` in.
"""
import functools

import numpy as np

from ..core import dtypes, shapes
from ..core.bound import BoundCall
from . import fuse
from .call import CONV_KINDS, bias_call, check_layer, check_tensor, conv_call, pool_call
from .layer import ConvLayer, PoolLayer

#: user layouts to_layout writes: the native axis each of their axes takes
LAYOUTS = {"NCHW": (0, 4, 2, 3), "NCDHW": (0, 4, 1, 2, 3),
           "NHWC": (0, 2, 3, 4), "NDHWC": (0, 1, 2, 3, 4)}


class ConvFunctions:
    """Mixin: convolution and pooling for a factory that implements ``_conv`` and ``_pool``."""

    def conv_layer(self, dtype, N, C, K, D=1, H=1, W=1, T=1, R=1, S=1, pad_d=0, pad_h=0,
                   pad_w=0, str_d=1, str_h=1, str_w=1, dil_d=1, dil_h=1, dil_w=1):
        """A convolution layer: its sizes checked and its output size computed.

        Parameters
        ----------
        dtype : float16, bfloat16 or float32
            Of every tensor of the layer (16-bit types accumulate in fp32).
        N, C, K : int
            Batch size, input channels, output channels (filters).
        D, H, W : int
            Input depth, height, width (D = 1 for a 2-D convolution).
        T, R, S : int
            Filter depth, height, width.
        pad_d, pad_h, pad_w : int
            Zero padding on both sides; smaller than the (dilated) filter extent.
        str_d, str_h, str_w : int
            Strides.
        dil_d, dil_h, dil_w : int
            Dilations (1: dense filters).

        Returns
        -------
        ConvLayer
            Output sizes ``M, P, Q = (D + 2*pad - dil*(T-1) - 1) // str + 1``
            (cuDNN's formula) and ``dimI = (N, D, H, W, C)``,
            ``dimF = (K, T, R, S, C)``, ``dimO = (N, M, P, Q, K)``.

        Raises
        ------
        TypeError
            Unsupported dtype, sizes that are not integers.
        ValueError
            Sizes, strides or dilations below 1, negative padding, padding not
            smaller than the filter extent, an output size below 1.
        """
        return ConvLayer(dtype, N, C, K, D, H, W, T, R, S, pad_d, pad_h, pad_w,
                         str_d, str_h, str_w, dil_d, dil_h, dil_w)

    def pool_layer(self, dtype, op, N, C, D=1, H=1, W=1, J=1, T=1, R=1, S=1, pad_c=0,
                   pad_d=0, pad_h=0, pad_w=0, str_c=None, str_d=None, str_h=None, str_w=None,
                   include_padding=False):
        """A pooling layer over windows of J channels and T x R x S positions.

        Parameters
        ----------
        dtype : float16, bfloat16 or float32
        op : {"max", "avg"}
        N, C, D, H, W : int
            Input sizes, as :meth:`conv_layer`.
        J, T, R, S : int
            Window size along channels (J > 1: maxout), depth, height, width.
        pad_c, pad_d, pad_h, pad_w : int
            Padding, smaller than the window; max pooling ignores it.
        str_c, str_d, str_h, str_w : int, optional
            Strides (default: the window size along the axis).
        include_padding : bool
            Average pooling divides by the whole window, padding included
            (cuDNN's COUNT_INCLUDE_PADDING), or by default only by the
            elements inside the input (COUNT_EXCLUDE_PADDING).

        Returns
        -------
        PoolLayer
            ``dimI = (N, D, H, W, C)``, ``dimO = (N, M, P, Q, K)`` with K the
            number of channel windows; ``argmax_dtype`` for max pooling.

        Raises
        ------
        TypeError, ValueError
            As :meth:`conv_layer`; ValueError for an op other than max / avg.
        """
        return PoolLayer(dtype, op, N, C, D, H, W, J, T, R, S, pad_c, pad_d, pad_h, pad_w,
                         str_c, str_d, str_h, str_w, include_padding)

    def fprop_conv(self, layer, I, F, O, alpha=1.0, beta=0.0, relu=False, bias=None):  # noqa: E741
        """Convolution ``O = relu(alpha * conv(I, F) + bias) + beta * O``.

        ``conv`` is cuDNN's (a cross-correlation):
        ``sum over t, r, s, c of I[n, m*str_d + t*dil_d - pad_d, ..., c] * F[k, t, r, s, c]``.

        Parameters
        ----------
        layer : ConvLayer
        I, F, O : tensors of shapes ``layer.dimI``, ``layer.dimF``, ``layer.dimO``
            All of the layer's dtype.
        alpha, beta : float
            Scale of the convolution and of O's previous value.
        relu : bool
            Clamp negative values (after the bias, before ``beta * O``).
        bias : tensor of shape (K,), optional
            Added per output channel.

        Returns
        -------
        O
        """
        self._conv(conv_call(self, "fprop", layer, I, F, O, alpha, beta, relu, bias))
        return O

    def conv(self, layer, I, F):  # noqa: E741
        """The convolution of :meth:`fprop_conv` as a lazy op-tree node.

        ``O[:] = ng.relu(ng.conv(layer, I, F) * alpha + bias) + O * beta``,
        with ``bias`` a ``(K,)`` tensor, runs as one :meth:`fprop_conv` with
        its epilogue fused; any other expression around it computes the
        convolution into a temporary first.

        Parameters
        ----------
        layer : ConvLayer
        I, F : tensors or expressions of shapes ``layer.dimI``, ``layer.dimF``
            Of the layer's dtype.

        Returns
        -------
        op-tree node of shape ``layer.dimO``
        """
        return fuse.conv_node(self, layer, I, F)

    def bprop_conv(self, layer, F, E, grad_I, alpha=1.0, beta=0.0):
        """Data gradient ``grad_I = alpha * conv^T(E, F) + beta * grad_I``.

        E has the output's shape ``layer.dimO``, grad_I the input's
        ``layer.dimI``; the adjoint of :meth:`fprop_conv` in I.
        """
        self._conv(conv_call(self, "bprop", layer, F, E, grad_I, alpha, beta))
        return grad_I

    def update_conv(self, layer, I, E, grad_F, alpha=1.0, beta=0.0,  # noqa: E741
                    deterministic=True):
        """Filter gradient ``grad_F = alpha * sum over n, m, p, q of I-window x E + beta * grad_F``.

        The adjoint of :meth:`fprop_conv` in F; grad_F has shape ``layer.dimF``.

        Parameters
        ----------
        deterministic : bool
            Repeated calls give bitwise equal results.  No path uses float
            atomics today -- split-K partial sums and the chunks of the
            gather route are added in a fixed order -- so False (which
            would allow them) selects the same kernels.
        """
        if not isinstance(deterministic, (bool, np.bool_)):
            raise TypeError(f"update_conv: deterministic must be True or False, "
                            f"not {type(deterministic).__name__}")
        self._conv(conv_call(self, "update", layer, I, E, grad_F, alpha, beta))
        return grad_F

    def update_bias(self, E, grad_b, O=None, alpha=1.0, beta=0.0):  # noqa: E741
        """Bias gradient ``grad_b = alpha * (E summed over every axis but the last) + beta * grad_b``.

        The gradient of a per-channel bias added to a layer's output (cuDNN's
        ConvolutionBackwardBias).  Given the layer's output O after its ReLU,
        E is first masked in place, ``E[:] = E * (O > 0)``: the ReLU's
        gradient, which the layer's data and filter gradients then read.  On
        the GPU both take one pass over E where the tensors allow
        (:mod:`gpuarray.conv.bias`).

        Parameters
        ----------
        E : tensor (..., K)
            Errors of the layer's output, channels last; float16, bfloat16
            or float32.  Overwritten when O is given.
        grad_b : tensor (K,)
            float16, bfloat16 or float32 (sums are float32 either way).
        O : tensor, optional
            The layer's ReLU output, E's shape and dtype.
        alpha, beta : float
            Scale of the sum and of grad_b's previous value (beta = 0 does
            not read it).

        Returns
        -------
        grad_b
        """
        E, grad_b, O, alpha, beta = bias_call(self, E, grad_b, O, alpha, beta)  # noqa: E741
        return self._bias_grad(E, grad_b, O, alpha, beta)

    def bind_conv(self, kind, layer, a, b, out, alpha=1.0, beta=0.0, relu=False, bias=None):
        """One convolution call, checked and routed once, to run again and again.

        ``run = ng.bind_conv("fprop", layer, I, F, O, relu=True, bias=b)``:
        each ``run()`` then does what ``ng.fprop_conv(layer, I, F, O,
        relu=True, bias=b)`` does, on the tensors' current contents, and
        returns O -- without the call's checks, route decision and argument
        packing, which were done here (on the GPU a run costs the launches).
        A network's layers, calling with the same tensors every step, bind
        their calls (:mod:`gpuarray.nn`).

        Parameters
        ----------
        kind : {"fprop", "bprop", "update"}
            The call of :meth:`fprop_conv`, :meth:`bprop_conv` or :meth:`update_conv`.
        layer, a, b, out : ConvLayer and tensors
            That call's arguments in its order: ``(I, F, O)``, ``(F, E, grad_I)``
            or ``(I, E, grad_F)``.
        alpha, beta : float
        relu : bool
        bias : tensor of shape (K,), optional
            ``relu`` and ``bias`` belong to fprop only.

        Returns
        -------
        BoundCall
            Called with no arguments, it runs the call and returns ``out``.
            It holds the tensors, and on the GPU the call's workspace, until
            it is dropped; a run after a tensor was freed raises.

        Raises
        ------
        ValueError, TypeError
            As the call itself would, here; an unknown ``kind``, or ``relu``
            or ``bias`` outside fprop.
        """
        if kind not in CONV_KINDS:
            raise ValueError(f"bind_conv: kind must be one of {', '.join(map(repr, CONV_KINDS))}, "
                             f"not {kind!r}")
        if kind != "fprop" and (relu or bias is not None):
            raise ValueError(f"bind_conv: relu and bias belong to fprop, not {kind}")
        return self._bind_conv(conv_call(self, kind, layer, a, b, out, alpha, beta, relu, bias))

    def bind_update_bias(self, E, grad_b, O=None, alpha=1.0, beta=0.0):  # noqa: E741
        """One :meth:`update_bias` call, checked once, to run again and again.

        As :meth:`bind_conv`: each run of the returned :class:`BoundCall`
        does what ``ng.update_bias(E, grad_b, O, alpha, beta)`` does (E
        masked in place where O is given) and returns ``grad_b``.
        """
        E, grad_b, O, alpha, beta = bias_call(self, E, grad_b, O, alpha, beta)  # noqa: E741
        full_path = functools.partial(self._bias_grad, E, grad_b, O, alpha, beta)
        return self._bind_bias(E, grad_b, O, alpha, beta, full_path)

    def _bias_grad(self, E, grad_b, O, alpha, beta):  # noqa: E741
        """Run a checked :meth:`update_bias` call."""
        if not self._update_bias(E, grad_b, O, alpha, beta):
            if O is not None:
                E[:] = E * (O > 0)
            values = E if grad_b.dtype.itemsize <= E.dtype.itemsize else self.astype(E, grad_b.dtype)
            total = self.sum(values, axis=tuple(range(E.ndim - 1)))
            grad_b[:] = total * alpha + grad_b * beta if beta else total * alpha
        return grad_b

    def fprop_pool(self, pool, I, O, argmax=None):  # noqa: E741
        """Pool I ``(N, D, H, W, C)`` into O ``(N, M, P, Q, K)``.

        Max pooling ignores padding; average pooling follows
        ``pool.include_padding``.  For max pooling, ``argmax`` (shape
        ``pool.dimO``, dtype ``pool.argmax_dtype``) receives the flat
        index of each window's maximum, ``((j*T + t)*R + r)*S + s``
        (first one on ties), so :meth:`bprop_pool` need not recompute it.
        """
        if not self._replay_pool("fprop", pool, I, O, None, argmax):
            self._pool(pool_call(self, "fprop", pool, I, O, argmax=argmax))
        return O

    def bprop_pool(self, pool, I, E, grad_I, argmax=None):  # noqa: E741
        """Gradient of pooling: ``grad_I`` (shape ``pool.dimI``) from E (``pool.dimO``).

        Max pooling routes each error to its window's maximum, read from
        ``argmax`` when given (as :meth:`fprop_pool` filled it), else found
        again in I; average pooling spreads it over the window.
        Overlapping windows add up; grad_I is overwritten.
        """
        if not self._replay_pool("bprop", pool, I, grad_I, E, argmax):
            self._pool(pool_call(self, "bprop", pool, I, grad_I, errors=E, argmax=argmax))
        return grad_I

    def to_layout(self, X, layout="NCHW"):
        """A copy of the native tensor X in a user layout.

        Parameters
        ----------
        X : tensor (N, D, H, W, C)
            Activations, or filters (K, T, R, S, C), which come out as KCRS.
        layout : {"NCHW", "NCDHW", "NHWC", "NDHWC"}
            The 4-D layouts need D = 1.
        """
        order = LAYOUTS.get(layout) if isinstance(layout, str) else None
        if order is None:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
        x = check_tensor(self, X, "X", None, None, "to_layout")
        if x.ndim != 5:
            raise ValueError(f"to_layout: X must be a 5-D tensor in the native layout "
                             f"(N, D, H, W, C), got shape {shapes.shape_str(x.shape)}")
        if len(order) == 4:
            if x.shape[1] != 1:
                raise ValueError(f"to_layout: {layout} needs D = 1, got shape "
                                 f"{shapes.shape_str(x.shape)}; use {layout[:2]}D{layout[2:]}")
            x = x[:, 0]
            order = tuple(a - (a > 1) for a in order)
        return self.evaluate(x.transpose(*order))

    def from_layout(self, X, layer):
        """A native-layout copy of X, given in NCHW (4-D) or NCDHW (5-D).

        X must be one of the layer's tensors in that layout: the input
        ``(N, C, [D,] H, W)``, the output ``(N, K, [M,] P, Q)`` or, for a
        :class:`ConvLayer`, the filters ``(K, C, [T,] R, S)``.
        """
        layer = check_layer(layer, (ConvLayer, PoolLayer), "from_layout")
        x = check_tensor(self, X, "X", None, None, "from_layout")
        if x.dtype != layer.dtype:
            raise TypeError(f"from_layout: X must be {dtypes.name(layer.dtype)} as the layer "
                            f"expects, not {dtypes.name(x.dtype)}")
        if x.ndim == 4:
            x = x.reshape(x.shape[:2] + (1,) + x.shape[2:])
        native = (x.shape[0],) + x.shape[2:] + (x.shape[1],) if x.ndim == 5 else None
        dims = [layer.dimI, layer.dimO] + ([layer.dimF] if isinstance(layer, ConvLayer) else [])
        if native not in dims:
            wanted = " or ".join(shapes.shape_str((d[0], d[4]) + d[1:4]) for d in dims)
            raise ValueError(f"from_layout: X has shape {shapes.shape_str(X.shape)}; the "
                             f"layer's tensors in NCDHW are {wanted} (NCHW: without the D axis)")
        return self.evaluate(x.transpose(0, 2, 3, 4, 1))

    def _assign_products(self, target, tree):
        if fuse.holds_convolution(tree):
            fuse.execute(self, target, tree)
        else:
            super()._assign_products(target, tree)

    def _conv(self, call):
        raise NotImplementedError

    def _bind_conv(self, call):
        """The :class:`BoundCall` of a checked convolution (the factory may
        settle its route and record its launches here)."""
        return BoundCall(functools.partial(self._conv, call), call.out,
                         f"{call.kind}_conv of {call.layer}")

    def _bind_bias(self, E, grad_b, O, alpha, beta, full_path):  # noqa: E741
        """The :class:`BoundCall` of a checked bias gradient; ``full_path`` runs it."""
        return BoundCall(full_path, grad_b, f"update_bias of {E.shape[-1]} channels")

    def _pool(self, call):
        raise NotImplementedError

    def _update_bias(self, E, grad_b, O, alpha, beta):  # noqa: E741
        """Run a checked bias gradient on the factory's own kernels; False
        where it has none for these tensors (the op-trees run instead)."""
        return False

    def _replay_pool(self, kind, pool, inputs, out, errors, argmax):
        """Run a recorded pooling pass of this situation (where the factory
        records them); False when there is none and the call must be checked."""
        return False

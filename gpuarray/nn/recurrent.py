"""Recurrent layers for networks: RNN, GRU and LSTM over ``ng.fprop_rnn``.

In: a sequence ``(T, N, I)`` (time first, as torch's default).  Out: the
hidden states ``(T, N, H)``; in bprop the input gradient and the
gradients of the three parameters.  The input projection of every
timestep is ONE GEMM (``(T*N, I) @ W_ih.T`` with ``b_ih`` in its
epilogue), then the recurrent layer runs on the projected sequence; bprop
runs ``bprop_rnn`` and ``update_rnn``, then two GEMMs and a column sum for
the projection.  Initial states are zeros; the final ones are kept in
``hy`` (and ``cy``).

Parameters, named as torch's: ``W_ih`` ``(G*H, I)``, ``b_ih`` ``(G*H,)``
and ``W_hh`` ``(G*H, H + 1)``, torch's ``weight_hh`` with ``bias_hh`` as
its last column (the layout ``ng.fprop_rnn`` takes).
"""
import numpy as np

from ..core import shapes
from .layer import F32, Layer, rows


class Recurrent(Layer):
    """A recurrent layer of ``mode`` ("relu", "tanh", "gru" or "lstm") and ``hidden`` units.

    Parameters
    ----------
    mode : str
    hidden : int
    name : str, optional
    path : {None, "persistent", "gemm-loop"}
        How the GPU runs the recurrence (``ng.rnn_layer``'s argument; None
        takes the persistent kernels where they fit).
    """

    kind = "rnn"

    def __init__(self, mode, hidden, name=None, path=None):
        super().__init__(name)
        self.mode, self.hidden, self.path = mode, hidden, path
        self.layer = self.W_ih = self.b_ih = self.W_hh = None

    def _configure(self, in_shape):
        if len(in_shape) != 3:
            raise ValueError(f"{self.label}: takes a sequence (T, N, features), got shape "
                             f"{shapes.shape_str(in_shape)}")
        T, N, inputs = in_shape
        try:
            self.layer = self.ng.rnn_layer(self.dtype, self.mode, self.hidden, N, T, inputs,
                                           path=self.path)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self.label}: {e}") from None
        GH, H = self.layer.gates * self.hidden, self.hidden
        # torch initialises every RNN weight and bias from U(-1/sqrt(H), 1/sqrt(H))
        self.W_ih = self.parameter("W_ih", (GH, inputs), H)
        self.b_ih = self.parameter("b_ih", (GH,), H)
        self.W_hh = self.parameter("W_hh", (GH, H + 1), H)
        return (T, N, H)

    def _allocate(self):
        ng, L = self.ng, self.layer
        # the input projection's fp32 sums, unrounded (as cuDNN keeps them): in
        # a 16-bit layer their rounding flipped ReLUs near 0, and the gradients
        # erred 23x cuDNN's (benchmarks/validate_rnn.py, ReLU H = 136, N = 64)
        self.projected = ng.empty(L.x_shape, F32)
        self.reserve = ng.empty(L.reserve_shape, F32)
        self.hy = ng.empty(L.state_shape, self.dtype)
        self.cy = ng.empty(L.state_shape, self.dtype) if self.mode == "lstm" else None
        self.dprojected = ng.empty(L.x_shape, self.dtype)

    @property
    def flops(self):
        """Floating-point operations of one fprop: the projection and the recurrence."""
        T, N, inputs = self.in_shape
        return 2 * T * N * self.layer.gates * self.hidden * inputs + self.layer.flops

    def _fprop(self, x):
        ng = self.ng
        ng.dot(rows(x), self.W_ih.value.T, rows(self.projected), bias=self.b_ih.value)
        extra = {"cy": self.cy} if self.cy is not None else {}
        ng.fprop_rnn(self.layer, self.projected, self.W_hh.value, self.output, hy=self.hy,
                     reserve=self.reserve if self.training else None, **extra)
        return self.output

    def _bprop(self, grad):
        ng, L = self.ng, self.layer
        if not self.training:
            raise RuntimeError(f"{self.label}: bprop needs a training-mode fprop (the reserve)")
        ng.bprop_rnn(L, self.W_hh.value, self.output, grad, self.dprojected,
                     reserve=self.reserve)
        ng.update_rnn(L, self.projected, self.output, self.W_hh.grad, reserve=self.reserve)
        d2 = rows(self.dprojected)
        ng.dot(d2.T, rows(self.x), self.W_ih.grad)
        self.b_ih.grad.reshape(1, L.gates * self.hidden)[:] = ng.sum(d2, axis=0, keepdims=True)
        if self.input_grad is None:
            return None
        ng.dot(d2, self.W_ih.value, rows(self.input_grad))
        return self.input_grad


class RNN(Recurrent):
    """Elman RNN: ``h = act(W_ih x + b_ih + W_hh h + b_hh)``, act "tanh" (default) or "relu"."""

    def __init__(self, hidden, nonlinearity="tanh", name=None, path=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', not {nonlinearity!r}")
        super().__init__(nonlinearity, hidden, name, path)


class GRU(Recurrent):
    """Gated recurrent unit, torch's equations (gates r, z, n)."""

    kind = "gru"

    def __init__(self, hidden, name=None, path=None):
        super().__init__("gru", hidden, name, path)


class LSTM(Recurrent):
    """Long short-term memory, torch's equations (gates i, f, g, o)."""

    kind = "lstm"

    def __init__(self, hidden, name=None, path=None):
        super().__init__("lstm", hidden, name, path)


def as_torch(layer):
    """The layer's parameters as torch's names and shapes, host numpy arrays."""
    H = layer.hidden
    w_hh = layer.W_hh.value.get()
    return {"weight_ih_l0": layer.W_ih.value.get(), "bias_ih_l0": layer.b_ih.value.get(),
            "weight_hh_l0": np.ascontiguousarray(w_hh[:, :H]),
            "bias_hh_l0": np.ascontiguousarray(w_hh[:, H])}

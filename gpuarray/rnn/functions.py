"""Recurrent layers in the factory API: the :class:`RNNFunctions` mixin.

In: an :class:`~gpuarray.rnn.layer.RNNLayer`, tensors of its shapes and
the reserve.  Out: ``Y`` and the final states (``fprop_rnn``), the input
and initial-state gradients (``bprop_rnn``), the weight gradient
(``update_rnn``).  Each call checks its arguments first, then runs the
layer's path: on the GPU, one launch of the persistent kernels
(:mod:`gpuarray.rnn.persistent`) where they fit; else the GEMM loop, per
timestep one fp32 GEMM with the recurrent weights (bias in its epilogue)
and the step's fused gate kernels (:mod:`gpuarray.rnn.cell`) -- on the CPU
factory this is the numpy reference.  Scratch (an fp32 copy of the
weights, one step's values, the published states) comes from the
factory's memory pool, so repeated calls allocate nothing new on the
device.
"""
import numpy as np

from ..core import dtypes, shapes
from ..core.array import Tensor
from . import cell
from .layer import RNNLayer

F32 = np.dtype(np.float32)


class RNNFunctions:
    """Mixin: ``rnn_layer``, ``fprop_rnn``, ``bprop_rnn``, ``update_rnn``."""

    #: whether this factory has the persistent kernels (the GPU factory does)
    runs_persistent_rnn = False

    def _persistent_rnn_plans(self, layer):
        """The persistent kernels' plans for ``layer``, or None (this factory has none)."""
        return None

    def _persistent(self, layer):
        return self.runs_persistent_rnn and layer.plans is not None

    def _run_persistent_rnn(self, direction, layer, *tensors):
        """Queue the persistent kernel of ``direction`` (a factory that has them)."""
        raise NotImplementedError(f"{self!r} has no persistent recurrent kernels")

    def rnn_layer(self, dtype, mode, hidden, batch, seq_len, input_size=None, path=None):
        """A recurrent layer's sizes (see :mod:`gpuarray.rnn.layer` for the layouts).

        Parameters
        ----------
        dtype : float16, bfloat16 or float32
            Of X, W, Y and the states (the math and the reserve are fp32).
        mode : {"relu", "tanh", "gru", "lstm"}
        hidden, batch, seq_len : int
            H, N, T.
        input_size : int, optional
            Of the unprojected input (recorded for layers built on this one).
        path : {None, "persistent", "gemm-loop"}
            How the GPU runs the layer: None takes the persistent kernels
            where they fit (H a multiple of 8, the weights within shared
            memory), else the GEMM loop; a name insists on that path
            ("persistent" raises ValueError where it cannot run).

        Returns
        -------
        RNNLayer
            With ``layer.path`` saying which path the calls take.
        """
        layer = RNNLayer(dtype, mode, hidden, batch, seq_len, input_size)
        layer.choose_path(self._persistent_rnn_plans(layer), path, self)
        return layer

    def fprop_rnn(self, layer, X, W, Y, h0=None, c0=None, hy=None, cy=None, reserve=None):
        """Run the layer over the sequence: ``Y[t] = h_t``.

        Parameters
        ----------
        layer : RNNLayer
        X : tensor (T, N, G*H)
            The projected input, biases included (cuDNN's SKIP_INPUT), in the
            layer's dtype or in float32: a 16-bit layer given float32 adds it
            unrounded, as cuDNN adds its own projection's fp32 sums (rounding
            it to 16 bits first can flip a ReLU where the sum is near 0).
        W : tensor (G*H, H + 1)
            Recurrent weights and, last column, the recurrent bias.
        Y : tensor (T, N, H)
            Receives the hidden states.
        h0, c0 : tensor (N, H), optional
            Initial hidden (and LSTM cell) state; zeros when not given.
        hy, cy : tensor (N, H), optional
            Receive the final states.
        reserve : float32 tensor of ``layer.reserve_shape``, optional
            Filled for ``bprop_rnn`` and ``update_rnn`` (training).

        Returns
        -------
        Y
        """
        c = _Checker(self, layer, "fprop_rnn")
        X, W, Y = c.projected(X), c.io("W", W, layer.weight_shape), c.io("Y", Y, layer.y_shape)
        h0, c0, hy, cy = (c.state(n, t) for n, t in (("h0", h0), ("c0", c0), ("hy", hy),
                                                     ("cy", cy)))
        reserve = c.reserve(reserve, required=False)
        _lstm_only(layer, c0=c0, cy=cy)
        if self._persistent(layer):
            self._run_persistent_rnn("fprop", layer, X, W, Y, h0, c0, hy, cy, reserve)
            return Y
        h_last, c_last = self._run_forward(layer, X, W, Y, h0, c0, reserve)
        if hy is not None:
            hy[:] = h_last
        if cy is not None:
            cy[:] = c_last
        return Y

    def _run_forward(self, layer, X, W, Y, h0, c0, reserve):
        """The loop over the timesteps; returns the last step's h and c (fp32 views).

        Without a reserve (inference), two steps' worth of scratch alternate:
        a step reads the previous one's values while writing its own."""
        H, mode = layer.hidden, layer.mode
        R, b = _weights(self, layer, W)
        steps = reserve if reserve is not None else self.empty(
            (2,) + layer.reserve_shape[1:], F32)
        rec = self.empty((layer.batch, layer.gates * H), F32)
        h_prev, extra_prev = _state(self, h0, layer), _state(self, c0, layer)
        for t in range(layer.seq_len):
            step = steps[t] if reserve is not None else steps[t % 2]
            gates, h, extra, _ = (s[0] for s in layer.slots(step[None]))
            self.dot(h_prev, R.T, rec, bias=b)
            cell.forward(self, mode, H, X[t], rec, h_prev, extra_prev, gates, h, extra)
            Y[t] = h
            h_prev, extra_prev = h, extra
        return h_prev, extra_prev

    def bprop_rnn(self, layer, W, Y, dY, dX, dh0=None, dhy=None, reserve=None, h0=None,
                  c0=None, dc0=None, dcy=None):
        """Gradients of the projected input and of the initial states.

        Parameters
        ----------
        layer : RNNLayer
        W : tensor (G*H, H + 1)
        Y : tensor (T, N, H)
            The forward output (its values are read from the reserve).
        dY : tensor (T, N, H)
            Gradient of Y.
        dX : tensor (T, N, G*H)
            Receives the gradient of X.
        dh0, dc0 : tensor (N, H), optional
            Receive the gradients of h0 (and c0).
        dhy, dcy : tensor (N, H), optional
            Gradients of the final states, added to the last step's.
        h0, c0 : tensor (N, H), optional
            The initial states the forward pass was given (zeros when not).
        reserve : float32 tensor of ``layer.reserve_shape``
            As ``fprop_rnn`` filled it; receives the recurrent
            pre-activations' gradients for ``update_rnn``.

        Returns
        -------
        dX
        """
        c = _Checker(self, layer, "bprop_rnn")
        W = c.io("W", W, layer.weight_shape)
        c.io("Y", Y, layer.y_shape)
        dY, dX = c.io("dY", dY, layer.y_shape), c.io("dX", dX, layer.x_shape)
        dh0, dhy, dc0, dcy, h0, c0 = (
            c.state(n, t) for n, t in (("dh0", dh0), ("dhy", dhy), ("dc0", dc0), ("dcy", dcy),
                                       ("h0", h0), ("c0", c0)))
        reserve = c.reserve(reserve, required=True)
        _lstm_only(layer, dc0=dc0, dcy=dcy, c0=c0)
        if self._persistent(layer):
            self._run_persistent_rnn("bprop", layer, W, dY, dX, dh0, dc0, dhy, dcy, h0, c0,
                                     reserve)
            return dX
        R, _ = _weights(self, layer, W, bias=False)
        gates, hs, extras, drecs = layer.slots(reserve)
        N, H = layer.batch, layer.hidden
        dh_next, dc = _state(self, dhy, layer), _state(self, dcy, layer)
        dh = self.empty((N, H), F32)
        initial = _state(self, h0, layer), _state(self, c0, layer)
        for t in reversed(range(layer.seq_len)):
            dh[:] = dY[t] + dh_next
            h_prev, extra_prev = (hs[t - 1], extras[t - 1]) if t else initial
            bypass = cell.backward(self, layer.mode, H, dh, gates[t], hs[t], extras[t], h_prev,
                                   extra_prev, dc, drecs[t], dX[t])
            if bypass is None:
                self.dot(drecs[t], R, dh_next)
            else:
                dh_next[:] = bypass
                self.dot(drecs[t], R, dh_next, beta=1.0)
        if dh0 is not None:
            dh0[:] = dh_next
        if dc0 is not None:
            dc0[:] = dc
        return dX

    def update_rnn(self, layer, X, Y, dW, reserve=None, h0=None):
        """Weight gradient ``dW = sum over t of drec_t^T [h_{t-1}, 1]`` (overwritten).

        Parameters
        ----------
        layer : RNNLayer
        X, Y : tensors (T, N, G*H), (T, N, H)
            The forward pass's input (the layer's dtype or float32) and output
            (checked; the values used are the reserve's).
        dW : tensor (G*H, H + 1)
            Receives the recurrent weights' and bias's gradients.
        reserve : float32 tensor of ``layer.reserve_shape``
            As ``bprop_rnn`` left it.
        h0 : tensor (N, H), optional
            The forward pass's initial state (zeros when not given).

        Returns
        -------
        dW
        """
        c = _Checker(self, layer, "update_rnn")
        c.projected(X)
        c.io("Y", Y, layer.y_shape)
        dW = c.io("dW", dW, layer.weight_shape)
        h0 = c.state("h0", h0)
        reserve = c.reserve(reserve, required=True)
        T, N, H, GH = layer.seq_len, layer.batch, layer.hidden, layer.gates * layer.hidden
        _, hs, _, drecs = layer.slots(reserve)
        previous = self.empty((T * N, H), F32)
        previous[:N] = h0 if h0 is not None else 0.0
        if T > 1:
            previous[N:] = hs[:-1].reshape(((T - 1) * N, H))
        rows = drecs.reshape((T * N, GH))
        # a 16-bit layer's product on TF32 tensor cores (10 mantissa bits, as
        # its fp16 storage has; cuDNN's rounds the operands to 16 bits): the
        # exact fp32 GEMM was the slowest kernel of an LSTM's training step
        precision = "tf32" if layer.dtype.itemsize == 2 else None
        self.dot(rows.T, previous, dW[:, :H], precision=precision)
        dW[:, H].reshape((1, GH))[:] = self.sum(rows, axis=0, keepdims=True)
        return dW


def _weights(ng, layer, W, bias=True):
    """fp32 copies of the recurrent weights (G*H, H) and, with ``bias``, the bias
    (G*H,) (else None: the backward pass has no use for it)."""
    H = layer.hidden
    R = ng.empty((layer.gates * H, H), F32)
    R[:] = W[:, :H]
    if not bias:
        return R, None
    b = ng.empty((layer.gates * H,), F32)
    b[:] = W[:, H]
    return R, b


def _state(ng, t, layer):
    """A state (N, H) in fp32: a copy of ``t``, or zeros."""
    out = ng.zeros(layer.state_shape, F32) if t is None else ng.empty(layer.state_shape, F32)
    if t is not None:
        out[:] = t
    return out


def _lstm_only(layer, **states):
    """Cell states given to a layer that has none: a ValueError naming them."""
    for name, t in states.items():
        if t is not None and layer.mode != "lstm":
            raise ValueError(f"{name} is the LSTM's cell state; a {layer.mode!r} layer has none")


class _Checker:
    """Checks of one call's arguments, raising with the call's name."""

    def __init__(self, ng, layer, what):
        if not isinstance(layer, RNNLayer):
            raise TypeError(f"{what} needs an RNNLayer (from ng.rnn_layer), "
                            f"not {type(layer).__name__}")
        self.ng, self.layer, self.what = ng, layer, what

    def io(self, name, t, shape, dtype=None):
        dtype = self.layer.dtype if dtype is None else dtype
        if not isinstance(t, Tensor):
            raise TypeError(f"{self.what}: {name} must be a tensor, not {type(t).__name__}")
        if t.backend is not self.ng:
            raise ValueError(f"{self.what}: {name} belongs to a different factory "
                             f"({t.backend!r}, not {self.ng!r}); copy it over first")
        if t.dtype != dtype:
            raise TypeError(f"{self.what}: {name} must be {dtypes.name(dtype)}, "
                            f"not {dtypes.name(t.dtype)}")
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"{self.what}: {name} has shape {shapes.shape_str(t.shape)}, "
                             f"but the layer expects {shapes.shape_str(shape)}")
        return t

    def projected(self, X):
        """X, the projected input: in the layer's dtype, or float32."""
        allowed = {self.layer.dtype, F32}
        if isinstance(X, Tensor) and X.dtype not in allowed:
            names = " or ".join(sorted(dtypes.name(d) for d in allowed))
            raise TypeError(f"{self.what}: X must be {names}, not {dtypes.name(X.dtype)}")
        return self.io("X", X, self.layer.x_shape, X.dtype if isinstance(X, Tensor) else None)

    def state(self, name, t):
        return None if t is None else self.io(name, t, self.layer.state_shape)

    def reserve(self, t, required):
        if t is None:
            if required:
                raise ValueError(f"{self.what} needs the reserve that fprop_rnn filled "
                                 f"(float32, shape {shapes.shape_str(self.layer.reserve_shape)})")
            return None
        self.io("reserve", t, self.layer.reserve_shape, F32)
        if not t.is_contiguous or t.offset % 16:
            raise ValueError(f"{self.what}: the reserve must be a contiguous tensor of its own "
                             "(16-byte aligned, as ng.empty makes), not a view")
        return t

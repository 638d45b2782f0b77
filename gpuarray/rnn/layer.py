"""A recurrent layer's sizes, checked once: ``ng.rnn_layer(dtype, mode, hidden, batch, seq_len)``.

In: the mode (``"relu"``, ``"tanh"``, ``"gru"``, ``"lstm"``), the hidden
size H, the batch N, the sequence length T and a dtype.  Out: an
:class:`RNNLayer` holding the shapes of every tensor of the calls and of
the reserve, which the forward pass fills for the backward ones.

The input mode is cuDNN's SKIP_INPUT: ``X`` holds the input already
projected, ``(T, N, G*H)`` with G the mode's gates (1, 3 for GRU, 4 for
LSTM), biases included.  ``W`` is ``(G*H, H + 1)``: the recurrent weights
(torch's ``weight_hh``) and, as its last column, the recurrent bias
(``bias_hh``), gates in cuDNN's (and torch's) order -- LSTM i, f, g, o;
GRU r, z, n.  ``Y`` is ``(T, N, H)``; states ``h0``, ``hy`` (and the
LSTM's ``c0``, ``cy``) are ``(N, H)``.

The reserve is fp32, ``(T, N, R)`` with R = 2*G*H + 2*H per position:
the gates after their nonlinearity, the hidden state h (fp32), one more
H-wide value (the LSTM's cell state c, the GRU's ``W_hn h + b_hn``), and
the gradients of the recurrent pre-activations, which ``bprop_rnn``
writes and ``update_rnn`` reads.
"""
from ..core import arguments, dtypes

MODES = {"relu": 1, "tanh": 1, "gru": 3, "lstm": 4}
DTYPES = dtypes.KERNEL_FLOATS


class RNNLayer:
    """Sizes of one recurrent layer; made by ``ng.rnn_layer`` (see there).

    Attributes
    ----------
    dtype : numpy.dtype
    mode : {"relu", "tanh", "gru", "lstm"}
    hidden, batch, seq_len, gates : int
        H, N, T and G (gates per step).
    input_size : int or None
        Of the unprojected input (for the ``gpuarray.nn`` layers); the
        calls take X projected, ``(T, N, G*H)``.
    x_shape, weight_shape, y_shape, state_shape, reserve_shape : tuple
    reserve_bytes, workspace_bytes : int
        The reserve's size; 0 for the workspace, which the calls do not
        take: their scratch (fp32 states, the persistent kernels' published
        h and barrier counter) comes from the factory's memory pool, so
        repeated calls allocate nothing new on the device.
    path : str
        How the calls run on the GPU: ``"persistent"``, one launch for all
        timesteps with the weights held in shared memory
        (:mod:`gpuarray.rnn.persistent`), or ``"gemm-loop"``, a GEMM and
        fused gate kernels per step -- the fallback where the weights do
        not fit on chip or H is not a multiple of 8, and always on the CPU
        factory (the numpy reference).
    plans : tuple or None
        The persistent kernels' forward and backward plans; the forward's
        ``cluster`` is nonzero where it runs in thread-block clusters
        (:class:`gpuarray.rnn.persistent.ClusterPlan`).
    """

    def __init__(self, dtype, mode, hidden, batch, seq_len, input_size=None):
        dt = dtypes.as_dtype(dtype)
        if dt not in DTYPES:
            raise TypeError(f"recurrent layers run in float16, bfloat16 or float32, "
                            f"not {dtypes.name(dt)}")
        if not isinstance(mode, str) or mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}")
        self.dtype, self.mode, self.gates = dt, mode, MODES[mode]
        self.hidden = arguments.positive("hidden", hidden)
        self.batch = arguments.positive("batch", batch)
        self.seq_len = arguments.positive("seq_len", seq_len)
        self.input_size = None if input_size is None else arguments.positive("input_size", input_size)
        T, N, H, G = self.seq_len, self.batch, self.hidden, self.gates
        self.x_shape = (T, N, G * H)
        self.weight_shape = (G * H, H + 1)
        self.y_shape = (T, N, H)
        self.state_shape = (N, H)
        self.reserve_shape = (T, N, 2 * G * H + 2 * H)
        self.reserve_bytes = 4 * T * N * (2 * G * H + 2 * H)
        self.workspace_bytes = 0
        self.path, self.plans = "gemm-loop", None

    def choose_path(self, plans, path, factory):
        """Take the persistent kernels' ``plans`` (None where they cannot run) or
        the GEMM loop: ``path`` None picks the first that runs, else insists."""
        if path not in (None, "persistent", "gemm-loop"):
            raise ValueError(f"path must be 'persistent' or 'gemm-loop' (or None: the fastest "
                             f"that runs), not {path!r}")
        if path == "persistent" and plans is None:
            why = ("the hidden size is not a multiple of 8" if self.hidden % 8 else
                   "the weights do not fit in shared memory")
            raise ValueError(f"{factory!r} cannot run this layer persistently: "
                             f"{why if factory.runs_persistent_rnn else 'it has no such kernels'}")
        if path != "gemm-loop" and plans is not None:
            self.path, self.plans = "persistent", plans

    def slots(self, reserve):
        """The reserve's parts, each ``(T, N, width)``: gates, h, extra, dgates."""
        G, H = self.gates * self.hidden, self.hidden
        return (reserve[:, :, :G], reserve[:, :, G:G + H], reserve[:, :, G + H:G + 2 * H],
                reserve[:, :, G + 2 * H:])

    @property
    def flops(self):
        """Floating-point operations of the recurrent products of one forward pass."""
        return 2 * self.seq_len * self.batch * self.gates * self.hidden * self.hidden

    def __repr__(self):
        return (f"RNNLayer({dtypes.name(self.dtype)}, {self.mode!r}, hidden={self.hidden}, "
                f"batch={self.batch}, seq_len={self.seq_len}, path={self.path!r})")

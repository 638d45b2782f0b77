"""The persistent recurrent kernels (kernels/rnn_persist.cu): plan, then launch.

In: an :class:`~gpuarray.rnn.layer.RNNLayer` and the GPU factory (its
multiprocessor count and shared-memory limit).  Out: a :class:`Plan` per
direction -- hidden units per block, grid, the shared-memory layout, the
column chunk -- or None where the weights do not fit on chip; and
``forward`` / ``backward``, which queue one cooperative launch each.

Each block keeps G*U rows (forward) or U columns (backward) of the
recurrent weights in shared memory, in the layer's dtype, for all T
steps; U = ceil(H / multiprocessors), one block per multiprocessor.  The
rest of shared memory stages the previous step's state, N rows of KC
columns at a time.  A layer fits when the weights plus a 128-column
chunk fit the per-block limit (227 KB on H100): at N = 4, up to H = 1280
for an fp32 LSTM (1792 in 16 bits), 1536 for a GRU (2048), 2560 for a
plain RNN (3584).
"""
import struct

import numpy as np

from ..cuda import driver

STEM = "rnn_persist"
THREADS = 256
#: columns a lane group walks per pass (32 lanes x 4): the chunk's granule
GRANULE = 128
#: RnnArgs of kernels/rnn_persist.cu: 16 pointers, then T N H U KC, the
#: shared-memory layout (weights' bytes, six float offsets), the tensor-core flag
#: and whether X is fp32
ARGS = struct.Struct("<16Q14i")

_TYPE_NAME = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def _round4(n):
    return -(-n // 4) * 4


class Plan:
    """One direction's launch: grid, units per block, shared-memory layout.

    Parameters
    ----------
    layer : RNNLayer
    forward : bool
        The forward kernel's plan, else the backward's.
    sms, smem_limit : int
        Multiprocessors, and the dynamic shared memory a block may have.
    tensor_cores : bool, optional
        Force the products onto tensor cores (16-bit layers with H a
        multiple of 64 only) or off them, as benchmarks compare the two; by
        default, on them where N >= 8 too.

    Attributes
    ----------
    U, grid, KC, smem : int
        Hidden units per block, blocks, staged columns per chunk, bytes of
        dynamic shared memory.
    tensor_cores : bool
        Whether the products run on tensor cores (mma.sync: 16-bit layers
        with H a multiple of 64 and batches of 8 or more), reading the state
        published in the layer's dtype; else on fp32 FMAs, reading it in fp32.
    layout : tuple of int
        ``w_bytes, off_bias, off_v, off_acc, off_h, off_c, off_byp`` as the
        kernel's RnnArgs takes them.
    """

    def __init__(self, layer, forward, sms, smem_limit, tensor_cores=None):
        G, H, N = layer.gates, layer.hidden, layer.batch
        # at N = 4 the FMAs measured faster (H200: ReLU H = 2048 4.0 against
        # 5.6 us a step forward), at N = 8 the tensor cores (LSTM H = 1024
        # 4.8 against 7.1)
        if tensor_cores is None:
            tensor_cores = layer.dtype.itemsize == 2 and H % 64 == 0 and N >= 8
        self.tensor_cores = tensor_cores
        self.U = -(-H // sms)
        self.grid = -(-H // self.U)
        rows, L = (G * self.U, H) if forward else (self.U, G * H)
        w_bytes = -(-rows * L * layer.dtype.itemsize // 16) * 16
        own = _round4(self.U * N)
        # float arrays besides the staged columns: bias, acc, h, c, bypass
        sizes = ([_round4(rows), _round4(rows * N), own, own, 0] if forward
                 else [0, _round4(rows * N), 0, own, own])
        free = (smem_limit - w_bytes) // 4 - sum(sizes)
        # a staged element: fp32, or the layer's dtype on tensor cores, whose
        # rows lie KC + 8 elements apart (kernels/rnn_persist.cu, matvec_mma)
        unit, pad = (layer.dtype.itemsize, 8) if self.tensor_cores else (4, 0)

        def staged(kc):
            return _round4(-(-N * (kc + pad) * unit // 4))

        KC = L if staged(L) <= free else (4 * free // (N * unit) - pad) // GRANULE * GRANULE
        self.fits = KC >= min(L, GRANULE)
        self.KC = max(KC, 4)
        bias, acc, h, c, byp = sizes
        offsets = np.cumsum([0, bias, staged(self.KC), acc, h, c])
        self.layout = (w_bytes, *(int(o) for o in offsets))
        self.smem = w_bytes + 4 * int(offsets[-1] + byp)


def plans(layer, sms, smem_limit):
    """The forward and backward plans of ``layer``, or None where it cannot run
    persistently (H not a multiple of 8, or weights too large for shared memory)."""
    if layer.hidden % 8:
        return None
    forward, backward = (Plan(layer, d, sms, smem_limit) for d in (True, False))
    return (forward, backward) if forward.fits and backward.fits else None


def _kernel(gpu, layer, direction):
    name = f"ga_rnn_{direction}_{layer.mode}_{_TYPE_NAME[layer.dtype.name]}"
    return gpu.rnn_library.function(STEM, name, gpu.smem_optin)


def _launch(gpu, layer, direction, plan, pointers, x_f32=False):
    """Zero the barrier's counter, then one cooperative launch of ``direction``."""
    kernel = _kernel(gpu, layer, direction)
    driver.memset_d32(pointers[9], 0, 1)
    args = ARGS.pack(*pointers, layer.seq_len, layer.batch, layer.hidden, plan.U, plan.KC,
                     *plan.layout, int(plan.tensor_cores), int(x_f32))
    kernel.launch_cooperative((plan.grid, 1, 1), (THREADS, 1, 1), args, plan.smem)
    gpu._stats["kernels_launched"] += 1


class _Contiguous:
    """The kernels' view of the call's tensors: each one itself when contiguous,
    else a contiguous copy (inputs) or temporary (outputs, copied back by
    :meth:`finish`)."""

    def __init__(self, gpu):
        # the copies stay referenced until the launch is queued: a copy freed
        # earlier could hand its memory to the next temporary
        self.gpu, self.outputs, self.copies = gpu, [], []

    def input(self, t):
        if t is None:
            return 0
        if not t.is_contiguous:
            t = self.gpu.evaluate(t)
            self.copies.append(t)
        return t.ptr

    def output(self, t):
        if t is None:
            return 0
        if t.is_contiguous:
            return t.ptr
        temporary = self.gpu.empty(t.shape, t.dtype)
        self.outputs.append((t, temporary))
        return temporary.ptr

    def finish(self):
        for target, written in self.outputs:
            target[:] = written


def forward(gpu, layer, X, W, Y, h0, c0, hy, cy, reserve):
    """Queue the forward kernel: Y, the final states, and the reserve when given
    (X in the layer's dtype or in float32)."""
    view = _Contiguous(gpu)
    # the published h of alternating steps, then the barrier's counter
    scratch = gpu.empty((2 * layer.batch * layer.hidden + 1,), np.float32)
    pointers = (view.input(X), view.input(W), view.input(h0), view.input(c0), view.output(Y),
                view.output(hy), view.output(cy), 0 if reserve is None else reserve.ptr,
                scratch.ptr, scratch[-1:].ptr, 0, 0, 0, 0, 0, 0)
    _launch(gpu, layer, "fprop", layer.plans[0], pointers, X.dtype == np.float32)
    view.finish()


def backward(gpu, layer, W, dY, dX, dh0, dc0, dhy, dcy, h0, c0, reserve):
    """Queue the backward kernel: dX, dh0, dc0, and drec into the reserve."""
    view = _Contiguous(gpu)
    plan = layer.plans[1]
    # on tensor cores the published drec of alternating steps (in the layer's
    # dtype, in fp32-sized slots as the forward's h), then the barrier's counter
    slots = 2 * layer.batch * layer.gates * layer.hidden if plan.tensor_cores else 0
    scratch = gpu.empty((slots + 1,), np.float32)
    pointers = (0, view.input(W), view.input(h0), view.input(c0), 0, 0, 0, reserve.ptr,
                scratch.ptr if slots else 0, scratch[-1:].ptr, view.input(dY), view.input(dhy),
                view.input(dcy), view.output(dX), view.output(dh0), view.output(dc0))
    _launch(gpu, layer, "bprop", plan, pointers)
    view.finish()

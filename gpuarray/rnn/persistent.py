"""The persistent recurrent kernels (kernels/rnn_persist.cu, rnn_cluster_sm90.cu): plan, then launch.

In: an :class:`~gpuarray.rnn.layer.RNNLayer` and the GPU factory (its
multiprocessor count, shared-memory limit and cluster support).  Out: a
plan per direction -- hidden units per block, grid, the shared-memory
layout -- or None where the weights do not fit on chip; and ``forward`` /
``backward``, which queue one launch each.

Each block keeps G*U rows (forward) or U columns (backward) of the
recurrent weights in shared memory, in the layer's dtype, for all T
steps; U = ceil(H / multiprocessors), one block per multiprocessor.  The
rest of shared memory stages the previous step's state, N rows of KC
columns at a time.  A layer fits when the weights plus a 128-column
chunk fit the per-block limit (227 KB on H100): at N = 4, up to H = 1280
for an fp32 LSTM (1792 in 16 bits), 1536 for a GRU (2048), 2560 for a
plain RNN (3584).

Where the forward's weights fit in one thread-block cluster's shared
memory (sm_90: ReLU fp16 up to H = 1152-1280 in clusters of 16 blocks) the
forward runs clustered instead (:class:`ClusterPlan`): each cluster takes a
slice of the batch through every step on its own, its blocks passing the
state through distributed shared memory (stores counted on the receiver's
mbarrier), with no grid barrier and no state through L2 -- where the
sequence is long enough to repay a cluster block's longer weight load
(``CLUSTERS`` says).
"""
import struct

import numpy as np

from ..cuda import driver

STEM, CLUSTER_STEM = "rnn_persist", "rnn_cluster_sm90"
THREADS = 256
#: run the forward clustered: True where it fits and the sequence repays its
#: longer weight load, "always" wherever it fits (tests and benchmarks compare
#: the two kernels), False never
CLUSTERS = True
#: the clustered forward's extra one-time weight load, µs per 1000 weights a
#: block holds, and what it saves a step at least, µs, on the tensor cores
#: and on the FMAs (H200, kernel alone, ReLU H = 1024 fp16: a launch of one
#: step 16 against 11.5 µs; a step 2.77 against the grid's 3.81 at N = 32,
#: 2.25 against 2.84 at N = 4; fp32 N = 4: H = 512 2.14 against 2.36,
#: H = 256 1.07 against 2.28)
LOAD_US_PER_1000, STEP_GAIN_US = 0.06, {True: 0.6, False: 0.14}
#: FMAs a block's backward products take a step past which tensor cores
#: serve them below N = 8 (:func:`_default_tensor_cores`)
BWD_FMAS = 160 * 1024
#: cluster sizes tried, largest first (above 8: non-portable, sm_90's GPCs hold 16)
CLUSTER_SIZES = (16, 8, 4, 2, 1)
#: columns a lane group walks per pass (32 lanes x 4): the chunk's granule
GRANULE = 128
#: RnnArgs of kernels/rnn_common.cuh: 16 pointers, then T N H U KC, the
#: shared-memory layout (weights' bytes, six float offsets), the tensor-core flag,
#: whether X is fp32, the samples per cluster and the float offset of its mbarriers
ARGS = struct.Struct("<16Q16i")

_TYPE_NAME = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def _round4(n):
    return -(-n // 4) * 4


def _mma_layer(layer):
    """Whether the products can run on tensor cores: 16-bit, H % 64 == 0."""
    return layer.dtype.itemsize == 2 and layer.hidden % 64 == 0


def _max_parts(kc, tiles):
    """kernels/rnn_mma.cuh's mma_log_splits: parts of a power of two, each one
    or more 64-column passes of the kc columns, while the tiles' parts fit
    the 8 warps (kc=None: every chunk's bound)."""
    parts = 1
    while tiles * parts * 2 <= THREADS // 32 and (kc is None or kc >= 128 * parts):
        parts *= 2
    return parts


def _mma_tiles(rows, n, L):
    """kernels/rnn_mma.cuh's mma_shape: the tasks' tiles for rows x n products
    over a state of L columns, 16 rows x 8 * nb samples each, nb = 4 (1 or 2
    below 17 samples), halved while the tiles, split as far as L allows,
    would leave warps idle."""
    m_tiles, n_tiles = -(-rows // 16), -(-n // 8)
    nb = 4 if n_tiles >= 3 else n_tiles
    while nb > 1 and m_tiles * -(-n_tiles // nb) * _max_parts(L, 1) < THREADS // 32:
        nb //= 2
    return m_tiles * -(-n_tiles // nb)


def _mma_parts(rows, kc, n, L=None):
    """The parts kernels/rnn_mma.cuh cuts the k range of each tile into: rows x
    n products over a chunk of kc of the state's L columns (L = kc by
    default)."""
    return _max_parts(kc, _mma_tiles(rows, n, kc if L is None else L))


def _default_tensor_cores(layer, forward, U):
    """Whether a direction's products run on tensor cores by default.

    The forward's k-split parts meet in slices of acc, so its tensor cores
    win at every batch (H200, kernel alone, N = 4 fp16: ReLU H = 2048 3.1
    against 4.3 us a step, LSTM H = 1024 3.5 against 4.9).  The backward's
    meet in turns: below N = 8 its FMAs win while a block's products are
    few (ReLU H = 2048 N = 4, 128 Ki FMAs a block: 3.9 against 5.1; LSTM
    H = 1024 N = 4 4.4 against 4.9), its tensor cores past BWD_FMAS (ReLU
    H = 2048 N = 6, 192 Ki: 5.2 against 5.8; H = 2560 N = 4 4.7 against
    5.7; LSTM H = 1280 N = 4 5.9 against 6.3) and at N >= 8 (LSTM H = 1024
    4.8 against 7.1).
    """
    if not _mma_layer(layer):
        return False
    return forward or layer.batch >= 8 or U * layer.gates * layer.hidden * layer.batch > BWD_FMAS


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
        default, on them in the forward, and in the backward where N >= 8
        or a block's products are many (:func:`_default_tensor_cores`).

    Attributes
    ----------
    U, grid, KC, smem : int
        Hidden units per block, blocks, staged columns per chunk, bytes of
        dynamic shared memory.
    tensor_cores : bool
        Whether the products run on tensor cores (mma.sync: 16-bit layers
        with H a multiple of 64; see :func:`_default_tensor_cores`), reading the state
        published in the layer's dtype; else on fp32 FMAs, reading it in fp32.
    layout : tuple of int
        ``w_bytes, off_bias, off_v, off_acc, off_h, off_c, off_byp`` as the
        kernel's RnnArgs takes them.
    cluster, NS, off_bar : int
        0, N and 0: the grid kernel (a :class:`ClusterPlan` has its own).
    """

    def __init__(self, layer, forward, sms, smem_limit, tensor_cores=None):
        G, H, N = layer.gates, layer.hidden, layer.batch
        self.cluster, self.NS, self.off_bar = 0, N, 0
        self.U = -(-H // sms)
        if tensor_cores is None:
            tensor_cores = _default_tensor_cores(layer, forward, self.U)
        self.tensor_cores = tensor_cores
        self.grid = -(-H // self.U)
        rows, L = (G * self.U, H) if forward else (self.U, G * H)
        w_bytes = -(-rows * L * layer.dtype.itemsize // 16) * 16
        own = _round4(self.U * N)
        # acc, and after it the slices of the forward's products' parts on
        # tensor cores (kernels/rnn_persist.cu's matvec_mma), as many as a
        # chunk may have (the backward adds its parts into acc in turns)
        acc = _round4(rows * N)
        if self.tensor_cores and forward:
            acc += rows * N * _max_parts(None, _mma_tiles(rows, N, L))
        # float arrays besides the staged columns: bias, acc, h, c, bypass
        sizes = [_round4(rows), acc, own, own, 0] if forward else [0, acc, 0, own, own]
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


class ClusterPlan:
    """The clustered forward's launch (kernels/rnn_cluster_sm90.cu).

    Parameters
    ----------
    layer : RNNLayer
    cluster : int
        Blocks a cluster; each owns U = H / cluster hidden units (rounded up
        to 8) and keeps the G*U rows of R that produce their gates.
    NS : int
        Samples a cluster takes through the sequence (the batch is split
        into ceil(N / NS) independent clusters).

    Attributes
    ----------
    U, grid, smem, layout, tensor_cores, fits
        As :class:`Plan`'s; ``layout``'s v offset holds the two state
        buffers (NS rows of H fp32, or of H + 8 elements of the layer's
        dtype on tensor cores), its bypass offset the two buffers of
        prefetched inputs.  The products run on tensor cores wherever the
        layer is 16-bit with H % 64 == 0.
    off_bar : int
        Float offset of the two mbarriers that count the state's arrival.
    """

    KC = 0  # no column chunks: every block holds the whole state

    def __init__(self, layer, cluster, NS, smem_limit):
        G, H, N = layer.gates, layer.hidden, layer.batch
        # without a grid barrier's staging in the step the tensor cores win at
        # every batch (H200, ReLU H = 1024 N = 4 fp16: products 5100 against
        # 9400 cycles a step on the FMAs)
        self.tensor_cores = _mma_layer(layer)
        self.cluster, self.NS = cluster, NS
        units = -(-H // cluster)
        self.U = -(-units // 8) * 8  # whole 16-byte pieces of h and X to pass around
        self.grid = cluster * -(-N // NS)
        rows = G * self.U
        w_bytes = -(-rows * H * layer.dtype.itemsize // 16) * 16
        unit, pad = (layer.dtype.itemsize, 8) if self.tensor_cores else (4, 0)
        state = _round4(-(-NS * (H + pad) * unit // 4))
        own = _round4(self.U * NS)
        # bias, the two state buffers, acc (on tensor cores the products' parts
        # for a block's NS samples, or the last cluster's fewer), h, c, the two
        # input buffers (fp32 X is the largest), then two 8-byte mbarriers
        last = N - (-(-N // NS) - 1) * NS
        acc = _round4(max(rows * n * (_mma_parts(rows, H, n) if self.tensor_cores else 1)
                          for n in (NS, last)))
        offsets = np.cumsum([0, _round4(rows), 2 * state, acc, own, own,
                             2 * _round4(G * NS * self.U), 4])
        self.layout = (w_bytes, *(int(o) for o in offsets[:6]))
        self.off_bar = int(offsets[6])
        self.smem = w_bytes + 4 * int(offsets[-1])
        # every block owns some units (else a smaller cluster serves)
        self.fits = self.smem <= smem_limit and (cluster - 1) * self.U < H


def _cluster_plan(layer, gpu):
    """The clustered forward's plan for ``layer``: the largest cluster whose
    blocks hold the weights, with the batch in as few slices as run at once
    (NS a multiple of 8 on tensor cores, of 4 on the FMAs); None where no
    cluster holds them, the slices would not all run at once, or (unless
    ``CLUSTERS == "always"``) the sequence is too short to repay the
    clustered kernel's longer weight load in faster steps."""
    if not (CLUSTERS and gpu.clusters):
        return None
    plan = _fitting_cluster_plan(layer, gpu)
    if plan is None or CLUSTERS == "always":
        return plan
    gain = STEP_GAIN_US[plan.tensor_cores]
    extra = LOAD_US_PER_1000 * layer.gates * plan.U * layer.hidden / 1000
    return plan if layer.seq_len * gain >= extra else None


def _fitting_cluster_plan(layer, gpu):
    """The largest cluster whose blocks hold ``layer``'s forward weights, the batch
    in as few slices as run at once, or None."""
    N = layer.batch
    granule = 8 if _mma_layer(layer) else 4
    for size in CLUSTER_SIZES:
        plan = ClusterPlan(layer, size, min(N, granule), gpu.smem_optin)
        if not plan.fits:
            continue
        active = gpu.sms if size == 1 else _max_active(gpu, layer, size, plan.smem)
        per_slice = -(-N // max(active, 1))
        NS = min(N, -(-per_slice // granule) * granule)
        plan = ClusterPlan(layer, size, NS, gpu.smem_optin)
        if plan.fits and plan.grid // size <= active:
            return plan
    return None


def _max_active(gpu, layer, size, smem):
    """How many clusters of ``size`` blocks of the clustered forward run at once."""
    kernel = _kernel(gpu, layer, "cluster_fprop", CLUSTER_STEM, smem)
    kernel.allow_large_clusters()
    return kernel.clustered(size).max_active((THREADS, 1, 1), smem)


def plans(layer, gpu):
    """The forward and backward plans of ``layer`` on ``gpu``, or None where it
    cannot run persistently (H not a multiple of 8, or weights too large for
    shared memory); the forward's a :class:`ClusterPlan` where one fits."""
    if layer.hidden % 8:
        return None
    forward, backward = (_plan(layer, d, gpu) for d in (True, False))
    if not (forward.fits and backward.fits):
        return None
    return _cluster_plan(layer, gpu) or forward, backward


def _plan(layer, forward, gpu):
    """A direction's grid plan, on the FMAs where the tensor cores' would not
    fit (the forward's parts take room the FMAs' fp32 staging may not)."""
    plan = Plan(layer, forward, gpu.sms, gpu.smem_optin)
    if plan.tensor_cores and not plan.fits:
        plan = Plan(layer, forward, gpu.sms, gpu.smem_optin, tensor_cores=False)
    return plan


def _kernel(gpu, layer, direction, stem=STEM, smem=None):
    name = f"ga_rnn_{direction}_{layer.mode}_{_TYPE_NAME[layer.dtype.name]}"
    return gpu.rnn_library.function(stem, name, gpu.smem_optin if smem is None else smem)


def _launch(gpu, layer, direction, plan, pointers, x_f32=False):
    """One launch of ``direction``: clustered, or cooperative with the barrier's
    counter zeroed first."""
    args = ARGS.pack(*pointers, layer.seq_len, layer.batch, layer.hidden, plan.U, plan.KC,
                     *plan.layout, int(plan.tensor_cores), int(x_f32), plan.NS, plan.off_bar)
    if plan.cluster:
        kernel = _kernel(gpu, layer, "cluster_" + direction, CLUSTER_STEM)
        kernel.allow_large_clusters()
        kernel.clustered(plan.cluster).launch((plan.grid, 1, 1), (THREADS, 1, 1), args, plan.smem)
    else:
        driver.memset_d32(pointers[9], 0, 1)
        _kernel(gpu, layer, direction).launch_cooperative((plan.grid, 1, 1), (THREADS, 1, 1), args,
                                                          plan.smem)
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
    plan = layer.plans[0]
    # the published h of alternating steps, then the barrier's counter (not
    # for clusters: their state stays in shared memory)
    scratch = None if plan.cluster else gpu.empty((2 * layer.batch * layer.hidden + 1,), np.float32)
    pointers = (view.input(X), view.input(W), view.input(h0), view.input(c0), view.output(Y),
                view.output(hy), view.output(cy), 0 if reserve is None else reserve.ptr,
                0 if scratch is None else scratch.ptr, 0 if scratch is None else scratch[-1:].ptr,
                0, 0, 0, 0, 0, 0)
    _launch(gpu, layer, "fprop", plan, pointers, X.dtype == np.float32)
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

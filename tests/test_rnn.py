"""Recurrent layers: ng.rnn_layer / fprop_rnn / bprop_rnn / update_rnn against a float64
numpy reference (forward) and its central differences (gradients), the GPU against
the CPU factory, constant allocations, bad input."""
import types

import numpy as np
import pytest

from conftest import BF16, assert_no_new_allocations, get_factory, to_host
from gpuarray.rnn import persistent
from gpuarray.rnn.layer import RNNLayer

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
MODES = ["relu", "tanh", "gru", "lstm"]
DTYPES = [F32, F16, BF16]
#: max |got - ref| / max |ref| per dtype (16-bit: X, W and Y rounded, math in fp32)
TOL = {F32: 2e-6, F16: 4e-3, BF16: 3e-2}


def ids(dtypes):
    return ["bfloat16" if d == BF16 else d.name for d in dtypes]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference(mode, X, W, h0, c0):
    """Y, hy, cy of the layer in float64, cuDNN's equations."""
    H = W.shape[1] - 1
    R, b = W[:, :H], W[:, H]
    h, c, ys = h0.copy(), c0.copy(), []
    for x in X:
        rec = h @ R.T + b
        if mode in ("relu", "tanh"):
            h = np.maximum(x + rec, 0) if mode == "relu" else np.tanh(x + rec)
        elif mode == "lstm":
            a = x + rec
            i, f, o = _sigmoid(a[:, :H]), _sigmoid(a[:, H:2 * H]), _sigmoid(a[:, 3 * H:])
            c = f * c + i * np.tanh(a[:, 2 * H:3 * H])
            h = o * np.tanh(c)
        else:
            r, z = _sigmoid(x[:, :H] + rec[:, :H]), _sigmoid(x[:, H:2 * H] + rec[:, H:2 * H])
            n = np.tanh(x[:, 2 * H:] + r * rec[:, 2 * H:])
            h = (1 - z) * n + z * h
        ys.append(h)
    return np.stack(ys), h, c


class Case:
    """A layer with host data (rounded to its dtype) and its tensors on a factory."""

    def __init__(self, ng, mode, dtype, H=8, N=3, T=5, seed=0, path=None):
        rng = np.random.default_rng(seed)
        self.ng, self.mode, self.dtype = ng, mode, dtype
        self.layer = ng.rnn_layer(dtype, mode, H, N, T, path=path)
        L = self.layer
        self.host = {
            # W's scale keeps the pre-activations O(1) as H grows (0.4 at H = 8)
            "X": rng.standard_normal(L.x_shape),
            "W": rng.standard_normal(L.weight_shape) * 0.4 * np.sqrt(8 / H),
            "h0": rng.standard_normal(L.state_shape),
            "c0": rng.standard_normal(L.state_shape) if mode == "lstm" else np.zeros(L.state_shape),
            "dY": rng.standard_normal(L.y_shape), "dhy": rng.standard_normal(L.state_shape),
            "dcy": rng.standard_normal(L.state_shape) if mode == "lstm" else None}
        self.host = {k: None if v is None else v.astype(dtype).astype(np.float64)
                     for k, v in self.host.items()}
        self.t = {k: None if v is None else ng.array(v.astype(dtype)) for k, v in self.host.items()}
        self.lstm = {"c0": self.t["c0"]} if mode == "lstm" else {}

    def forward(self, reserve=True):
        ng, L = self.ng, self.layer
        Y, hy = ng.empty(L.y_shape, self.dtype), ng.empty(L.state_shape, self.dtype)
        self.reserve = ng.empty(L.reserve_shape, F32) if reserve else None
        extra = dict(self.lstm, cy=ng.empty(L.state_shape, self.dtype)) if self.lstm else {}
        ng.fprop_rnn(L, self.t["X"], self.t["W"], Y, h0=self.t["h0"], hy=hy,
                     reserve=self.reserve, **extra)
        self.Y = Y
        return Y, hy, extra.get("cy")

    def backward(self):
        ng, L = self.ng, self.layer
        dX, dh0 = ng.empty(L.x_shape, self.dtype), ng.empty(L.state_shape, self.dtype)
        extra = {}
        if self.lstm:
            extra = dict(c0=self.t["c0"], dcy=self.t["dcy"], dc0=ng.empty(L.state_shape, self.dtype))
        ng.bprop_rnn(L, self.t["W"], self.Y, self.t["dY"], dX, dh0=dh0, dhy=self.t["dhy"],
                     reserve=self.reserve, h0=self.t["h0"], **extra)
        dW = ng.empty(L.weight_shape, self.dtype)
        ng.update_rnn(L, self.t["X"], self.Y, dW, reserve=self.reserve, h0=self.t["h0"])
        return {"X": dX, "h0": dh0, "W": dW, "c0": extra.get("dc0")}

    def loss(self, **moved):
        """sum(Y dY) + sum(hy dhy) (+ sum(cy dcy)) of the float64 reference."""
        v = dict(self.host, **moved)
        Y, hy, cy = reference(self.mode, v["X"], v["W"], v["h0"], v["c0"])
        total = np.sum(Y * v["dY"]) + np.sum(hy * v["dhy"])
        return total + (np.sum(cy * v["dcy"]) if self.mode == "lstm" else 0.0)


def close(got, ref, tol, what):
    ref = np.asarray(ref, np.float64)
    err = np.max(np.abs(to_host(got).astype(np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30)
    assert err <= tol, f"{what}: max error {err:.2e} relative to max|ref| > {tol:.0e}"


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
@pytest.mark.parametrize("mode", MODES)
def test_forward_matches_reference(ng, mode, dtype):
    case = Case(ng, mode, dtype)
    h = case.host
    Y_ref, hy_ref, cy_ref = reference(mode, h["X"], h["W"], h["h0"], h["c0"])
    for reserve in (True, False):
        Y, hy, cy = case.forward(reserve)
        close(Y, Y_ref, TOL[dtype], f"Y (reserve={reserve})")
        close(hy, hy_ref, TOL[dtype], "hy")
        if cy is not None:
            close(cy, cy_ref, TOL[dtype], "cy")


def test_zero_initial_states(ng):
    layer = ng.rnn_layer("float32", "lstm", 4, 2, 3)
    X = np.random.default_rng(0).standard_normal(layer.x_shape).astype(np.float32)
    W = np.random.default_rng(1).standard_normal(layer.weight_shape).astype(np.float32)
    Y = ng.empty(layer.y_shape, np.float32)
    ng.fprop_rnn(layer, ng.array(X), ng.array(W), Y)
    zeros = np.zeros(layer.state_shape)
    close(Y, reference("lstm", X.astype(np.float64), W.astype(np.float64), zeros, zeros)[0],
          TOL[F32], "Y")


@pytest.mark.parametrize("mode", MODES)
def test_gradients_match_central_differences(mode):
    """bprop_rnn and update_rnn (fp32) against the float64 reference's differences."""
    case = Case(get_factory("cpu"), mode, F32, H=4, N=2, T=4, seed=3)
    case.forward()
    grads = {k: to_host(v).astype(np.float64) for k, v in case.backward().items()
             if v is not None}
    pick = np.random.default_rng(5)
    for name, analytic in grads.items():
        scale = max(np.max(np.abs(analytic)), 1e-6)
        for _ in range(8):
            index = tuple(pick.integers(0, d) for d in analytic.shape)
            values = []
            for sign in (1, -1):
                moved = case.host[name].copy()
                moved[index] += sign * 1e-6
                values.append(case.loss(**{name: moved}))
            numeric = (values[0] - values[1]) / 2e-6
            assert abs(numeric - analytic[index]) <= 1e-4 * scale + 1e-6, (
                f"{mode} d/d{name}{index}: numeric {numeric:.6f}, analytic {analytic[index]:.6f}")


def _gpu_against_cpu(gpu_ng, mode, dtype, path, **sizes):
    cpu, gpu = Case(get_factory("cpu"), mode, dtype, **sizes), \
        Case(gpu_ng, mode, dtype, path=path, **sizes)
    assert gpu.layer.path == path
    # fp32 dot products of length H summed in another order: rounding grows as sqrt(H)
    tol = TOL[dtype] * max(1.0, np.sqrt(sizes["H"] / 16))
    outputs = [case.forward() for case in (cpu, gpu)]
    for name, ref, got in zip(("Y", "hy", "cy"), *outputs):
        if ref is not None:
            close(got, to_host(ref).astype(np.float64), tol, name)
    theirs, ours = cpu.backward(), gpu.backward()
    for name, ref in theirs.items():
        if ref is not None:
            close(ours[name], to_host(ref).astype(np.float64), 4 * tol, f"d{name}")
    return gpu


@pytest.mark.parametrize("path", ["persistent", "gemm-loop"])
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
@pytest.mark.parametrize("mode", MODES)
def test_gpu_matches_cpu(gpu_ng, mode, dtype, path):
    _gpu_against_cpu(gpu_ng, mode, dtype, path, H=16, N=4, T=6)


@pytest.mark.parametrize("mode, dtype, H, N, T", [
    ("lstm", F32, 392, 3, 4),     # U = 3 units per block: the last block is partial
    ("gru", F16, 64, 7, 5),       # batch groups of 4 with a remainder
    ("relu", BF16, 8, 1, 1),      # one step, one sample, blocks of one unit
    ("tanh", F32, 2560, 4, 2),    # the forward state staged in chunks
    ("lstm", F32, 1024, 40, 2),   # both directions chunked, N > 32
    # the products on tensor cores (16-bit, H % 64 == 0; N >= 8 for the backward's)
    ("lstm", F16, 1024, 32, 3),   # forward 2 tiles of 16 x 32 in 4 parts; backward 16 x 8
    ("relu", BF16, 128, 9, 3),    # one row per block, a partial batch tile
    ("gru", F16, 192, 16, 2),     # 6 rows per block: a partial row tile
    ("tanh", F16, 2560, 48, 2),   # the staged state in chunks
    ("gru", BF16, 256, 72, 2),    # backward 9 tiles of 16 x 8: a warp takes two; forward 16 x 32
    ("relu", F16, 64, 8, 4),      # one unit per block: one tile, 15 of its 16 rows dropped
    ("lstm", BF16, 1024, 40, 2),  # the backward's 4H gradients staged in chunks
    ("gru", BF16, 72, 8, 2),      # H % 64 != 0: the CUDA-core products
    ("relu", F16, 2048, 4, 3),    # N < 8: forward on tensor cores, backward on the CUDA cores
    ("tanh", F16, 2560, 4, 2),    # N < 8, a block's backward products many: on tensor cores
    ("gru", F16, 2240, 4, 2),     # the forward's parts would not fit: on the CUDA cores
    ("lstm", BF16, 128, 1, 3),    # one sample: a tile of 8 with 7 dropped; backward CUDA cores
    # forward clustered where the weights fit in a cluster (sm_90)
    ("tanh", F16, 1024, 20, 3),   # clusters of 16 on tensor cores, a partial batch slice
    ("tanh", F32, 64, 5, 4),      # clusters of 8 blocks of 8 units, slices of 4 and 1 samples
    ("gru", BF16, 200, 3, 3),     # clusters of 4 blocks of 56 units, the last block's 32
    ("lstm", F16, 512, 64, 2),    # 4 x 32 rows a block on tensor cores, several slices
], ids=str)
@pytest.mark.parametrize("clusters", ["always", False], ids=["clusters", "grid"])
def test_persistent_sizes_match_cpu(gpu_ng, monkeypatch, clusters, mode, dtype, H, N, T):
    monkeypatch.setattr(persistent, "CLUSTERS", clusters)
    case = _gpu_against_cpu(gpu_ng, mode, dtype, "persistent", H=H, N=N, T=T, seed=H)
    assert bool(case.layer.plans[0].cluster) == bool(clusters and _fits_a_cluster(gpu_ng, case.layer))


def _fits_a_cluster(ng, layer):
    """Whether some cluster's shared memory holds the forward's weights (sm_90)."""
    return ng.clusters and any(persistent.ClusterPlan(layer, size, min(layer.batch, 8), ng.smem_optin).fits
                               for size in persistent.CLUSTER_SIZES)


def test_cluster_plans(gpu_ng, monkeypatch):
    """The forward's cluster: the largest whose blocks hold the weights, the batch
    in slices that run at once; clusters never hold blockless ranks."""
    if not gpu_ng.clusters:
        pytest.skip("thread-block clusters need sm_90")
    monkeypatch.setattr(persistent, "CLUSTERS", "always")
    for mode, dtype, H, N, cluster in (("relu", "float16", 1024, 32, 16), ("relu", "float32", 8, 4, 1),
                                       ("lstm", "float16", 512, 4, 16), ("relu", "float32", 64, 3, 8)):
        plan = gpu_ng.rnn_layer(dtype, mode, H, N, 5).plans[0]
        assert plan.cluster == cluster and (plan.cluster - 1) * plan.U < H <= plan.cluster * plan.U
        assert plan.grid % plan.cluster == 0 and plan.grid // plan.cluster * plan.NS >= N
    # too large for a cluster: the grid forward
    assert not gpu_ng.rnn_layer("float16", "relu", 2048, 4, 5).plans[0].cluster


@pytest.mark.parametrize("mode, dtype, H, N, T, cluster", [
    ("relu", "float16", 1024, 32, 64, 16),   # 64 steps x 0.6 us repay 3.9 us of extra load
    ("relu", "float16", 1024, 4, 7, 16),     # so do 7
    ("relu", "float16", 1024, 32, 6, 0),     # 6 do not
    ("relu", "float32", 512, 4, 7, 0),       # on the FMAs a step gains 0.14 us: 7 x 0.14 < 0.98
    ("relu", "float32", 512, 4, 8, 16),
    ("relu", "float32", 256, 4, 2, 16),      # a small block's load: 0.25 us
    ("relu", "float32", 256, 4, 1, 0),
    ("relu", "float32", 2048, 4, 1000, 0),   # no cluster holds the weights
], ids=str)
def test_clusters_where_the_sequence_repays_the_load(monkeypatch, mode, dtype, H, N, T, cluster):
    """The clustered forward where the steps' gain repays its longer one-time
    weight load; "always" wherever it fits, False never (a stand-in sm_90 GPU:
    no device needed)."""
    gpu = types.SimpleNamespace(clusters=True, sms=132, smem_optin=227 * 1024)
    monkeypatch.setattr(persistent, "_max_active", lambda gpu, layer, size, smem: 8)

    def chosen():
        return persistent.plans(RNNLayer(dtype, mode, H, N, T), gpu)[0].cluster

    assert chosen() == cluster
    fits = persistent._fitting_cluster_plan(RNNLayer(dtype, mode, H, N, T), gpu) is not None
    monkeypatch.setattr(persistent, "CLUSTERS", "always")
    assert chosen() == (16 if fits else 0)
    monkeypatch.setattr(persistent, "CLUSTERS", False)
    assert chosen() == 0
    monkeypatch.setattr(persistent, "CLUSTERS", True)
    gpu.clusters = False  # before sm_90
    assert chosen() == 0


@pytest.mark.parametrize("mode, dtype, H, N", [
    ("relu", "float16", 1280, 4),    # the largest clustered at batch 4: one part a tile
    ("relu", "float16", 1024, 32),   # 4 tiles of 8 samples: 2 parts
    ("relu", "float16", 1024, 64),   # 4 tiles of 16 samples: 2 parts
    ("lstm", "float16", 256, 20),    # slices of 8 and a last one of 4
    ("relu", "float32", 512, 4),     # FMAs: no parts
], ids=str)
def test_cluster_products_have_room_for_their_parts(mode, dtype, H, N):
    """The clustered forward's acc holds the products' k-split parts of every
    block's slice of the batch, the last (smaller) one included (a stand-in
    sm_90 GPU: no device needed)."""
    gpu = types.SimpleNamespace(clusters=True, sms=132, smem_optin=227 * 1024)
    layer = RNNLayer(dtype, mode, H, N, 5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(persistent, "_max_active", lambda gpu, layer, size, smem: 7)
        plan = persistent._fitting_cluster_plan(layer, gpu)
    assert plan.cluster == 16
    rows, off_acc, off_h = layer.gates * plan.U, plan.layout[3], plan.layout[4]
    for n in {plan.NS, N - (plan.grid // plan.cluster - 1) * plan.NS}:
        parts = persistent._mma_parts(rows, H, n) if plan.tensor_cores else 1
        assert off_h - off_acc >= rows * n * parts
    assert plan.smem <= gpu.smem_optin


@pytest.mark.parametrize("mode, dtype, H, N", [
    ("lstm", "float16", 1024, 32),   # 2 tiles of 16 x 32: 4 parts
    ("relu", "float16", 1024, 8),    # one tile of 16 x 8: 8 parts
    ("gru", "bfloat16", 512, 20),    # 20 samples: tiles of 32, the last 12 dropped
    ("relu", "float16", 2048, 128),  # 4 tiles: 2 parts
    ("relu", "float16", 576, 64),    # 9 passes of 64 columns in 4 parts: 3, 3, 3 and none
], ids=str)
def test_grid_products_have_room_for_their_parts(mode, dtype, H, N):
    """The grid forward's acc holds rows x N sums and, after them, the slices of
    every chunk's k-split parts on tensor cores; the backward's, its sums
    alone (its parts are added in turns; no device needed)."""
    layer = RNNLayer(dtype, mode, H, N, 5)
    fwd, bwd = (persistent.Plan(layer, forward, 132, 227 * 1024) for forward in (True, False))
    assert fwd.fits and fwd.tensor_cores
    rows = layer.gates * fwd.U
    chunks = {fwd.KC, H - (-(-H // fwd.KC) - 1) * fwd.KC}
    parts = max(persistent._mma_parts(rows, kc, N, H) for kc in chunks)
    assert fwd.layout[4] - fwd.layout[3] >= -(-rows * N // 4) * 4 + rows * N * parts
    assert bwd.layout[4] - bwd.layout[3] == -(-bwd.U * N // 4) * 4
    assert max(fwd.smem, bwd.smem) <= 227 * 1024


#: (1 + x) rounds up to the next value of the dtype only if x is not rounded first
#: (x alone rounds to half the spacing at 1, and 1 + that ties to even: 1)
UNROUNDED = {F16: (2.0 ** -11 * (1 + 2.0 ** -12), 1 + 2.0 ** -10),
             BF16: (2.0 ** -8 * (1 + 2.0 ** -9), 1 + 2.0 ** -7)}


def test_forward_leaves_tensor_cores_where_their_parts_do_not_fit():
    """Where the slices of the forward's tensor-core parts leave no room, the
    FMAs' plan serves (a stand-in GPU: no device needed)."""
    gpu = types.SimpleNamespace(clusters=False, sms=132, smem_optin=227 * 1024)
    layer = RNNLayer("float16", "gru", 2240, 4, 10)
    assert not persistent.Plan(layer, True, gpu.sms, gpu.smem_optin).fits
    forward, backward = persistent.plans(layer, gpu)
    assert forward.fits and not forward.tensor_cores and backward.tensor_cores
    assert persistent.plans(RNNLayer("float16", "gru", 2304, 4, 10), gpu) is None


@pytest.mark.parametrize("path", [None, "gemm-loop"])
@pytest.mark.parametrize("H, N", [(8, 1), (64, 8)])  # (64, 8): tensor cores where persistent
@pytest.mark.parametrize("dtype", [F16, BF16], ids=ids([F16, BF16]))
def test_float32_projected_input_is_not_rounded(ng, dtype, H, N, path):
    """A 16-bit layer given X in float32 adds it to the recurrent sums unrounded."""
    x, expected = UNROUNDED[dtype]
    L = ng.rnn_layer(dtype, "relu", H, N, 1, path=path)
    W = np.zeros(L.weight_shape)
    W[:, H] = 1.0  # the recurrent bias: rec = 1 (h0 = 0)
    Y = ng.empty(L.y_shape, dtype)
    ng.fprop_rnn(L, ng.full(L.x_shape, x, F32), ng.array(W.astype(dtype)), Y)
    assert np.all(to_host(Y).astype(np.float64) == expected)


def test_persistent_is_one_launch_per_call(gpu_ng):
    case = Case(gpu_ng, "lstm", F16, H=64, N=2, T=9, path="persistent")
    L, t = case.layer, case.t
    dX = gpu_ng.empty(L.x_shape, F16)

    def backward():
        gpu_ng.bprop_rnn(L, t["W"], case.Y, t["dY"], dX, dhy=t["dhy"], reserve=case.reserve,
                         h0=t["h0"], c0=t["c0"], dcy=t["dcy"])

    for call in (case.forward, backward):
        call()
        before = gpu_ng.stats()["kernels_launched"]
        call()
        assert gpu_ng.stats()["kernels_launched"] - before == 1


def test_persistent_takes_strided_views(gpu_ng):
    """Non-contiguous X, Y and states go through contiguous copies: same values."""
    case = Case(gpu_ng, "gru", F32, H=16, N=3, T=4, path="persistent")
    L, t = case.layer, case.t
    Y_ref, hy_ref, _ = case.forward()
    wide = gpu_ng.zeros((L.seq_len, L.batch, 2 * L.x_shape[2]), F32)
    wide[:, :, ::2] = t["X"]
    Y, hy = (gpu_ng.zeros((L.seq_len, L.batch, 2 * L.hidden), F32),
             gpu_ng.zeros((L.hidden, L.batch), F32))
    h0 = gpu_ng.array(to_host(t["h0"]).T.copy()).T
    gpu_ng.fprop_rnn(L, wide[:, :, ::2], t["W"], Y[:, :, 1::2], h0=h0, hy=hy.T)
    assert np.array_equal(to_host(Y)[:, :, 1::2], to_host(Y_ref))
    assert np.array_equal(to_host(Y)[:, :, ::2], np.zeros(L.y_shape))
    assert np.array_equal(to_host(hy).T, to_host(hy_ref))


def test_path_choice(ng):
    if not ng.runs_persistent_rnn:
        assert ng.rnn_layer("float32", "lstm", 64, 4, 10).path == "gemm-loop"
        with pytest.raises(ValueError, match="cannot run this layer persistently: it has no"):
            ng.rnn_layer("float32", "lstm", 64, 4, 10, path="persistent")
        return
    assert ng.rnn_layer("float16", "lstm", 1024, 4, 10).path == "persistent"
    # the products on tensor cores: 16-bit, H % 64 == 0, the backward's N >= 8
    for dtype, H, N, tensor_cores in (("float16", 1024, 8, [True, True]),
                                      ("bfloat16", 64, 32, [True, True]),
                                      ("float32", 1024, 8, [False, False]),
                                      ("float16", 72, 8, [False, False]),
                                      ("float16", 1024, 4, [True, False]),
                                      ("float16", 1536, 6, [True, True]),
                                      ("bfloat16", 128, 1, [True, False])):
        layer = ng.rnn_layer(dtype, "gru", H, N, 10)
        assert [plan.tensor_cores for plan in layer.plans] == tensor_cores
    assert ng.rnn_layer("float16", "lstm", 1024, 4, 10, path="gemm-loop").path == "gemm-loop"
    for H, why in ((12, "not a multiple of 8"), (4096, "do not fit in shared memory")):
        assert ng.rnn_layer("float32", "lstm", H, 4, 10).path == "gemm-loop"
        with pytest.raises(ValueError, match=why):
            ng.rnn_layer("float32", "lstm", H, 4, 10, path="persistent")


def test_repeated_calls_allocate_nothing_new(ng):
    case = Case(ng, "gru", F32)
    for _ in range(2):
        case.forward()
        case.backward()
    ng.synchronize()
    before = ng.stats()
    for _ in range(3):
        case.forward()
        case.backward()
    ng.synchronize()
    assert_no_new_allocations(ng, before)


def test_layer_sizes(ng):
    layer = ng.rnn_layer(np.float16, "lstm", 32, 4, 10, input_size=100)
    assert layer.x_shape == (10, 4, 128) and layer.weight_shape == (128, 33)
    assert layer.y_shape == (10, 4, 32) and layer.state_shape == (4, 32)
    assert layer.reserve_shape == (10, 4, 2 * 128 + 64)
    assert layer.reserve_bytes == 4 * 10 * 4 * 320 and layer.workspace_bytes == 0
    assert layer.path == ("persistent" if ng.runs_persistent_rnn else "gemm-loop")
    assert layer.input_size == 100
    assert "lstm" in repr(layer)


def test_bad_input(ng):
    with pytest.raises(ValueError, match="mode must be one of 'relu', 'tanh', 'gru', 'lstm'"):
        ng.rnn_layer("float32", "elman", 8, 1, 1)
    with pytest.raises(TypeError, match="float16, bfloat16 or float32, not float64"):
        ng.rnn_layer("float64", "relu", 8, 1, 1)
    with pytest.raises(ValueError, match="hidden must be positive, got 0"):
        ng.rnn_layer("float32", "relu", 0, 1, 1)
    with pytest.raises(TypeError, match="batch must be an integer, not float"):
        ng.rnn_layer("float32", "relu", 8, 1.5, 1)
    with pytest.raises(ValueError, match="path must be 'persistent' or 'gemm-loop'"):
        ng.rnn_layer("float32", "relu", 8, 1, 1, path="fast")
    case = Case(ng, "tanh", F32)
    L, t = case.layer, case.t
    Y = ng.empty(L.y_shape, F32)
    with pytest.raises(TypeError, match="fprop_rnn needs an RNNLayer"):
        ng.fprop_rnn("layer", t["X"], t["W"], Y)
    with pytest.raises(ValueError, match=r"fprop_rnn: X has shape \(5,3,16\), but the layer "
                                         r"expects \(5,3,8\)"):
        ng.fprop_rnn(L, ng.empty((5, 3, 16), F32), t["W"], Y)
    with pytest.raises(TypeError, match="fprop_rnn: W must be float32, not float16"):
        ng.fprop_rnn(L, t["X"], ng.empty(L.weight_shape, F16), Y)
    with pytest.raises(TypeError, match="fprop_rnn: X must be float32, not float16"):
        ng.fprop_rnn(L, ng.empty(L.x_shape, F16), t["W"], Y)
    half = ng.rnn_layer("bfloat16", "tanh", 8, 3, 5)
    with pytest.raises(TypeError, match="update_rnn: X must be bfloat16 or float32, not float16"):
        ng.update_rnn(half, ng.empty(half.x_shape, F16), ng.empty(half.y_shape, BF16),
                      ng.empty(half.weight_shape, BF16), reserve=ng.empty(half.reserve_shape, F32))
    with pytest.raises(TypeError, match="fprop_rnn: Y must be a tensor, not ndarray"):
        ng.fprop_rnn(L, t["X"], t["W"], np.empty(L.y_shape))
    with pytest.raises(ValueError, match="c0 is the LSTM's cell state; a 'tanh' layer has none"):
        ng.fprop_rnn(L, t["X"], t["W"], Y, c0=ng.empty(L.state_shape, F32))
    with pytest.raises(TypeError, match="reserve must be float32"):
        ng.fprop_rnn(L, t["X"], t["W"], Y, reserve=ng.empty(L.reserve_shape, F16))
    with pytest.raises(ValueError, match="reserve must be a contiguous tensor of its own"):
        ng.fprop_rnn(L, t["X"], t["W"], Y, reserve=ng.empty((5,) + L.reserve_shape, F32)[:, 0])
    with pytest.raises(ValueError, match="bprop_rnn needs the reserve that fprop_rnn filled"):
        ng.bprop_rnn(L, t["W"], Y, Y, ng.empty(L.x_shape, F32))
    with pytest.raises(ValueError, match="update_rnn needs the reserve"):
        ng.update_rnn(L, t["X"], Y, ng.empty(L.weight_shape, F32))
    other = get_factory("cpu", seed=11)
    with pytest.raises(ValueError, match="fprop_rnn: X belongs to a different factory"):
        ng.fprop_rnn(L, other.empty(L.x_shape, F32), t["W"], Y)

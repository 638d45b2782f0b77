"""gpuarray.nn's RNN, GRU and LSTM layers: the input projection and the recurrence
against a float64 reference and its central differences, the GPU against the CPU."""
import numpy as np
import pytest

from conftest import BF16, get_factory, to_host
from gpuarray import nn
from gpuarray.nn.recurrent import as_torch
from test_rnn import reference

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
LAYERS = {"tanh": lambda: nn.RNN(6), "relu": lambda: nn.RNN(6, nonlinearity="relu"),
          "gru": lambda: nn.GRU(6), "lstm": lambda: nn.LSTM(6)}
SHAPE = (4, 3, 5)  # T, N, I


def host(t):
    return to_host(t).astype(np.float64)


def make(ng, mode, dtype):
    layer = LAYERS[mode]()
    layer.setup(ng, SHAPE, dtype, rng=np.random.default_rng(2))
    x = np.random.default_rng(3).standard_normal(SHAPE).astype(dtype).astype(np.float64)
    return layer, x


def forward_reference(mode, x, p, H=6):
    """Y of the layer in float64 from torch-named parameters."""
    X = x @ p["weight_ih_l0"].T + p["bias_ih_l0"]
    W = np.concatenate([p["weight_hh_l0"], p["bias_hh_l0"][:, None]], axis=1)
    zeros = np.zeros((x.shape[1], H))
    return reference(mode, X, W, zeros, zeros)[0]


@pytest.mark.parametrize("mode", sorted(LAYERS))
def test_forward_matches_reference(ng, mode):
    layer, x = make(ng, mode, F32)
    y = layer.fprop(ng.array(x.astype(np.float32)))
    params = {k: v.astype(np.float64) for k, v in as_torch(layer).items()}
    ref = forward_reference(mode, x, params)
    assert np.max(np.abs(host(y) - ref)) <= 2e-6 * np.max(np.abs(ref))
    assert layer.out_shape == (4, 3, 6) and layer.layer.path == "gemm-loop"


@pytest.mark.parametrize("mode", sorted(LAYERS))
def test_gradients_match_central_differences(mode):
    ng = get_factory("cpu")
    layer, x = make(ng, mode, F32)
    weights = np.random.default_rng(4).standard_normal(layer.out_shape)
    layer.fprop(ng.array(x.astype(np.float32)))
    grad_in = host(layer.bprop(ng.array(weights.astype(np.float32))))
    params = {k: v.astype(np.float64) for k, v in as_torch(layer).items()}
    grads = {"weight_ih_l0": host(layer.W_ih.grad), "bias_ih_l0": host(layer.b_ih.grad),
             "weight_hh_l0": host(layer.W_hh.grad)[:, :6],
             "bias_hh_l0": host(layer.W_hh.grad)[:, 6]}

    def loss(x_, p):
        return float(np.sum(forward_reference(mode, x_, p) * weights))

    pick = np.random.default_rng(5)
    for name, analytic in [("x", grad_in)] + list(grads.items()):
        scale = max(np.max(np.abs(analytic)), 1e-6)
        for _ in range(6):
            index = tuple(pick.integers(0, d) for d in analytic.shape)
            values = []
            for sign in (1, -1):
                p = {k: v.copy() for k, v in params.items()}
                x_ = x.copy()
                (x_ if name == "x" else p[name])[index] += sign * 1e-6
                values.append(loss(x_, p))
            numeric = (values[0] - values[1]) / 2e-6
            assert abs(numeric - analytic[index]) <= 1e-4 * scale + 1e-6, (
                f"{mode} d/d{name}{index}: numeric {numeric:.6f}, bprop {analytic[index]:.6f}")


@pytest.mark.parametrize("dtype", [F32, F16, BF16], ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mode", sorted(LAYERS))
def test_gpu_matches_cpu(gpu_ng, mode, dtype):
    results = []
    for ng in (get_factory("cpu"), gpu_ng):
        layer, x = make(ng, mode, dtype)
        y = host(layer.fprop(ng.array(x.astype(dtype))))
        g = np.random.default_rng(6).standard_normal(layer.out_shape).astype(dtype)
        dx = host(layer.bprop(ng.array(g)))
        results.append([y, dx] + [host(p.grad) for p in layer.parameters()])
    tol = {F32: 1e-5, F16: 2e-2, BF16: 1e-1}[dtype]
    for ours, ref in zip(results[1], results[0]):
        assert np.max(np.abs(ours - ref)) <= tol * max(np.max(np.abs(ref)), 1e-30)


def test_bad_input(ng):
    with pytest.raises(ValueError, match="nonlinearity must be 'tanh' or 'relu'"):
        nn.RNN(4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match=r"lstm1?: takes a sequence \(T, N, features\)"):
        nn.LSTM(4).setup(ng, (3, 5), F32)
    layer, _ = make(ng, "gru", F32)
    layer.training = False
    layer.fprop(ng.zeros(SHAPE, F32))
    with pytest.raises(RuntimeError, match="bprop needs a training-mode fprop"):
        layer.bprop(ng.zeros(layer.out_shape, F32))


@pytest.mark.parametrize("mode", sorted(LAYERS))
def test_matches_torch(gpu_ng, mode):
    """The layer against torch.nn.RNN/GRU/LSTM (cuDNN) with the same weights, fp32."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    torch.backends.cudnn.allow_tf32 = False
    layer, x = make(gpu_ng, mode, F32)
    H = layer.hidden
    module = {"lstm": lambda: torch.nn.LSTM(5, H), "gru": lambda: torch.nn.GRU(5, H)}.get(
        mode, lambda: torch.nn.RNN(5, H, nonlinearity=mode))().cuda()
    with torch.no_grad():
        for name, value in as_torch(layer).items():
            getattr(module, name).copy_(torch.from_numpy(value))
    g = np.random.default_rng(6).standard_normal(layer.out_shape).astype(np.float32)
    y = host(layer.fprop(gpu_ng.array(x.astype(np.float32))))
    dx = host(layer.bprop(gpu_ng.array(g)))
    tx = torch.tensor(x, dtype=torch.float32, device="cuda", requires_grad=True)
    ref, _ = module(tx)
    ref.backward(torch.from_numpy(g).cuda())
    pairs = {"y": (y, ref.detach()), "dx": (dx, tx.grad),
             "dW_ih": (host(layer.W_ih.grad), module.weight_ih_l0.grad),
             "db_ih": (host(layer.b_ih.grad), module.bias_ih_l0.grad),
             "dW_hh": (host(layer.W_hh.grad)[:, :H], module.weight_hh_l0.grad),
             "db_hh": (host(layer.W_hh.grad)[:, H], module.bias_hh_l0.grad)}
    for name, (ours, theirs) in pairs.items():
        theirs = theirs.double().cpu().numpy()
        # Both sum fp32 products over every timestep and sample, in different orders: an
        # H100 run saw 1.03e-5 of the largest gradient between cuDNN's GRU and ours.
        error = np.max(np.abs(ours - theirs)) / max(np.max(np.abs(theirs)), 1e-30)
        assert error <= 1e-4, (name, error)

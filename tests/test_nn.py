"""gpuarray.nn: layers against numpy formulas and finite differences, the GPU
against the CPU factory (and torch where it is installed), a small convnet
trained on the digits, constant allocations, in-place concatenation, bad input."""
import numpy as np
import pytest

from conftest import BF16, assert_no_new_allocations, get_factory, to_host
from gpuarray import nn

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
DTYPES = [F32, F16, BF16]
#: max |got - ref| / max |ref| per dtype (fp16/bf16 store rounded, accumulate in fp32)
TOL = {F32: 1e-4, F16: 1e-2, BF16: 6e-2}


def ids(dtypes):
    return ["bfloat16" if d == BF16 else d.name for d in dtypes]


def host(t):
    return to_host(t).astype(np.float64)


def close(got, ref, tol, what="", norm=False):
    """max|got - ref| / max|ref| <= tol (with ``norm``: ||got - ref|| / ||ref||)."""
    ref = np.asarray(ref, np.float64)
    if norm:
        err = np.linalg.norm(host(got) - ref) / max(np.linalg.norm(ref), 1e-30)
    else:
        err = np.max(np.abs(host(got) - ref)) / max(np.max(np.abs(ref)), 1e-30)
    assert err <= tol, f"{what}: error {err:.2e} > {tol:.0e} ({'norm' if norm else 'max'})"


def setup(ng, layer, shape, dtype, seed=0):
    layer.setup(ng, shape, dtype, rng=np.random.default_rng(seed))
    return layer


def data(ng, shape, dtype, seed=1, scale=1.0):
    values = (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)
    return ng.array(values), values.astype(np.float64)


# -- forward against numpy formulas --------------------------------------------------

def ref_batchnorm(x, gamma, beta, relu, eps=1e-5):
    axes = tuple(range(x.ndim - 1))
    y = (x - x.mean(axes)) / np.sqrt(x.var(axes) + eps) * gamma + beta
    return np.maximum(y, 0) if relu else y


def ref_lrn(x, n=5, alpha=1e-4, beta=0.75, k=1.0):
    C = x.shape[-1]
    sq = np.concatenate([np.zeros(x.shape[:-1] + (n // 2,)), x * x,
                         np.zeros(x.shape[:-1] + ((n - 1) // 2,))], axis=-1)
    window = sum(sq[..., i:i + C] for i in range(n))
    return x / (k + alpha / n * window) ** beta


def ref_softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


FORWARD = {
    "relu": (lambda: nn.ReLU(), (2, 1, 3, 4, 8), lambda L, x: np.maximum(x, 0)),
    "bias": (lambda: nn.Bias(), (2, 1, 3, 4, 8), lambda L, x: x + host(L.b.value)),
    "bn": (lambda: nn.BatchNorm(), (4, 1, 3, 3, 16),
           lambda L, x: ref_batchnorm(x, host(L.gamma.value), host(L.beta.value), False)),
    "bn_relu": (lambda: nn.BatchNorm(relu=True), (64, 24),
                lambda L, x: ref_batchnorm(x, host(L.gamma.value), host(L.beta.value), True)),
    "lrn": (lambda: nn.LRN(5, alpha=0.5, beta=0.75, k=2.0), (2, 1, 3, 3, 12),
            lambda L, x: ref_lrn(x, 5, 0.5, 0.75, 2.0)),
    "lrn_even": (lambda: nn.LRN(4, alpha=0.3), (2, 1, 2, 2, 7),
                 lambda L, x: ref_lrn(x, 4, 0.3)),
    "fc_relu": (lambda: nn.FullyConnected(24, relu=True), (16, 1, 2, 2, 8),
                lambda L, x: np.maximum(x.reshape(16, -1) @ host(L.W.value).T
                                        + host(L.b.value), 0)),
    "softmax": (lambda: nn.SoftmaxCrossEntropy(), (8, 10), lambda L, x: ref_softmax(x)),
    "dropout0": (lambda: nn.Dropout(0.0), (3, 17), lambda L, x: x),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
@pytest.mark.parametrize("case", sorted(FORWARD))
def test_forward_matches_numpy(ng, case, dtype):
    make, shape, ref = FORWARD[case]
    layer = setup(ng, make(), shape, dtype)
    if case == "bias":
        layer.b.value[:] = ng.array(np.linspace(-1, 1, shape[-1]).astype(dtype))
    x, xh = data(ng, shape, dtype)
    y = layer.fprop(x)
    tol = 2e-6 if case == "softmax" and dtype == F32 else TOL[dtype]
    close(y, ref(layer, xh), 3 * tol if case.startswith("bn") else tol, case)


@pytest.mark.parametrize("dtype", [F32, F16], ids=ids([F32, F16]))
def test_batchnorm_running_statistics_and_inference(ng, dtype):
    layer = setup(ng, nn.BatchNorm(momentum=0.25), (6, 1, 2, 2, 5), dtype)
    x, xh = data(ng, (6, 1, 2, 2, 5), dtype)
    layer.fprop(x)
    rows_ = xh.reshape(-1, 5)
    mean, var = 0.25 * rows_.mean(0), 0.75 + 0.25 * rows_.var(0, ddof=1)
    close(layer.running_mean, mean, 1e-3, "running mean")
    close(layer.running_var, var, 1e-3, "running variance")
    layer.training = False
    y = layer.fprop(x)
    close(y, (xh - mean) / np.sqrt(var + 1e-5), TOL[dtype] * 3, "inference")


# -- gradients against finite differences (CPU factory, fp32) --------------------------

def _conv_pool_concat():
    return nn.Concat([[nn.Conv(4, 3, pad=1, relu=True)],
                      [nn.Pool("max", 3, stride=1, pad=1), nn.Conv(3, 1)]])


GRADIENT = {
    "conv_relu": (lambda: nn.Conv(5, 3, pad=1, stride=1, relu=True), (2, 1, 5, 5, 3)),
    "conv_strided": (lambda: nn.Conv(4, (2, 3), pad=(1, 0), stride=2), (2, 1, 6, 7, 2)),
    "pool_max": (lambda: nn.Pool("max", 3, stride=2), (2, 1, 7, 7, 3)),
    # the pool applies the conv's ReLU and bias gradients (nn.spatial.pair_relu_pools)
    "conv_relu_pool": (lambda: nn.Sequential([nn.Conv(4, 3, pad=1, relu=True),
                                              nn.Pool("max", 3, stride=2)]), (2, 1, 7, 7, 3)),
    "pool_avg": (lambda: nn.Pool("avg", 2, pad=1), (2, 1, 5, 5, 4)),
    "fc_relu": (lambda: nn.FullyConnected(7, relu=True), (5, 1, 2, 2, 3)),
    "bias": (lambda: nn.Bias(), (3, 1, 2, 2, 5)),
    "bn": (lambda: nn.BatchNorm(), (6, 1, 2, 2, 4)),
    "bn_relu": (lambda: nn.BatchNorm(relu=True), (12, 5)),
    "lrn": (lambda: nn.LRN(3, alpha=0.5, beta=0.75, k=1.0), (2, 1, 2, 2, 6)),
    "lrn_even": (lambda: nn.LRN(4, alpha=0.4, beta=0.6, k=1.5), (2, 1, 1, 2, 7)),
    "concat": (_conv_pool_concat, (2, 1, 4, 4, 3)),
    "dropout": (lambda: nn.Dropout(0.3), (4, 9)),
}


def _loss(layer, x, weights):
    return float(np.sum(host(layer.fprop(x)) * weights))


def _numeric(layer, tensor, index, x, weights, ng, eps=1e-3):
    """dL/d tensor[index] by central differences (dropout's mask held fixed)."""
    base = to_host(tensor)
    values = []
    for sign in (1, -1):
        moved = base.copy()
        moved[index] += sign * eps
        tensor[:] = ng.array(moved)
        values.append(_loss(layer, x, weights))
    tensor[:] = ng.array(base)
    return (values[0] - values[1]) / (2 * eps)


@pytest.mark.parametrize("case", sorted(GRADIENT))
def test_gradients_match_finite_differences(case):
    ng = get_factory("cpu")
    make, shape = GRADIENT[case]
    layer = setup(ng, make(), shape, F32)
    x, _ = data(ng, shape, F32)
    weights = np.random.default_rng(2).standard_normal(layer.out_shape)
    layer.fprop(x)
    if case == "dropout":
        # the finite differences below reuse the drawn mask
        layer.fprop = lambda x, layer=layer: ng.evaluate(x * layer.mask)
    grad_in = layer.bprop(ng.array(weights.astype(np.float32)))
    grad_in = host(grad_in)
    grads = [(p, host(p.grad)) for p in layer.parameters()]
    pick = np.random.default_rng(3)
    for tensor, analytic, what in [(x, grad_in, "input")] + [
            (p.value, g, p.name) for p, g in grads]:
        scale = max(np.max(np.abs(analytic)), 1e-3)
        for _ in range(6):
            index = tuple(pick.integers(0, d) for d in tensor.shape)
            numeric = _numeric(layer, tensor, index, x, weights, ng)
            assert abs(numeric - analytic[index]) <= 2e-2 * scale, (
                f"{case} d/d{what}{index}: numeric {numeric:.5f}, bprop {analytic[index]:.5f}")


def test_softmax_cross_entropy_gradient():
    ng = get_factory("cpu")
    layer = setup(ng, nn.SoftmaxCrossEntropy(), (6, 5), F32)
    x, xh = data(ng, (6, 5), F32)
    labels = np.array([0, 4, 2, 2, 1, 3], np.int32)
    layer.fprop(x)
    loss = float(host(layer.loss(ng.array(labels)))[0, 0])
    p = ref_softmax(xh)
    assert loss == pytest.approx(-np.mean(np.log(p[np.arange(6), labels])), rel=1e-5)
    onehot = np.eye(5)[labels]
    close(layer.bprop(ng.array(labels)), (p - onehot) / 6, 1e-5, "indices")
    close(layer.bprop(ng.array(onehot.astype(np.float32))), (p - onehot) / 6, 1e-5, "one-hot")


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("dtype", [F32, F16], ids=ids([F32, F16]))
def test_relu_and_bias_gradients_at_the_pool(ng, dtype, bias):
    """A max pool after a Conv with a ReLU masks and sums its own errors for the
    conv: the gradients equal those of the two layers run apart."""
    def run(paired):
        seq = nn.Sequential([nn.Conv(8, 3, pad=1, relu=True, bias=bias),
                             nn.Pool("max", 3, stride=2, pad=1)])
        setup(ng, seq, (2, 1, 9, 9, 8), dtype)
        conv, pool = seq.layers
        assert (conv.grads_at_pool is pool) and (pool.relu_conv is conv)
        if not paired:
            conv.grads_at_pool = pool.relu_conv = None
        x, _ = data(ng, (2, 1, 9, 9, 8), dtype)
        seq.fprop(x)
        g, _ = data(ng, pool.out_shape, dtype, seed=4)
        return host(seq.bprop(g)), [host(p.grad) for p in seq.parameters()]

    (got, got_params), (want, want_params) = run(True), run(False)
    close(got, want, TOL[dtype], "input gradient")
    for a, b in zip(got_params, want_params):
        close(a, b, TOL[dtype], "parameter gradient", norm=True)


# -- the GPU against the CPU factory ------------------------------------------------

def small_net():
    return [nn.Conv(8, 3, pad=1, relu=True), nn.LRN(3, alpha=0.1),
            nn.Pool("max", 2),
            nn.Concat([[nn.Conv(8, 1, relu=True)], [nn.Conv(4, 1), nn.Conv(8, 3, pad=1, bias=False)],
                       [nn.Pool("avg", 3, stride=1, pad=1), nn.Conv(8, 1, relu=True)]]),
            nn.BatchNorm(relu=True), nn.FullyConnected(32, relu=True), nn.Dropout(0.0),
            nn.FullyConnected(10), nn.SoftmaxCrossEntropy()]


def _run_net(ng, dtype, x, labels):
    model = nn.Model(ng, small_net(), x.shape, dtype, seed=5)
    probs = host(model.fprop(ng.array(x)))
    model.bprop(ng.array(labels))
    return probs, {p.name: host(p.grad) for p in model.parameters()}


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_gpu_network_matches_cpu(gpu_ng, dtype):
    x = np.random.default_rng(0).standard_normal((16, 1, 8, 8, 3)).astype(dtype)
    labels = np.random.default_rng(1).integers(0, 10, 16).astype(np.int32)
    ref_probs, ref_grads = _run_net(get_factory("cpu"), F32, x.astype(np.float32), labels)
    probs, grads = _run_net(gpu_ng, dtype, x, labels)
    # a 16-bit network rounds every activation: compare whole tensors by norm
    tol = {F32: 1e-3, F16: 1e-2, BF16: 1.5e-1}[dtype]
    close(probs, ref_probs, tol, "probabilities", norm=True)
    for name, ref in ref_grads.items():
        close(grads[name], ref, tol, name, norm=True)


def _torch_layer(torch, case, x, params):
    """torch's output of ``case`` for an NCHW (or (N, K)) input."""
    F = torch.nn.functional
    if case.startswith("bn"):
        y = F.batch_norm(x, None, None, params["gamma"], params["beta"], training=True,
                         eps=1e-5)
        return F.relu(y) if case == "bn_relu" else y
    return F.local_response_norm(x, 5, alpha=0.5, beta=0.75, k=2.0)


@pytest.mark.parametrize("dtype", [F32, F16], ids=ids([F32, F16]))
@pytest.mark.parametrize("case", ["bn", "bn_relu", "lrn"])
def test_normalisation_matches_torch(gpu_ng, case, dtype):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    shape = (8, 1, 6, 6, 16)
    layer = setup(gpu_ng, nn.BatchNorm(relu=case == "bn_relu") if case != "lrn"
                  else nn.LRN(5, alpha=0.5, beta=0.75, k=2.0), shape, dtype)
    x, xh = data(gpu_ng, shape, dtype)
    g, gh = data(gpu_ng, shape, dtype, seed=7)
    y = host(layer.fprop(x))
    gx = host(layer.bprop(g))

    def nchw(a):
        return torch.tensor(a[:, 0].transpose(0, 3, 1, 2).astype(np.float32), device="cuda",
                            dtype=getattr(torch, dtype.name))

    tx = nchw(xh).requires_grad_()
    params = {p.name.split(".")[-1]: torch.from_dlpack(p.value).clone().requires_grad_()
              for p in layer.parameters()}
    ty = _torch_layer(torch, case, tx, params)
    ty.backward(nchw(gh))

    def native(t):
        return t.detach().float().cpu().numpy().transpose(0, 2, 3, 1)[:, None]

    tol = 3 * TOL[dtype]
    close(y, native(ty), tol, "output")
    close(gx, native(tx.grad), tol, "input gradient")
    for p in layer.parameters():
        ref = params[p.name.split(".")[-1]].grad.float().cpu().numpy()
        close(host(p.grad), ref, tol, p.name)


def test_softmax_cross_entropy_matches_torch(gpu_ng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    layer = setup(gpu_ng, nn.SoftmaxCrossEntropy(), (32, 10), F32)
    x, xh = data(gpu_ng, (32, 10), F32, scale=4.0)
    labels = np.random.default_rng(3).integers(0, 10, 32)
    layer.fprop(x)
    loss = float(host(layer.loss(gpu_ng.array(labels.astype(np.int32))))[0, 0])
    grad = host(layer.bprop(gpu_ng.array(labels.astype(np.int32))))
    tx = torch.tensor(xh, device="cuda", dtype=torch.float32, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(tx, torch.tensor(labels, device="cuda"))
    ref.backward()
    assert loss == pytest.approx(float(ref), rel=1e-5)
    close(grad, tx.grad.cpu().numpy(), 1e-5, "logits' gradient")


# -- training, allocations, concatenation -----------------------------------------------

def test_digits_convnet_reaches_97_percent(ng):
    datasets = pytest.importorskip("gpuarray.datasets")
    pytest.importorskip("sklearn.datasets", reason="scikit-learn is not installed")
    data_ = datasets.load_digits(seed=0)
    N = 40
    model = nn.Model(ng, [nn.Conv(16, 3, pad=1, relu=True), nn.Conv(32, 3, pad=1, relu=True),
                          nn.Pool("max", 2), nn.FullyConnected(64, relu=True),
                          nn.FullyConnected(10), nn.SoftmaxCrossEntropy()],
                     (N, 1, 8, 8, 1), "float32", seed=0)
    opt = nn.SGD(model.parameters(), lr=0.05, momentum=0.9)
    (xt, yt), (xs, ys) = data_.train, data_.test
    for epoch in range(6):
        order = np.random.default_rng(epoch).permutation(len(xt))
        for i in range(0, len(xt) - N + 1, N):
            idx = order[i:i + N]
            model.fprop(ng.array(xt[idx].reshape(N, 1, 8, 8, 1)))
            model.bprop(ng.array(yt[idx].astype(np.int32)))
            opt.step()
    model.eval()
    hits = sum(int((host(model.fprop(ng.array(xs[i:i + N].reshape(N, 1, 8, 8, 1))))
                    .argmax(1) == ys[i:i + N]).sum()) for i in range(0, len(xs), N))
    assert hits / len(xs) >= 0.97, f"test accuracy {hits / len(xs):.3f}"


def test_device_allocations_constant_across_iterations(ng):
    model = nn.Model(ng, small_net(), (8, 1, 8, 8, 3), "float32")
    opt = nn.SGD(model.parameters(), lr=0.01)
    x = ng.array(np.random.default_rng(0).standard_normal((8, 1, 8, 8, 3)).astype(np.float32))
    labels = ng.array(np.arange(8, dtype=np.int32))
    for _ in range(2):
        model.fprop(x), model.bprop(labels), opt.step()
    ng.synchronize()
    before = ng.stats()
    for _ in range(3):
        model.fprop(x), model.bprop(labels), opt.step()
    ng.synchronize()
    assert_no_new_allocations(ng, before)


@pytest.mark.parametrize("dtype", [F16, F32], ids=ids([F16, F32]))
def test_conv_layer_follows_its_inputs(ng, dtype):
    """A Conv binds its calls to the tensors of a pass (ng.bind_conv) and binds
    them again for other tensors: each pass gives what the direct calls give
    on that pass's tensors and their current contents."""
    shape = (2, 1, 6, 6, 16)
    conv = setup(ng, nn.Conv(16, 3, pad=1, relu=True), shape, dtype)
    xs = [data(ng, shape, dtype, seed=s)[0] for s in (1, 2)]
    gs = [ng.empty(conv.out_shape, dtype) for _ in range(2)]
    for step, (i, j) in enumerate([(0, 0), (1, 1), (0, 1), (0, 1)]):
        x, g = xs[i], gs[j]
        g[:] = data(ng, conv.out_shape, dtype, seed=10 + step)[0]  # new contents, same tensor
        E = ng.array(to_host(g))
        O, gb, gF, gI = (ng.empty(t.shape, dtype) for t in
                         (conv.output, conv.b.grad, conv.W.grad, conv.input_grad))
        ng.fprop_conv(conv.layer, x, conv.W.value, O, relu=True, bias=conv.b.value)
        np.testing.assert_array_equal(to_host(conv.fprop(x)), to_host(O))
        ng.update_bias(E, gb, O)
        ng.update_conv(conv.layer, x, E, gF)
        ng.bprop_conv(conv.layer, conv.W.value, E, gI)
        np.testing.assert_array_equal(to_host(conv.bprop(g)), to_host(gI))
        np.testing.assert_array_equal(to_host(conv.W.grad), to_host(gF))
        np.testing.assert_array_equal(to_host(conv.b.grad), to_host(gb))


def test_concat_writes_branches_in_place(ng):
    concat = setup(ng, nn.Concat([[nn.Conv(3, 1)], [nn.Conv(5, 3, pad=1, relu=True)]]),
                   (2, 1, 4, 4, 6), F32)
    for branch, (c0, c1) in zip(concat.layers, concat.slices):
        assert branch.output.buffer is concat.output.buffer
        assert (c0, c1) == (0, 3) or (c0, c1) == (3, 8)
    x, _ = data(ng, (2, 1, 4, 4, 6), F32)
    y = host(concat.fprop(x))
    alone = [setup(ng, nn.Conv(3, 1), (2, 1, 4, 4, 6), F32, seed=0)]
    np.testing.assert_allclose(y[..., :3], host(alone[0].fprop(x)), rtol=1e-5, atol=1e-5)
    assert concat.layers[0].layers[0].label == "concat.b1.conv1"


def _kernels(ng, fn):
    ng.synchronize()
    before = ng.stats()["kernels_launched"]
    fn()
    ng.synchronize()
    return ng.stats()["kernels_launched"] - before


@pytest.mark.parametrize("dtype", [F16, F32], ids=ids([F16, F32]))
@pytest.mark.parametrize("size", [1, 3])
def test_concat_branches_run_in_place(gpu_ng, size, dtype):
    """A branch writes and reads its channel slice in place: the kernels it would
    launch alone (no copies), and the values it would compute alone."""
    ng, shape, C = gpu_ng, (4, 1, 6, 6, 64), (16, 48)
    concat = setup(ng, nn.Concat([[nn.Conv(k, size, pad=size // 2)] for k in C]), shape, dtype)
    alone = [setup(ng, nn.Conv(k, size, pad=size // 2), shape, dtype) for k in C]
    for layer, branch in zip(alone, concat.layers):
        for mine, theirs in zip(layer.parameters(), branch.parameters()):
            mine.value[:] = theirs.value
    x, _ = data(ng, shape, dtype)
    grad, grad_host = data(ng, concat.out_shape, dtype, seed=4)
    grads = [ng.array(grad_host[..., :C[0]].astype(dtype)),
             ng.array(grad_host[..., C[0]:].astype(dtype))]
    for _ in range(2):  # the second round replays what the first recorded
        together = (_kernels(ng, lambda: concat.fprop(x)), _kernels(ng, lambda: concat.bprop(grad)))
        apart = (sum(_kernels(ng, lambda layer=layer: layer.fprop(x)) for layer in alone),
                 sum(_kernels(ng, lambda layer=layer, g=g: layer.bprop(g))
                     for layer, g in zip(alone, grads)))
    # bprop: the branches' input gradients summed by one kernel
    assert together == (apart[0], apart[1] + 1)
    out = host(concat.output)
    np.testing.assert_array_equal(out[..., :C[0]], host(alone[0].output))
    np.testing.assert_array_equal(out[..., C[0]:], host(alone[1].output))
    for layer, branch in zip(alone, concat.layers):
        for mine, theirs in zip(layer.parameters(), branch.parameters()):
            np.testing.assert_array_equal(host(theirs.grad), host(mine.grad))
    close(concat.input_grad, host(alone[0].input_grad) + host(alone[1].input_grad),
          TOL[dtype], "input gradient")


def test_sgd_step_matches_formula(ng):
    layer = setup(ng, nn.FullyConnected(3), (2, 4), F32)
    w0, b0 = host(layer.W.value), host(layer.b.value)
    opt = nn.SGD(layer.parameters(), lr=0.1, momentum=0.5, weight_decay=0.01)
    np.testing.assert_array_equal(host(layer.W.value), w0)
    layer.W.grad[:] = 1.0
    layer.b.grad[:] = 2.0
    opt.step()
    opt.step()
    for value, grad, got in ((w0, 1.0, layer.W.value), (b0, 2.0, layer.b.value)):
        v1 = -0.1 * (grad + 0.01 * value)
        w1 = value + v1
        w2 = w1 + 0.5 * v1 - 0.1 * (grad + 0.01 * w1)
        close(got, w2, 1e-6, "value after two steps")


def test_profile_reports_every_layer(ng):
    model = nn.Model(ng, [nn.Conv(4, 3, relu=True), nn.FullyConnected(3),
                          nn.SoftmaxCrossEntropy()], (2, 1, 5, 5, 2))
    x, _ = data(ng, (2, 1, 5, 5, 2), F32)
    rows = model.profile(x, ng.array(np.array([0, 2], np.int32)))
    assert [r[0] for r in rows] == ["conv1", "fc1", "softmax1"]
    assert all(f >= 0 and b >= 0 for _, f, b in rows)
    assert model.flops == 2 * 2 * 4 * 3 * 3 * 2 * 9 + 2 * 2 * 3 * 36


# -- bad input ---------------------------------------------------------------------

def test_wrong_input_shape_dtype_and_layout_name_the_layer(ng):
    layer = setup(ng, nn.Conv(4, 3, name="c1"), (2, 1, 5, 5, 3), F32)
    with pytest.raises(ValueError, match=r"c1: input must have shape \(2,1,5,5,3\) "
                       r"\(native layout N, D, H, W, C\), got \(2,3,5,5\)"):
        layer.fprop(ng.empty((2, 3, 5, 5), F32))
    with pytest.raises(TypeError, match="c1: input must be float32, not float16"):
        layer.fprop(ng.empty((2, 1, 5, 5, 3), F16))
    with pytest.raises(ValueError, match="c1: gradient must have shape"):
        layer.fprop(ng.zeros((2, 1, 5, 5, 3), F32))
        layer.bprop(ng.empty((2, 1, 5, 5, 4), F32))
    with pytest.raises(ValueError, match="needs a 5-D input in the native layout"):
        setup(ng, nn.Conv(4, 3, name="c2"), (2, 3, 5, 5), F32)
    with pytest.raises(TypeError, match="c1: input must be a tensor of .*, not ndarray"):
        layer.fprop(np.zeros((2, 1, 5, 5, 3), np.float32))
    other = get_factory("cpu", seed=9)
    with pytest.raises(TypeError, match="c1: input must be a tensor of .*, not a tensor of"):
        layer.fprop(other.zeros((2, 1, 5, 5, 3), F32))


def test_network_that_does_not_chain_fails_at_setup(ng):
    with pytest.raises(ValueError, match=r"conv2: .*smaller than the filter extent"):
        nn.Model(ng, [nn.Conv(4, 3), nn.Conv(4, 5), nn.FullyConnected(2)], (1, 1, 5, 5, 1))
    with pytest.raises(ValueError, match=r"conv2: needs a 5-D input .* got shape \(1,8\)"):
        nn.Model(ng, [nn.Conv(4, 3), nn.FullyConnected(8), nn.Conv(4, 1)], (1, 1, 5, 5, 1))
    with pytest.raises(ValueError, match="branch .*b2 gives"):
        setup(ng, nn.Concat([[nn.Conv(2, 1)], [nn.Conv(2, 3)]]), (1, 1, 5, 5, 1), F32)
    with pytest.raises(TypeError, match="layers run in float16, bfloat16 or float32"):
        setup(ng, nn.ReLU(), (2, 3), np.float64)


def test_misuse_raises(ng):
    layer = nn.ReLU()
    with pytest.raises(RuntimeError, match="call setup"):
        layer.fprop(ng.zeros((2, 2), F32))
    setup(ng, layer, (2, 2), F32)
    with pytest.raises(RuntimeError, match="bprop before fprop"):
        layer.bprop(ng.zeros((2, 2), F32))
    soft = setup(ng, nn.SoftmaxCrossEntropy(), (3, 4), F32)
    soft.fprop(ng.zeros((3, 4), F32))
    with pytest.raises(ValueError, match=r"targets must be class indices of shape \(3,\)"):
        soft.bprop(ng.zeros((3,), F32))
    with pytest.raises(TypeError, match="loss needs a SoftmaxCrossEntropy"):
        nn.Model(ng, [nn.ReLU()], (2, 2)).loss(ng.zeros((2,), np.int32))
    with pytest.raises(ValueError, match="at least one layer"):
        nn.Sequential([])
    with pytest.raises(TypeError, match="takes layers, not int"):
        nn.Sequential([3])
    with pytest.raises(ValueError, match="dropout probability"):
        nn.Dropout(1.0)
    a = setup(ng, nn.FullyConnected(2), (2, 2), F32)
    b = setup(ng, nn.FullyConnected(2), (2, 2), F16)
    with pytest.raises(TypeError, match="one factory and dtype"):
        nn.SGD(a.parameters() + b.parameters())

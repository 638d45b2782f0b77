"""Bound calls (``ng.bind_conv``, ``ng.bind_update_bias``, ``ng.bind_dot``).

A bound call is checked once and run by calling it.  On both factories a
run gives what the call itself gives (the same bits: the same kernels),
reads the tensors' current contents every run and returns the output;
misuse raises when binding, with the call's own messages.  On a Hopper
recorder (no GPU needed) the runs after the first replay the launches the
call queues, byte for byte, with no plan recorded, nothing compiled and
nothing allocated; inside a captured step a run takes the call's full
path.
"""
import numpy as np
import pytest
from conftest import BF16, assert_no_new_allocations, skip_if_no_gpu
from test_conv_launch import hopper, im2col_maps  # noqa: F401
from test_gemm_plan import tensor_maps  # noqa: F401

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)

#: (layer sizes, what they exercise on the GPU)
LAYERS = {
    "3x3": dict(N=2, C=64, K=64, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1),
    "3x3 padded update": dict(N=2, C=96, K=32, H=7, W=7, R=3, S=3, pad_h=1, pad_w=1),
    "small C": dict(N=2, C=3, K=64, H=12, W=12, R=3, S=3, pad_h=1, pad_w=1, str_h=2, str_w=2),
}


def _layer(ng, dtype, sizes):
    return ng.conv_layer(dtype, **sizes)


def _random(ng, rng, shape, dtype):
    return ng.array(rng.uniform(-1, 1, shape).astype(dtype))


def _operands(ng, rng, layer, kind):
    dims = {"fprop": (layer.dimI, layer.dimF, layer.dimO),
            "bprop": (layer.dimF, layer.dimO, layer.dimI),
            "update": (layer.dimI, layer.dimO, layer.dimF)}[kind]
    return [_random(ng, rng, d, layer.dtype) for d in dims]


def _direct(ng, kind, layer, a, b, out, **kw):
    return {"fprop": ng.fprop_conv, "bprop": ng.bprop_conv,
            "update": ng.update_conv}[kind](layer, a, b, out, **kw)


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=["f16", "bf16", "f32"])
@pytest.mark.parametrize("name", list(LAYERS))
@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
def test_a_run_gives_what_the_call_gives(ng, kind, name, dtype):
    rng = np.random.default_rng(3)
    layer = _layer(ng, dtype, LAYERS[name])
    a, b, out = _operands(ng, rng, layer, kind)
    kw = dict(alpha=0.5, beta=0.25)
    if kind == "fprop":
        kw.update(relu=True, bias=_random(ng, rng, (layer.K,), dtype))
    start = out.get()
    run = ng.bind_conv(kind, layer, a, b, out, **kw)
    expected = ng.array(start)
    for _ in range(2):  # beta reads the previous output: each run is one more call
        _direct(ng, kind, layer, a, b, expected, **kw)
        assert run() is out
        np.testing.assert_array_equal(out.get(), expected.get())


@pytest.mark.parametrize("name", list(LAYERS))
def test_a_run_reads_the_current_contents(ng, name):
    rng = np.random.default_rng(4)
    layer = _layer(ng, F16, LAYERS[name])
    I, F, O = _operands(ng, rng, layer, "fprop")  # noqa: E741
    run = ng.bind_conv("fprop", layer, I, F, O)
    run()
    I[:] = I * 2  # exact in fp16: the output doubles
    F[:] = -F
    run()
    expected = ng.empty(layer.dimO, F16)
    ng.fprop_conv(layer, I, F, expected)
    np.testing.assert_array_equal(O.get(), expected.get())


@pytest.mark.parametrize("with_relu", [False, True], ids=["plain", "relu"])
@pytest.mark.parametrize("dtype", [F16, F32], ids=["f16", "f32"])
def test_bound_bias_gradient(ng, dtype, with_relu):
    rng = np.random.default_rng(5)
    E0 = rng.uniform(-1, 1, (4, 5, 5, 48)).astype(dtype)
    O = _random(ng, rng, E0.shape, dtype) if with_relu else None  # noqa: E741
    E, E_ref = ng.array(E0), ng.array(E0)
    grad_b, ref = ng.array(np.ones(48, dtype)), ng.array(np.ones(48, dtype))
    run = ng.bind_update_bias(E, grad_b, O, alpha=2.0, beta=0.5)
    semaphores = getattr(ng, "semaphores", None)
    lent = semaphores.stats()["blocks_in_use"] if semaphores is not None else 0
    for _ in range(3):
        ng.update_bias(E_ref, ref, O, alpha=2.0, beta=0.5)
        assert run() is grad_b
        np.testing.assert_array_equal(grad_b.get(), ref.get())
        np.testing.assert_array_equal(E.get(), E_ref.get())
    if semaphores is not None:  # each run borrows its block and gives it back
        assert semaphores.stats()["blocks_in_use"] == lent


def test_binding_checks_as_the_call_does(ng):
    layer = _layer(ng, F16, LAYERS["3x3"])
    I, F, O = (ng.empty(d, F16) for d in (layer.dimI, layer.dimF, layer.dimO))  # noqa: E741
    with pytest.raises(ValueError, match="kind must be one of 'fprop', 'bprop', 'update'"):
        ng.bind_conv("forward", layer, I, F, O)
    with pytest.raises(ValueError, match="relu and bias belong to fprop, not bprop"):
        ng.bind_conv("bprop", layer, F, O, I, relu=True)
    with pytest.raises(ValueError, match="fprop_conv: O has shape"):
        ng.bind_conv("fprop", layer, I, F, ng.empty((1, 1, 8, 8, 64), F16))
    with pytest.raises(TypeError, match="update_conv: grad_F must be float16"):
        ng.bind_conv("update", layer, I, O, ng.empty(layer.dimF, F32))
    with pytest.raises(TypeError, match="needs a ConvLayer"):
        ng.bind_conv("fprop", "layer", I, F, O)
    with pytest.raises(ValueError, match="update_bias: grad_b has shape"):
        ng.bind_update_bias(O, ng.empty((3,), F16))


# -- a Hopper recorder: the launches of a run ------------------------------------

def _without_counter(entry):
    """A recorded conv_sm90 launch less its Philox call counter (each call draws one)."""
    from gpuarray.gemm import replay
    name, grid, block, data, shared = entry
    at = replay._SCALARS_AT + 8
    return name, grid, block, data[:at] + data[at + 4:], shared


@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
@pytest.mark.parametrize("name", ["3x3", "3x3 padded update"])
def test_a_run_queues_the_calls_launches_and_nothing_else(hopper, kind, name):  # noqa: F811
    ng = hopper
    layer = _layer(ng, F16, LAYERS[name])
    dims = {"fprop": (layer.dimI, layer.dimF, layer.dimO),
            "bprop": (layer.dimF, layer.dimO, layer.dimI),
            "update": (layer.dimI, layer.dimO, layer.dimF)}[kind]
    a, b, out = (ng.empty(d, F16) for d in dims)
    kw = dict(relu=True, bias=ng.empty((layer.K,), F16)) if kind == "fprop" else {}
    _direct(ng, kind, layer, a, b, out, **kw)
    direct = list(ng.launches)
    run = ng.bind_conv(kind, layer, a, b, out, **kw)
    run()  # the full path, then the launches are recorded
    ng.launches.clear()
    plans, before = len(ng._conv_plans), ng.stats()
    run()
    run()
    half = len(ng.launches) // 2
    first, second = ng.launches[:half], ng.launches[half:]
    assert half == len(direct) and len(second) == half

    def kernels(launches):  # the hand-written ones (a padded update's narrowing is generated)
        return [e for e in launches if isinstance(e[0], str)]
    assert kernels(first) and kernels(first) == kernels(second)  # replays: the same bytes
    assert [_without_counter(e) for e in kernels(first)] == \
        [_without_counter(e) for e in kernels(direct)]
    assert len(ng._conv_plans) == plans
    assert ng.stats()["kernels_compiled"] == before["kernels_compiled"]
    assert_no_new_allocations(ng, before)


# -- the GPU: a captured step and memory ------------------------------------------

@pytest.mark.parametrize("name", ["3x3", "3x3 padded update"])
def test_a_run_in_a_captured_step_takes_the_full_path(gpu_ng, name):
    skip_if_no_gpu()
    ng = gpu_ng
    rng = np.random.default_rng(6)
    layer = _layer(ng, F16, LAYERS[name])
    I, E, grad_F = _operands(ng, rng, layer, "update")  # noqa: E741
    run = ng.bind_conv("update", layer, I, E, grad_F, beta=1.0)
    run()
    step = ng.capture(run)
    expected = ng.array(grad_F.get())
    for _ in range(2):
        step()
        ng.update_conv(layer, I, E, expected, beta=1.0)
        np.testing.assert_array_equal(grad_F.get(), expected.get())
    before = ng.stats()
    for _ in range(3):
        run()
    assert_no_new_allocations(ng, before)


# -- products -----------------------------------------------------------------------

#: (A shape, B shape, transposes): the dense layers' three products among them
PRODUCTS = {"x @ W.T": ((64, 96), (48, 96), "b"), "E.T @ x": ((64, 48), (64, 96), "a"),
            "E @ W": ((64, 48), (48, 96), ""), "small": ((3, 5), (5, 7), "")}


@pytest.mark.parametrize("dtype", [F16, F32], ids=["f16", "f32"])
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_bound_dot_gives_what_dot_gives(ng, name, dtype):
    rng = np.random.default_rng(7)
    sa, sb, t = PRODUCTS[name]
    A, B = _random(ng, rng, sa, dtype), _random(ng, rng, sb, dtype)
    A, B = (A.T if "a" in t else A), (B.T if "b" in t else B)
    C = ng.array(rng.uniform(-1, 1, (A.shape[0], B.shape[1])).astype(dtype))
    bias = _random(ng, rng, (B.shape[1],), dtype)
    expected = ng.array(C.get())
    run = ng.bind_dot(A, B, C, alpha=0.5, beta=0.5, relu=True, bias=bias)
    for _ in range(3):  # the first run plans, the later ones replay
        ng.dot(A, B, expected, alpha=0.5, beta=0.5, relu=True, bias=bias)
        assert run() is C
        np.testing.assert_array_equal(C.get(), expected.get())
    A[...] = A * 2  # the current contents are read
    ng.dot(A, B, expected, alpha=0.5, beta=0.5, relu=True, bias=bias)
    run()
    np.testing.assert_array_equal(C.get(), expected.get())


def test_bind_dot_checks_as_dot_does(ng):
    A, B, C = ng.empty((4, 5), F32), ng.empty((5, 6), F32), ng.empty((4, 6), F32)
    with pytest.raises(ValueError):
        ng.bind_dot(A, A, C)
    with pytest.raises(TypeError, match="bind_dot: B must be a tensor, not"):
        ng.bind_dot(A, B * 2, C)
    with pytest.raises(TypeError, match="bind_dot: C must be a tensor, not NoneType"):
        ng.bind_dot(A, B, None)
    with pytest.raises(TypeError, match="A and B of one dtype"):
        ng.bind_dot(A, ng.empty((5, 6), F16), C)


def test_a_bound_dot_replays_its_launch(gpu_ng):
    skip_if_no_gpu()
    ng = gpu_ng
    rng = np.random.default_rng(8)
    A, B = _random(ng, rng, (256, 512), F16), _random(ng, rng, (512, 128), F16)
    C = ng.empty((256, 128), F16)
    run = ng.bind_dot(A, B, C)
    run()
    ng.synchronize()
    before = ng.stats()
    for _ in range(3):
        run()
    ng.synchronize()
    after = ng.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 3 * len(ng.last_gemm.launches)
    assert after.get("gemm_plans", 0) == before.get("gemm_plans", 0)
    assert_no_new_allocations(ng, before)
    np.testing.assert_array_equal(C.get(), ng.dot(A, B, ng.empty((256, 128), F16)).get())

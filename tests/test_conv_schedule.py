"""The implicit GEMM's schedules on Hopper: stream-K and split-K for the
filter gradient, stream-K for fprop and the data gradient (issue 11).

The planner picks one per layer (implicit_plan.choose_schedule,
choose_fprop); here each is forced on layers whose output tiles are cut
between many blocks, a few, or none, and checked against the loop
reference of test_conv.py -- also when the recorded plan runs again on new
tensors (stream-K's flags are zeroed before every launch) and when a replay
of the last launch repeats it -- and stream-K's sums must be the same bits
run after run.
"""
import numpy as np
import pytest
from conftest import BF16, skip_if_no_gpu
from test_conv import F16, check, data, naive_conv

from gpuarray.conv import implicit_plan as plans

#: (layer, what it exercises); C % 64 == 0 and K % 8 == 0: the implicit-GEMM update
CASES = [
    # one 64x64 tile, 9 K-tiles: 9 blocks of one K-tile each, block 0 adds 8 parts
    pytest.param(dict(N=4, C=64, K=8, H=12, W=12), id="one-tile"),
    # 5 tiles of 64x128, 25 K-tiles each: every tile cut between ~25 blocks
    pytest.param(dict(N=8, C=64, K=64, H=14, W=14, R=3, S=3, pad_h=1, pad_w=1), id="few-tiles"),
    # C = 96 padded to 128 channels a tap: 1 x 9 tiles of 64x128, 25 K-tiles each
    pytest.param(dict(N=8, C=96, K=64, H=14, W=14, R=3, S=3, pad_h=1, pad_w=1), id="padded"),
    # 2 x 5 tiles of 128x256, 20 K-tiles each: 200 iterations over 132 blocks
    # (one or two each) cut the tiles at uneven places
    pytest.param(dict(N=20, C=128, K=256, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1), id="cuts"),
    # 8 x 18 tiles of 128x256 (more than blocks), 2 K-tiles each: 288
    # iterations over 132 blocks, most tiles whole, the others cut in two
    pytest.param(dict(N=2, C=512, K=1024, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1),
                 id="mostly-whole"),
]


@pytest.fixture
def hopper_ng(gpu_ng):
    skip_if_no_gpu()
    if gpu_ng.arch != "sm_90":
        pytest.skip("the implicit-GEMM convolution kernels are Hopper's")
    return gpu_ng


def _forced(monkeypatch, ng, schedule):
    """Record new plans with ``schedule`` (STREAM_K or a split count)."""
    monkeypatch.setattr(plans, "choose_schedule", lambda *args: schedule)
    ng._conv_plans.clear()


@pytest.mark.parametrize("schedule", [plans.STREAM_K, 1, 3], ids=["stream-k", "whole", "split3"])
@pytest.mark.parametrize("kw", CASES)
def test_forced_schedule_matches_loops(hopper_ng, monkeypatch, kw, schedule):
    ng = hopper_ng
    _forced(monkeypatch, ng, schedule)
    dtype = BF16 if kw["C"] in (96, 128) else F16
    _check_updates(ng, ng.conv_layer(dtype, **kw), 21)
    assert (ng.last_gemm.zero is not None) == (schedule == plans.STREAM_K)


def _check_updates(ng, layer, seed, name_has=""):
    """Two filter gradients against the loops, alpha = 1 and then alpha,
    beta = 0.5, 2 (the second call replays the recorded plan), each on a
    kernel whose name has ``name_has``."""
    rng = np.random.default_rng(seed)
    dtype = layer.dtype
    for alpha, beta in [(1.0, 0.0), (0.5, 2.0)]:
        (I, vi), (E, ve), (G, vg) = (data(ng, rng, d, dtype) for d in
                                     (layer.dimI, layer.dimO, layer.dimF))
        ng.update_conv(layer, I, E, G, alpha=alpha, beta=beta)
        check(G, alpha * naive_conv(layer, "update", vi, ve) + beta * vg, dtype)
        assert name_has in ng.last_gemm.name


@pytest.mark.parametrize("kw", [CASES[1], CASES[3]])  # (not "padded": it copies after the kernel)
def test_stream_k_is_deterministic_and_replays(hopper_ng, monkeypatch, kw):
    """The same bits on every run, and after a replay of the launch (whose
    flags are zeroed again first: stale flags would release the wait early)."""
    ng = hopper_ng
    _forced(monkeypatch, ng, plans.STREAM_K)
    layer = ng.conv_layer(F16, **kw)
    rng = np.random.default_rng(22)
    (I, vi), (E, ve) = (data(ng, rng, d, F16) for d in (layer.dimI, layer.dimO))
    G = ng.empty(layer.dimF, F16)
    ng.update_conv(layer, I, E, G)
    check(G.get(), naive_conv(layer, "update", vi, ve), F16)
    _same_bits_again(ng, G, lambda: ng.update_conv(layer, I, E, G))


#: the filter gradient's multicast pairs (128x256 tiles, two blocks of a
#: cluster on adjacent tile rows) besides CASES' "cuts" and "mostly-whole"
PAIR_CASES = [
    # 2 tile rows, the second part-filled: one pair per column
    pytest.param(dict(N=4, C=128, K=200, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1), id="part-filled"),
    # 3 tile rows: no pairs
    pytest.param(dict(N=4, C=64, K=384, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1), id="odd-rows"),
    CASES[3], CASES[4],
]


@pytest.mark.parametrize("paired", [True, False], ids=["pairs", "no-pairs"])
@pytest.mark.parametrize("schedule", [plans.STREAM_K, 1, 3], ids=["stream-k", "whole", "split3"])
@pytest.mark.parametrize("kw", PAIR_CASES)
def test_update_pairs_match_loops(hopper_ng, monkeypatch, kw, schedule, paired):
    ng = hopper_ng
    monkeypatch.setattr(plans, "PAIRED_UPDATE", paired)
    _forced(monkeypatch, ng, schedule)
    _check_updates(ng, ng.conv_layer(F16, **kw), 23)
    pairs = paired and -(-kw["K"] // 128) % 2 == 0
    assert ng.last_gemm.cluster == (2 if pairs else 1)
    assert ng.last_gemm.name.endswith("_mc2") == pairs


#: filter gradients on 128x192 tiles (columns a multiple of 192, not of 256)
WIDE_CASES = [
    # 576 columns (VGG-A conv2's, small): 3 tiles, 9 K-tiles each
    pytest.param(dict(N=4, C=64, K=128, H=12, W=12, R=3, S=3, pad_h=1, pad_w=1), id="576"),
    # 2 x 3 tiles (GoogLeNet conv3's channels, small), the second row part-filled
    pytest.param(dict(N=2, C=64, K=192, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1), id="2x3"),
    # C = 96 padded to 128 a tap: 6 tiles of an fp32 result
    pytest.param(dict(N=6, C=96, K=128, H=10, W=10, R=3, S=3, pad_h=1, pad_w=1), id="padded"),
]


@pytest.mark.parametrize("schedule", [plans.STREAM_K, 1, 3], ids=["stream-k", "whole", "split3"])
@pytest.mark.parametrize("kw", WIDE_CASES)
def test_update_192_wide_tiles_match_loops(hopper_ng, monkeypatch, kw, schedule):
    ng = hopper_ng
    _forced(monkeypatch, ng, schedule)
    dtype = BF16 if kw["C"] == 96 else F16
    _check_updates(ng, ng.conv_layer(dtype, **kw), 26, "_128x192x64_")


def _same_bits_again(ng, out, run):
    """``out`` holds the same bits after replays of the last launch and new
    runs of ``run``, each on a zeroed ``out``."""
    first = out.get()
    for _ in range(3):
        out[:] = 0
        ng.last_gemm.replay()
        np.testing.assert_array_equal(out.get(), first)
        out[:] = 0
        run()
        np.testing.assert_array_equal(out.get(), first)


#: fprop / bprop layers (C, K multiples of 64) under a forced stream-K on 128x256 tiles
FPROP_CASES = [
    # 10 tiles (n = 256), 18 K-tiles each: 180 iterations over 132 blocks, cut unevenly
    pytest.param(dict(N=20, C=128, K=256, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1), id="cuts"),
    # 4 tiles of 72 K-tiles: each cut between about three blocks; K-tiles
    # of bprop (C = 512 filters' channels) likewise
    pytest.param(dict(N=2, C=512, K=512, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1), id="shared"),
    # 324 tiles (2.5 waves), 4 K-tiles each: the first wave's 132 tiles run
    # whole, then 768 iterations of the other 192 are shared
    pytest.param(dict(N=8, C=256, K=256, H=72, W=72), id="whole-waves"),
]


def _forced_fprop(monkeypatch, ng, stream_k, tile=(128, 256)):
    """Record new fprop / bprop plans on ``tile``, stream-K or not."""
    monkeypatch.setattr(plans, "choose_fprop", lambda *args: (plans._config(*tile), stream_k))
    ng._conv_plans.clear()


@pytest.mark.parametrize("kw", FPROP_CASES)
@pytest.mark.parametrize("relu, with_bias", [(False, False), (True, True)], ids=["plain", "bias-relu"])
def test_stream_k_fprop_matches_loops(hopper_ng, monkeypatch, kw, relu, with_bias):
    """Every block's share of the K-tiles, the cut tiles' partial sums added
    by the block finishing them, then the epilogue (alpha, bias, relu; beta
    on the second call, which replays the plan)."""
    ng = hopper_ng
    _forced_fprop(monkeypatch, ng, True)
    layer = ng.conv_layer(F16, **kw)
    rng = np.random.default_rng(23)
    (I, vi), (F, vf), (b, vb) = (data(ng, rng, d, F16) for d in (layer.dimI, layer.dimF, (layer.K,)))
    conv = naive_conv(layer, "fprop", vi, vf)
    for alpha, beta in [(1.0, 0.0), (0.5, 2.0)]:
        O, vo = data(ng, rng, layer.dimO, F16)  # noqa: E741
        ref = alpha * conv + (vb if with_bias else 0)
        ref = (np.maximum(ref, 0) if relu else ref) + beta * vo  # beta after the relu
        ng.fprop_conv(layer, I, F, O, alpha=alpha, beta=beta, relu=relu, bias=b if with_bias else None)
        check(O, ref, F16)
        assert ng.last_gemm.zero is not None


@pytest.mark.parametrize("kw", FPROP_CASES)
def test_stream_k_bprop_matches_loops(hopper_ng, monkeypatch, kw):
    ng = hopper_ng
    _forced_fprop(monkeypatch, ng, True)
    layer = ng.conv_layer(BF16, **kw)
    rng = np.random.default_rng(24)
    (F, vf), (E, ve) = (data(ng, rng, d, BF16) for d in (layer.dimF, layer.dimO))
    grad = naive_conv(layer, "bprop", vf, ve)
    for alpha, beta in [(1.0, 0.0), (0.5, 2.0)]:
        G, vg = data(ng, rng, layer.dimI, BF16)
        ng.bprop_conv(layer, F, E, G, alpha=alpha, beta=beta)
        check(G, alpha * grad + beta * vg, BF16)
        assert ng.last_gemm.zero is not None


def test_stream_k_fprop_is_deterministic_and_matches_data_parallel(hopper_ng, monkeypatch):
    """The same bits on every run and after a replay of the launch; within
    a rounding of the data-parallel schedule's result."""
    ng = hopper_ng
    layer = ng.conv_layer(F16, **FPROP_CASES[1].values[0])
    rng = np.random.default_rng(25)
    (I, vi), (F, vf) = (data(ng, rng, d, F16) for d in (layer.dimI, layer.dimF))
    O = ng.empty(layer.dimO, F16)  # noqa: E741
    _forced_fprop(monkeypatch, ng, False)
    ng.fprop_conv(layer, I, F, O)
    whole = O.get()
    _forced_fprop(monkeypatch, ng, True)
    ng.fprop_conv(layer, I, F, O)
    check(O.get(), whole.astype(np.float64), F16)
    _same_bits_again(ng, O, lambda: ng.fprop_conv(layer, I, F, O))


@pytest.mark.parametrize("stream_k", [False, True], ids=["whole", "stream-k"])
@pytest.mark.parametrize("kind", ["fprop", "bprop"])
@pytest.mark.parametrize("tile", [(256, 128), (256, 96), (256, 64)], ids=lambda t: f"{t[0]}x{t[1]}")
def test_256_row_tiles(hopper_ng, monkeypatch, tile, kind, stream_k):
    """fprop (bias, relu) and bprop (beta) of 200 filters / channels over
    576 positions on forced 256-row tiles: the last tile across and the
    last one down part-empty (a 96-wide tile's B arriving as 64-wide
    panels, the last one half used); under stream-K the 81 K-tile
    iterations go one to a block, each tile cut between nine blocks, each
    of its two warpgroups' 64-row parts finished separately."""
    ng = hopper_ng
    _forced_fprop(monkeypatch, ng, stream_k, tile)
    C, K = (64, 200) if kind == "fprop" else (200, 64)
    layer = ng.conv_layer(F16, 4, C, K, H=12, W=12, R=3, S=3, pad_h=1, pad_w=1)
    rng = np.random.default_rng(26)
    shapes = (layer.dimI, layer.dimF) if kind == "fprop" else (layer.dimF, layer.dimO)
    (a, va), (b, vb) = (data(ng, rng, d, F16) for d in shapes)
    ref = naive_conv(layer, kind, va, vb)
    out, vo = data(ng, rng, ref.shape, F16)
    if kind == "fprop":
        bias, vbias = data(ng, rng, (K,), F16)
        ng.fprop_conv(layer, a, b, out, alpha=0.5, relu=True, bias=bias)
        check(out, np.maximum(0.5 * ref + vbias, 0), F16)
    else:
        ng.bprop_conv(layer, a, b, out, alpha=0.5, beta=2.0)
        check(out, 0.5 * ref + 2.0 * vo, F16)
    assert f"_{tile[0]}x{tile[1]}x64_f16_{kind}" in ng.last_gemm.name
    assert (ng.last_gemm.zero is not None) == stream_k


#: layers on forced 128x128 data-parallel tiles (the ping-pong kernels)
PINGPONG_CASES = [
    # one tile: the second warpgroup never runs
    pytest.param(dict(N=1, C=64, K=64, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1), id="one-tile"),
    # 3 tiles (the last part-filled down, 72 columns: part-filled across)
    pytest.param(dict(N=5, C=64, K=72, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1), id="three-tiles"),
    # 648 tiles, 4 or 5 a block: blocks ending on either warpgroup
    FPROP_CASES[2],
    # 4 x 2 tiles of 72 K-tiles
    FPROP_CASES[1],
]


@pytest.mark.parametrize("kw", PINGPONG_CASES)
@pytest.mark.parametrize("kind", ["fprop", "bprop"])
def test_ping_pong_tiles_match_loops(hopper_ng, monkeypatch, kw, kind):
    """Each consumer warpgroup a whole 128x128 tile, the two in turn: fprop
    with bias and relu, bprop with beta (the second call replays the plan),
    and the same bits run after run."""
    ng = hopper_ng
    monkeypatch.setattr(plans, "PINGPONG_MIN_TILES", 0)
    _forced_fprop(monkeypatch, ng, False, (128, 128))
    dtype = BF16 if kind == "bprop" else F16
    layer = ng.conv_layer(dtype, **kw)
    rng = np.random.default_rng(27)
    shapes = (layer.dimI, layer.dimF) if kind == "fprop" else (layer.dimF, layer.dimO)
    (a, va), (b, vb), (bias, vbias) = (data(ng, rng, d, dtype) for d in (*shapes, (layer.K,)))
    conv = naive_conv(layer, kind, va, vb)
    out_dims = layer.dimO if kind == "fprop" else layer.dimI

    def run(out, alpha, beta):
        if kind == "fprop":
            ng.fprop_conv(layer, a, b, out, alpha=alpha, beta=beta, relu=True, bias=bias)
        else:
            ng.bprop_conv(layer, a, b, out, alpha=alpha, beta=beta)

    for alpha, beta in [(1.0, 0.0), (0.5, 2.0)]:
        out, vo = data(ng, rng, out_dims, dtype)
        run(out, alpha, beta)
        ref = np.maximum(alpha * conv + vbias, 0) if kind == "fprop" else alpha * conv
        check(out, ref + beta * vo, dtype)
        assert ng.last_gemm.name.endswith(f"_{kind}_pp")
    run(out, 1.0, 0.0)
    _same_bits_again(ng, out, lambda: run(out, 1.0, 0.0))


#: fprop layers of 97 to 128 filters over at least a wave of 128x256 tiles
TRANSPOSED_CASES = [
    # 104 filters (a part-empty tile of rows), C = 24 (one padded chunk a
    # tap), 34,596 positions (the last tile part-empty)
    pytest.param(dict(N=4, C=24, K=104, H=93, W=93, R=3, S=3, pad_h=1, pad_w=1), id="ragged"),
    # stride 2 and a 5x5 window: 35,344 positions, 25 taps of 2 chunks
    pytest.param(dict(N=16, C=72, K=128, H=93, W=93, R=5, S=5, pad_h=2, pad_w=2, str_h=2,
                      str_w=2), id="strided"),
]


@pytest.mark.parametrize("kw", TRANSPOSED_CASES)
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_transposed_fprop_matches_loops(hopper_ng, kw, dtype):
    """The filters as the tile's rows, the output stored transposed: a bias
    (of the layer's dtype) along the rows, then alpha, a bias of another
    dtype and relu, into an output that is a channel slice of a wider
    tensor; the same bits again."""
    ng = hopper_ng
    layer = ng.conv_layer(dtype, **kw)
    rng = np.random.default_rng(29)
    (I, vi), (F, vf), (b16, vb16) = (data(ng, rng, d, dtype)
                                     for d in (layer.dimI, layer.dimF, (layer.K,)))
    bias, vbias = data(ng, rng, (layer.K,), np.float32)
    conv = naive_conv(layer, "fprop", vi, vf)
    O = ng.empty(layer.dimO, dtype)
    ng.fprop_conv(layer, I, F, O, bias=b16)
    assert ng.last_gemm.name.endswith("_fprop_t")
    check(O, conv + vb16, dtype)
    wide = ng.zeros(layer.dimO[:-1] + (layer.K + 16,), dtype)
    part = wide[..., 8:8 + layer.K]
    ng.fprop_conv(layer, I, F, part, alpha=0.5, relu=True, bias=bias)
    assert ng.last_gemm.name.endswith("_fprop_t")
    check(part, np.maximum(0.5 * conv + vbias, 0), dtype)
    assert not wide[..., :8].get().any() and not wide[..., 8 + layer.K:].get().any()
    _same_bits_again(ng, part, lambda: ng.fprop_conv(layer, I, F, part, alpha=0.5, relu=True,
                                                     bias=bias))

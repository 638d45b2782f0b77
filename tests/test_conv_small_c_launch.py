"""The small-C convolution route up to the driver calls, without a GPU.

On test_conv_launch's recording GPU (Ampere- and Hopper-class) the first
layers' passes launch kernels/conv_small_c.cu's kernels: which kernels,
grids and shared memory, the SmallCArgs (SmallCBpropArgs) handed over --
sizes, geometry, the multiply-shift divisors -- and that a second call
replays the recorded launches with its own pointers and scalars; fp32's
fprop on its FFMA kernel.  Layers the route does not take (float32's
update and bprop, and its fprop of C > 4 or of one block an SM; C > 4 --
fprop and bprop: C > 16, or more than one 64-filter chunk --, bprop
above stride 2 or dilated) launch no small-C kernel.
"""
import numpy as np
import pytest

from gpuarray.conv import small_c
from test_conv_launch import _gpu, _names, _tensors
from test_gemm_plan import tensor_maps  # noqa: F401

#: GoogLeNet's conv1 at batch 2: 7x7, stride 2, 98 tiles an image
LAYER = dict(N=2, C=3, K=64, H=224, W=224, R=7, S=7, pad_h=3, pad_w=3, str_h=2, str_w=2)
_INT_FIELDS = ("N H W C K P Q R S str_h str_w pad_h pad_w dil_h dil_w RSC KW ld tiles halo_rows "
               "pitch lead row_elems vec bias_kind bias_stride relu kchunks jw blocks jchunks").split()
_BPROP_FIELDS = ("N H W C K P Q R S str_h str_w pad_h pad_w dil_h dil_w ld kp tiles_h tiles_w "
                 "halo_rows halo_cols dr_lo ds_lo").split()


def _fields(args, bprop=False):
    """The arguments as a dict: pointers, scalars, ints and the divisors' d."""
    fmt, names = (small_c.BPROP_ARGS, _BPROP_FIELDS) if bprop else (small_c.ARGS, _INT_FIELDS)
    assert len(args) == fmt.size
    raw = fmt.unpack(args)
    out = dict(zip(("a", "b", "out", "extra", "alpha", "beta"), raw[:6]))
    out.update(zip(names, raw[6:6 + len(names)]))
    out["divisors"] = raw[6 + len(names) + 2::3]
    return out


def _small(launches):
    return [e for e in launches if isinstance(e[0], str) and e[0].startswith("ga_small_c")]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_fprop_is_one_launch_with_its_epilogue(tensor_maps, arch):  # noqa: F811
    ng = _gpu(arch)
    layer = ng.conv_layer(np.float16, **LAYER)
    I, F, O = _tensors(ng, layer, "fprop")  # noqa: E741
    bias = ng.empty((64,), np.float32)
    ng.fprop_conv(layer, I, F, O, alpha=0.5, beta=2.0, relu=True, bias=bias)
    (name, grid, block, args, smem), = ng.launches
    f = _fields(args)
    geo = small_c.geometry(layer)
    assert name == "ga_small_c_fprop_f16" and block == (128, 1, 1)
    assert smem == small_c.smem_bytes("fprop", geo) and smem <= 113 * 1024
    assert grid == (min(2 * 98, 132 * 3), 1, 1)
    assert (f["a"], f["b"], f["out"], f["extra"]) == (I.ptr, F.ptr, O.ptr, bias.ptr)
    assert (f["alpha"], f["beta"], f["relu"], f["bias_kind"]) == (0.5, 2.0, 1, 1)
    assert (f["P"], f["Q"], f["RSC"], f["KW"], f["ld"], f["tiles"]) == (112, 112, 147, 160, 64, 98)
    # a tile of 128 positions spans up to 3 output rows: (3-1)*2 + 7 input rows
    assert (f["halo_rows"], f["lead"], f["row_elems"], f["vec"]) == (11, 7, 672, 1)
    assert f["pitch"] % 8 == 0 and (f["lead"] + 3 * 3) % 8 == 0
    assert f["divisors"] == (112, 98, f["pitch"] // 8, 2 * 98)


def test_fp32_fprop_runs_the_ffma_kernel(tensor_maps):  # noqa: F811
    ng = _gpu("sm_90")
    layer = ng.conv_layer(np.float32, **LAYER)
    I, F, O = _tensors(ng, layer, "fprop")  # noqa: E741
    ng.fprop_conv(layer, I, F, O, relu=True)
    (name, grid, block, args, smem), = ng.launches
    f = _fields(args)
    geo = small_c.geometry(layer)
    assert name == "ga_small_c_fprop_f32" and block == (128, 1, 1)
    # the halo in 4-float pieces: 11 rows, column -3 (9 floats in) on a piece boundary
    assert (f["halo_rows"], f["lead"], f["row_elems"]) == (11, 3, 672)
    assert f["pitch"] % 4 == 0 and (f["lead"] + 3 * 3) % 4 == 0
    assert f["divisors"] == (112, 98, f["pitch"] // 4, 2 * 98)
    # the fp32 halo, the filters [147][64] and a tap table: 3 blocks an SM fit
    assert smem == small_c.smem_bytes("fprop_f32", geo) == 11 * f["pitch"] * 4 + 147 * 65 * 4
    assert 3 * (smem + 1024) <= 228 * 1024 < 4 * (smem + 1024)
    assert grid == (min(2 * 98, 132 * 3), 1, 1)
    assert (f["a"], f["b"], f["out"], f["relu"], f["bias_kind"]) == (I.ptr, F.ptr, O.ptr, 1, 0)


def test_update_is_partial_sums_then_their_ordered_sum(tensor_maps):  # noqa: F811
    ng = _gpu("sm_90")
    layer = ng.conv_layer(np.float16, **LAYER)
    I, E, G = _tensors(ng, layer, "update")  # noqa: E741
    ng.update_conv(layer, I, E, G, alpha=2.0, beta=0.25)
    (update, ugrid, _, uargs, _), (reduce, rgrid, rblock, rargs, rsmem) = ng.launches
    u, r = _fields(uargs), _fields(rargs)
    jchunks, nj = small_c.update_split(160)
    assert (jchunks, nj) == (1, 5)  # 160 taps: 4 warps x 5 n8 tiles
    assert update == "ga_small_c_update_f16_j5" and reduce == "ga_small_c_reduce_f16"
    # one block a tile: 196 tiles, fewer than 132 x 3 resident blocks
    assert ugrid == (196, 1, 1) and (u["jw"], u["blocks"], u["jchunks"]) == (160, 196, 1)
    assert rgrid == (-(-64 * 147 // 32), 1, 1) and rblock == (256, 1, 1) and rsmem == 0
    # the partial sums: one workspace, written by the first kernel, read by the second
    assert u["out"] == r["out"] and u["out"] not in (I.ptr, E.ptr, G.ptr)
    assert (u["a"], u["b"], r["extra"], r["alpha"], r["beta"]) == (I.ptr, E.ptr, G.ptr, 2.0, 0.25)


def test_bprop_tiles_every_phase_of_the_stride(tensor_maps):  # noqa: F811
    ng = _gpu("sm_90")
    layer = ng.conv_layer(np.float16, **LAYER)
    F, E, G = _tensors(ng, layer, "bprop")
    ng.bprop_conv(layer, F, E, G, alpha=-1.0)
    (name, grid, _, args, smem), = ng.launches
    f = _fields(args, bprop=True)
    assert name == "ga_small_c_bprop_f16"
    assert (f["a"], f["b"], f["out"], f["alpha"], f["beta"]) == (E.ptr, F.ptr, G.ptr, -1.0, 0.0)
    # 112 x 112 positions a phase in 16 x 16 tiles; the errors of every phase:
    # offsets -1 .. 2 along each axis (7 taps at stride 2, padding 3)
    assert (f["tiles_h"], f["tiles_w"], f["dr_lo"], f["ds_lo"]) == (7, 7, -1, -1)
    assert (f["halo_rows"], f["halo_cols"], f["kp"]) == (19, 19, 64)
    assert grid == (min(2 * 49, 132 * 4), 1, 1)
    assert smem == (19 * 19 + 147) * 72 * 2 + small_c.PHASE_TABLE_BYTES
    assert f["divisors"] == (49, 7, 8, 19)


@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
def test_second_call_replays_with_its_own_pointers(tensor_maps, kind):  # noqa: F811
    ng = _gpu("sm_90")
    layer = ng.conv_layer(np.float16, **LAYER)
    call = getattr(ng, f"{kind}_conv")
    call(layer, *_tensors(ng, layer, kind), alpha=1.0)
    first = list(ng.launches)
    ng.launches.clear()
    tensors = _tensors(ng, layer, kind)
    call(layer, *tensors, alpha=3.0, beta=0.5)
    again = list(ng.launches)
    assert [e[:3] + e[4:] for e in again] == [e[:3] + e[4:] for e in first]
    bprop = kind == "bprop"
    for (_, _, _, new, _), (_, _, _, old, _) in zip(again, first):
        new_f, old_f = _fields(new, bprop), _fields(old, bprop)
        assert (new_f["alpha"], new_f["beta"]) == (3.0, 0.5)
        assert {k: v for k, v in new_f.items() if k not in ("a", "b", "out", "extra", "alpha", "beta")} == \
            {k: v for k, v in old_f.items() if k not in ("a", "b", "out", "extra", "alpha", "beta")}
    a, b, out = tensors
    got = _fields(again[0][3], bprop)
    expect = {"fprop": (a.ptr, b.ptr), "bprop": (b.ptr, a.ptr), "update": (a.ptr, b.ptr)}[kind]
    assert (got["a"], got["b"]) == expect
    assert len(ng._conv_plans) == 1


@pytest.mark.parametrize("dtype, kw, kind", [
    (np.float32, LAYER, "update"),
    (np.float32, LAYER, "bprop"),
    (np.float32, dict(LAYER, C=5, K=32), "fprop"),
    (np.float16, dict(LAYER, C=5), "update"),
    (np.float16, dict(LAYER, C=5, K=72), "bprop"),
    (np.float16, dict(LAYER, C=17, K=32), "fprop"),
    (np.float16, dict(LAYER, C=5, K=72), "fprop"),
    (np.float16, dict(LAYER, str_h=4, str_w=4), "bprop"),
    (np.float16, dict(LAYER, dil_h=2), "bprop"),
    (np.float16, dict(LAYER, K=60), "update"),
])
def test_layers_the_route_does_not_take(tensor_maps, dtype, kw, kind):  # noqa: F811
    """float32's update and bprop, and its fprop of C > 4 or where a block's
    shared memory leaves no room for a second; C > 4 (fprop and bprop: C >
    16, or C > 4 with more than one 64-filter chunk); K % 8 != 0; and the
    data gradient above stride 2 or dilated along h take the gather route."""
    ng = _gpu("sm_80")
    layer = ng.conv_layer(dtype, **dict(kw, N=1, H=20, W=20))
    getattr(ng, f"{kind}_conv")(layer, *_tensors(ng, layer, kind))
    assert _small(ng.launches) == [] and _names(ng)


def test_fp32_fprop_needs_room_for_two_blocks(tensor_maps):  # noqa: F811
    """AlexNet's conv1 (11x11 at stride 4): its fp32 halo (23 rows) and
    filters ([363][64]) would hold one block an SM: the gather route."""
    ng = _gpu("sm_90")
    layer = ng.conv_layer(np.float32, **dict(LAYER, N=1, R=11, S=11, str_h=4, str_w=4,
                                             pad_h=2, pad_w=2))
    assert small_c.smem_bytes("fprop_f32", small_c.geometry(layer)) > 114 * 1024
    ng.fprop_conv(layer, *_tensors(ng, layer, "fprop"))
    assert _small(ng.launches) == [] and _names(ng)


@pytest.mark.parametrize("C, K", [(5, 64), (16, 32), (16, 48)])
def test_fprop_takes_up_to_16_channels_with_one_filter_chunk(tensor_maps, C, K):  # noqa: F811
    """GoogLeNet's C = 16 5x5 layers (K = 32, 48) run fprop here: the whole
    filter bank is one block's chunk."""
    ng = _gpu("sm_80")
    layer = ng.conv_layer(np.float16, N=1, C=C, K=K, H=14, W=14, R=5, S=5, pad_h=2, pad_w=2)
    ng.fprop_conv(layer, *_tensors(ng, layer, "fprop"))
    assert [e[0] for e in _small(ng.launches)] == ["ga_small_c_fprop_f16"]


def test_misaligned_output_rows_take_the_gather_route(tensor_maps):  # noqa: F811
    """fprop stores 16-byte pieces: an output channel slice whose rows start
    off a 16-byte boundary goes the other way."""
    ng = _gpu("sm_80")
    layer = ng.conv_layer(np.float16, **dict(LAYER, N=1, H=20, W=20, K=8))
    I, F, _ = _tensors(ng, layer, "fprop")  # noqa: E741
    wide = ng.empty(layer.dimO[:4] + (12,), np.float16)
    ng.fprop_conv(layer, I, F, wide[..., 2:10])
    assert _small(ng.launches) == []


@pytest.mark.parametrize("C, K, R, N, name", [
    (4, 8, 3, 1, "ga_small_c_bprop_f16"), (9, 8, 3, 264, "ga_small_c_bprop_c16_f16"),
    (16, 64, 5, 264, "ga_small_c_bprop_c16_f16"), (16, 64, 5, 263, None), (4, 8, 5, 264, None),
    (8, 8, 3, 264, None), (17, 8, 3, 264, None), (16, 72, 3, 264, None)])
def test_data_gradient_takes_one_or_two_channel_groups(tensor_maps, C, K, R, N, name):  # noqa: F811
    """bprop's mma tiles are 8 channels wide: C <= 4 one group (up to 4
    filter rows a phase), 9-16 two (the _c16 kernels, up to 5 rows:
    GoogLeNet's 5x5 layers at stride 1) where their tiles fill the 132 SMs
    twice (one 16 x 16 tile an image here) and the filters are one
    64-filter chunk; 5-8 channels (unmeasured) and past these the data
    gradient goes another way."""
    ng = _gpu("sm_80")
    layer = ng.conv_layer(np.float16, N=N, C=C, K=K, H=12, W=12, R=R, S=R, pad_h=R // 2,
                          pad_w=R // 2)
    ng.bprop_conv(layer, *_tensors(ng, layer, "bprop"))
    assert [e[0] for e in _small(ng.launches)] == ([name] if name else [])

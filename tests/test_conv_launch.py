"""GPU convolution up to the driver calls, on machines without a GPU.

A GPU factory whose driver is a recorder (see test_gemm_plan): every
launch is logged -- the gathers of kernels/conv_im2col.cu with their
ConvArgs unpacked, and the GEMMs with their GemmArgs -- and checked: the
sequence per pass (gather, GEMM, scatter), the kernel picked (element
size, channels per thread), the pointers and sizes handed over, and the
batch split into chunks when one call's gather buffer would exceed the
workspace budget.  On Hopper, eligible fp16/bf16 layers take the
implicit-GEMM kernel instead: its plan (kernel, grid, GemmArgs, ConvGeom,
both descriptors' geometry) is checked, and its replay.  The small-C
kernels' launches are recorded raw (test_conv_small_c_launch checks them).
"""

import numpy as np
import pytest

from gpuarray.conv import convolution, fastdiv, implicit_plan as plans, small_c
from gpuarray.cuda import tensor_maps as cuda_tensor_maps
from gpuarray.gemm import catalogue as gk, replay
from test_gemm_plan import FIELDS as GEMM_FIELDS, GemmRecordingGPU, tensor_maps  # noqa: F401

FIELDS = "src dst N size out filter stride pad dil C ld alpha beta".split()


def _unpack(raw):
    args = dict(zip(FIELDS[:3], raw[:3]))
    for i, name in enumerate(FIELDS[3:9]):
        args[name] = raw[3 + 3 * i:6 + 3 * i]
    args["C"], args["ld"], args["alpha"], args["beta"] = raw[21:25]
    args["divisors"] = raw[27::3]  # each FastDiv's d (magic and shift checked in test_pool_launch)
    return args


class _Kernel:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def launch(self, grid, block, data, shared):
        raw = convolution.ARGS.unpack(bytes(data))
        self.log.append((self.name, grid, block, _unpack(raw), shared))


class _RawKernel:
    """Records a launch with its raw argument bytes (the small-C kernels'
    SmallCArgs); as where the compiled launch entry is not built, it has
    no patched launch."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def launch(self, grid, block, data, shared):
        self.log.append((self.name, grid, block, bytes(data), shared))

    def patched_launch(self, grid, block, template, holes, smem=0):
        return None


class _Library:
    def __init__(self, log):
        self.log = log

    def function(self, stem, name, smem=0):
        if stem == small_c.STEM:
            return _RawKernel(name, self.log)
        assert stem == convolution.STEM
        return _Kernel(name, self.log)


class _UnpackedKernel:
    """Records a launch with its packed arguments unpacked into a dict."""

    def __init__(self, name, log, fields, args):
        self.name, self.log, self.fields, self.args = name, log, fields, args

    def launch(self, grid, block, data, shared):
        values = dict(zip(self.fields, self.args.unpack(bytes(data))))
        self.log.append((self.name, grid, block, values, shared))


class _RouteLibrary(_Library):
    """The gather route's recorder, with the kernels of module ``stem`` (a
    transform route's) recorded with their arguments unpacked by the
    struct ``args`` into ``fields``."""

    def __init__(self, log, stem, fields, args):
        super().__init__(log)
        self.route = (stem, fields, args)

    def function(self, stem, name, smem=0):
        if stem == self.route[0]:
            return _UnpackedKernel(name, self.log, *self.route[1:])
        return super().function(stem, name, smem)


def route_steps(ng, prefix):
    """``(name less prefix, grid, block, arguments)`` for each launch of a
    kernel named ``prefix...``, "gemm" for each run of other launches."""
    steps = []
    for name, grid, block, *rest in ng.launches:
        if isinstance(name, str) and name.startswith(prefix):
            steps.append((name[len(prefix):], grid, block, rest[0]))
        elif not steps or steps[-1] != "gemm":
            steps.append("gemm")
    return steps


class _ConvGemmKernel:
    """Records a conv_sm90 launch with its raw ConvGemmArgs bytes."""

    size, dependent = 1, False

    def __init__(self, name, log):
        self.name, self.log = name, log

    def launch(self, grid, block, data, shared):
        assert len(data) == plans.ARGS_BYTES
        assert grid[0] % self.size == 0
        # every conv_sm90 kernel waits for the kernel before it itself
        assert self.dependent == replay.DEPENDENT_LAUNCH
        self.log.append((self.name, grid, block, bytes(data), shared))

    def clustered(self, size, dependent=False):
        kernel = _ConvGemmKernel(self.name, self.log)
        kernel.size, kernel.dependent = size, dependent
        return kernel

    def max_active(self, block, smem):
        return 66  # an H100's clusters of two one-block-per-SM kernels


class _ConvGemmLibrary:
    """conv_sm90's kernels recorded raw; the GEMM families to ``gemm``'s recorder."""

    def __init__(self, log, gemm):
        self.log, self.gemm = log, gemm

    def function(self, stem, name, smem):
        if stem != plans.STEM:
            return self.gemm.function(stem, name, smem)
        return _ConvGemmKernel(name, self.log)


class _Im2colRecorder(list):
    def encode(self, ptr, *geometry):
        self.append((ptr,) + geometry)
        return bytes(128)


@pytest.fixture
def im2col_maps(monkeypatch):
    """Records cuTensorMapEncodeIm2col calls instead of making them (no libcuda here)."""
    calls = _Im2colRecorder()
    monkeypatch.setattr(cuda_tensor_maps, "encode_im2col", calls.encode)
    return calls


def _gpu(arch):
    gpu = GemmRecordingGPU(arch)
    gpu.conv_library = _Library(gpu.launches)
    gpu.smem_optin = 227 * 1024  # an H100's opt-in shared memory a block
    return gpu


@pytest.fixture
def ng(tensor_maps):  # noqa: F811 - the fixture imported above
    """An Ampere-class recorder: every layer takes the gather + GEMM route."""
    return _gpu("sm_80")


@pytest.fixture
def hopper(tensor_maps, im2col_maps):  # noqa: F811
    """A Hopper recorder: eligible layers take the implicit-GEMM kernel."""
    gpu = _gpu("sm_90")
    gpu.gemm_library = _ConvGemmLibrary(gpu.launches, gpu.gemm_library)
    return gpu


def _names(ng):
    """Kernel names of the recorded launches ("fused" for generated kernels)."""
    return [entry[0] if isinstance(entry[0], str) else "fused" for entry in ng.launches]


def _gathers(ng):
    return _gathers_of(ng.launches)


def _gathers_of(launches):
    return [entry for entry in launches
            if isinstance(entry[0], str) and entry[0].startswith(("ga_im2col", "ga_col2im"))]


#: K > 64 keeps fprop off the small-C kernels (they take C <= 16 there)
LAYER = dict(N=4, C=8, K=72, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1, str_w=2)


def _tensors(ng, layer, kind):
    dims = {"fprop": (layer.dimI, layer.dimF, layer.dimO),
            "bprop": (layer.dimF, layer.dimO, layer.dimI),
            "update": (layer.dimI, layer.dimO, layer.dimF)}[kind]
    return [ng.empty(d, layer.dtype) for d in dims]


@pytest.mark.parametrize("kind, sequence", [("fprop", ["im2col", "gemm"]),
                                            ("bprop", ["gemm", "col2im"]),
                                            ("update", ["im2col", "gemm"])])
def test_each_pass_is_a_gather_and_a_gemm(ng, kind, sequence):
    layer = ng.conv_layer(np.float16, **LAYER)
    a, b, out = _tensors(ng, layer, kind)
    getattr(ng, f"{kind}_conv")(layer, a, b, out)
    names = [n.split("_")[1] if n.startswith("ga_") else n for n in _names(ng)]
    assert [n for n in names if n != "splitk"] == sequence
    (name, grid, block, args, _), = _gathers(ng)
    assert block == (convolution.THREADS, 1, 1) and grid[1] == layer.N
    assert args["N"] == layer.N and args["C"] == layer.C
    assert args["size"] == (1, 9, 9) and args["out"] == (1, layer.P, layer.Q)
    assert args["filter"] == (1, 3, 3) and args["stride"] == (1, 1, 2)
    assert args["pad"] == (0, 1, 1) and args["dil"] == (1, 1, 1)
    if kind == "bprop":
        assert name == "ga_col2im_f16_v4" and args["dst"] == out.ptr
    else:
        assert name == "ga_im2col_b2_v8" and args["src"] == a.ptr


@pytest.mark.parametrize("dtype, C, name, ld, kind", [(np.float16, 16, "ga_im2col_b2_v8", 144, "fprop"),
                                                      ("bfloat16", 12, "ga_im2col_b2_n8", 112, "fprop"),
                                                      (np.float32, 12, "ga_im2col_b4_v4", 112, "fprop"),
                                                      (np.float32, 3, "ga_im2col_b4_n4", 32, "update")])
def test_gather_width_follows_the_channels(ng, dtype, C, name, ld, kind):
    """Columns per thread -- whole vectors of channels, or for C that does not
    fill one ("n") vector stores of element gathers -- and col rows padded
    to a multiple of 8 elements (9 taps x C = 108 or 27 columns would
    misalign the GEMM's operand).  (fp32's fprop of C = 3 takes the small-C
    kernel: its update gathers.)"""
    layer = ng.conv_layer(dtype, 2, C, 72, H=5, W=5, R=3, S=3)
    getattr(ng, f"{kind}_conv")(layer, *_tensors(ng, layer, kind))
    (got, grid, _, args, _), = _gathers(ng)
    vec = int(name[-1])
    per_image = layer.P * layer.Q * ld // vec
    assert got == name and args["ld"] == ld
    assert grid == (-(-per_image // convolution.THREADS), 2, 1)
    # multiply-shift divisors: a row's vectors, Q, P, C, S, R, W, H, the strides
    assert args["divisors"] == (ld // vec, 3, 3, C, 3, 3, 5, 5, 1, 1, 1)


@pytest.mark.parametrize("C, name, per_position", [(8, "ga_col2im_f16_v4", 2),
                                                   (3, "ga_col2im_f16_p", 1),
                                                   (4, "ga_col2im_f16_v4", 1),
                                                   (6, "ga_col2im_f16_v1", 6)])
def test_col2im_threads_follow_the_channels(ng, C, name, per_position):
    """Threads per input position: C / 4 (16-byte loads), one for all of
    C <= 4 channels otherwise (the first layers), else one per channel.
    (At stride 3: the small-C kernels take C <= 4 up to stride 2.)"""
    layer = ng.conv_layer(np.float16, 2, C, 8, H=9, W=9, R=3, S=3, str_h=3)
    ng.bprop_conv(layer, *_tensors(ng, layer, "bprop"))
    (got, grid, _, args, _), = _gathers(ng)
    assert got == name and args["C"] == C
    assert grid == (-(-81 * per_position // convolution.THREADS), 2, 1)
    assert args["divisors"] == (per_position, layer.Q, layer.P, C, 3, 3, 9, 9, 1, 3, 1)


@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
def test_pointwise_layers_are_one_gemm(ng, kind):
    layer = ng.conv_layer(np.float16, 2, 16, 8, H=5, W=3)
    getattr(ng, f"{kind}_conv")(layer, *_tensors(ng, layer, kind))
    assert _gathers(ng) == [] and len(ng.launches) == 1


@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
def test_batch_runs_in_chunks_that_fit_the_workspace(ng, monkeypatch, kind):
    layer = ng.conv_layer(np.float16, **LAYER)
    col_bytes = layer.P * layer.Q * 9 * layer.C * (4 if kind == "bprop" else 2)
    monkeypatch.setattr(convolution, "WORKSPACE_BYTES", 2 * col_bytes)
    a, b, out = _tensors(ng, layer, kind)
    getattr(ng, f"{kind}_conv")(layer, a, b, out)
    gathers = _gathers(ng)
    assert [g[3]["N"] for g in gathers] == [2, 2]
    image = 9 * 9 * layer.C * 2
    if kind == "bprop":
        assert [g[3]["dst"] - out.ptr for g in gathers] == [0, 2 * image]
        assert gathers[0][3]["src"] == gathers[1][3]["src"]  # one buffer, reused
    else:
        assert [g[3]["src"] - a.ptr for g in gathers] == [0, 2 * image]
    if kind == "update":
        # the chunks add up in fp32, then one fused assignment writes grad_F
        assert _names(ng)[-1] == "fused"
        assert [n.split("_")[1] for n in _names(ng)[:-1] if "splitk" not in n] == \
            ["im2col", "gemm", "im2col", "gemm"]


def test_col2im_passes_alpha_and_beta(ng):
    layer = ng.conv_layer(np.float32, **LAYER)
    F, E, G = _tensors(ng, layer, "bprop")
    ng.bprop_conv(layer, F, E, G, alpha=2.0, beta=0.5)
    (_, _, _, args, _), = _gathers(ng)
    assert (args["alpha"], args["beta"]) == (2.0, 0.5)


def test_images_too_large_for_32_bit_indexing_are_refused(ng):
    layer = ng.conv_layer(np.float16, 1, 64, 8, H=1024, W=1024, R=7, S=7, pad_h=3, pad_w=3)
    I, F, O = _tensors(ng, layer, "fprop")
    with pytest.raises(ValueError, match="im2col matrix has more than 2\\*\\*31 - 1"):
        ng.fprop_conv(layer, I, F, O)
    assert ng.launches == []


# -- the implicit-GEMM kernel (Hopper) --------------------------------------------

def _conv_launch(ng):
    (name, grid, block, args, smem), = [e for e in ng.launches
                                        if isinstance(e[0], str) and e[0].startswith("ga_conv")]
    return name, grid, block, args, smem


def test_implicit_gemm_plan(hopper, tensor_maps, im2col_maps):  # noqa: F811
    ng = hopper
    layer = ng.conv_layer(np.float16, 4, 72, 96, H=15, W=13, R=3, S=5, pad_h=1, pad_w=2,
                          str_h=2, dil_w=2)
    I, F, O = _tensors(ng, layer, "fprop")
    bias = ng.empty((96,), np.float32)
    ng.fprop_conv(layer, I, F, O, alpha=0.5, beta=2.0, relu=True, bias=bias)
    assert len(ng.launches) == 1
    name, grid, block, args, smem = _conv_launch(ng)
    assert name.startswith("ga_conv_sm90_") and name.endswith("_f16_fprop")
    fields = dict(zip(GEMM_FIELDS, gk.ARGS.unpack(args[:gk.ARGS_BYTES])))
    assert (fields["M"], fields["N"], fields["K"]) == (4 * 8 * 9, 96, 3 * 5 * 2 * 64)
    assert fields["tiles_per_split"] == 30 and fields["splits"] == 1
    assert fields["flags"] == gk.EPI_RELU | gk.EPI_BIAS | gk.EPI_BETA
    assert (fields["alpha"], fields["beta"]) == (0.5, 2.0)
    assert (fields["a"], fields["b"], fields["c"], fields["bias"]) == (I.ptr, F.ptr, O.ptr,
                                                                       bias.ptr)
    assert (fields["ldc"], fields["bias_n"], fields["bias_type"]) == (96, 1, 0)
    geom = plans.GEOM.unpack(args[gk.ARGS_BYTES:gk.ARGS_BYTES + plans.GEOM.size])
    assert geom[:12] == (layer.P, layer.Q, 3, 5, 2, 72, 2, 1, 1, 2, 1, 2)
    # the producer's multiply-shift divisions: by P*Q, Q, S, cchunks and 64 cchunks
    assert geom[12:] == tuple(field for d in (layer.P * layer.Q, layer.Q, 5, 2, 128)
                              for field in fastdiv.fast_divisor(d))
    assert len(args) == plans.ARGS_BYTES
    (ptr, dtype, dims, strides, lower, upper, channels, pixels, estrides, swizzle), = im2col_maps
    bm = int(name.split("_")[3].split("x")[0])
    assert ptr == I.ptr and dims == (72, 13, 15, 4)
    assert strides == (144, 13 * 144, 15 * 13 * 144)
    assert lower == (-2, -1) and upper == (2 - 2 * 4, 1 - 2)
    assert (channels, pixels, estrides, swizzle) == (64, bm, (1, 1, 2, 1), 128)
    (b_map,) = [m for m in tensor_maps if m["ptr"] == F.ptr]
    assert b_map["dims"] == (72, 96, 15) and b_map["strides"] == (15 * 144, 144)
    assert grid[0] <= ng.sms and smem > 200_000


def test_implicit_gemm_plan_is_replayed(hopper, tensor_maps, im2col_maps):  # noqa: F811
    ng = hopper
    layer = ng.conv_layer("bfloat16", 2, 16, 72, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1)
    I, F, O = _tensors(ng, layer, "fprop")
    ng.fprop_conv(layer, I, F, O)
    encodes = ng.stats()["tma_encodes"]
    ng.fprop_conv(layer, I, F, O)                    # same tensors: nothing re-encoded
    assert ng.stats()["tma_encodes"] == encodes and len(ng._conv_plans) == 1
    I2 = ng.empty(layer.dimI, layer.dtype)
    ng.fprop_conv(layer, I2, F, O)                   # I moved: its descriptor only
    assert ng.stats()["tma_encodes"] == encodes + 1 and im2col_maps[-1][0] == I2.ptr
    ng.fprop_conv(layer, I, F, O, relu=True)         # another epilogue: another plan
    assert len(ng._conv_plans) == 2
    names = {e[0] for e in ng.launches}
    assert len(ng.launches) == 4 and len(names) == 1 and names.pop().endswith("_bf16_fprop")


@pytest.mark.parametrize("dtype, kw", [
    (np.float32, {}),                                # fp32: not this kernel
    (np.float16, dict(C=12)),                        # C % 8
    (np.float16, dict(D=3, T=2)),                    # 3-D
    (np.float16, dict(R=3, dil_h=70, H=200)),        # corner past the copy engine's byte
    (np.float16, dict(str_w=9, W=30)),               # traversal stride past 8
])
def test_ineligible_layers_gather(hopper, dtype, kw):
    ng = hopper
    layer = ng.conv_layer(dtype, **{**dict(N=2, C=16, K=72, H=9, W=9, R=3, S=3), **kw})
    ng.fprop_conv(layer, *_tensors(ng, layer, "fprop"))
    assert [e[0] for e in _gathers(ng)][0].startswith("ga_im2col")
    assert not [e for e in ng.launches if isinstance(e[0], str) and e[0].startswith("ga_conv")]


def test_unit_stride_bprop_is_an_fprop_reading_the_filters_mirrored(hopper, tensor_maps,  # noqa: F811
                                                                    im2col_maps):
    ng = hopper
    layer = ng.conv_layer(np.float16, 2, 24, 16, H=9, W=8, R=3, S=2, pad_h=1, dil_w=2)
    F, E, G = _tensors(ng, layer, "bprop")
    ng.bprop_conv(layer, F, E, G, alpha=2.0, beta=0.5)
    assert len(ng.launches) == 1  # no flipped copy of F
    name, _, _, args, _ = _conv_launch(ng)
    assert name.endswith("_f16_bprop")
    fields = dict(zip(GEMM_FIELDS, gk.ARGS.unpack(args[:gk.ARGS_BYTES])))
    # the bprop layer: K=16 channels in, C=24 out, padding dil*(extent-1) - pad
    assert (fields["M"], fields["N"]) == (2 * 9 * 8, 24) and fields["c"] == G.ptr
    assert (fields["a"], fields["b"]) == (E.ptr, F.ptr)
    assert (fields["alpha"], fields["beta"], fields["flags"]) == (2.0, 0.5, gk.EPI_BETA)
    geom = plans.GEOM.unpack(args[gk.ARGS_BYTES:gk.ARGS_BYTES + plans.GEOM.size])
    assert geom[:12] == (9, 8, 3, 2, 1, 16, 1, 1, 1, 2, 1, 2)
    (_, _, dims, _, lower, upper, *_), = im2col_maps
    assert dims == (16, layer.Q, layer.P, 2) and lower == (-2, -1) and upper == (0, -1)
    # B: the original F as (C, K, R*S) in 64 x 64 boxes
    (f_map,) = [m for m in tensor_maps if m["ptr"] == F.ptr]
    assert f_map["dims"] == (24, 16, 6) and f_map["box"] == (64, 64, 1)


def test_strided_bprop_runs_by_phases(hopper):
    ng = hopper
    layer = ng.conv_layer(np.float16, 2, 24, 16, H=9, W=8, R=3, S=3, str_h=2)
    ng.bprop_conv(layer, *_tensors(ng, layer, "bprop"))
    # the phases' filters (zeros, the flipped filter, its strided view), the
    # forward convolution of E (16 channels: the small-C kernel), the
    # spread of its 2 x 24 channels and the crop of H = 9 out of 10 rows
    assert _names(ng) == ["fused"] * 3 + ["ga_small_c_fprop_f16"] + ["fused"] * 2


def test_strided_bprop_in_fp32_gathers(hopper):
    ng = hopper
    layer = ng.conv_layer(np.float32, 2, 24, 16, H=9, W=8, R=3, S=3, str_h=2)
    ng.bprop_conv(layer, *_tensors(ng, layer, "bprop"))
    assert [e[0] for e in _gathers(ng)] == ["ga_col2im_f32_v4"]


def test_update_with_whole_channel_chunks_is_one_gemm_split_over_positions(
        hopper, tensor_maps, im2col_maps):  # noqa: F811
    ng = hopper
    layer = ng.conv_layer(np.float16, 8, 128, 64, H=28, W=28, R=3, S=3, pad_h=1, pad_w=1)
    I, E, G = _tensors(ng, layer, "update")
    ng.update_conv(layer, I, E, G, alpha=0.5, beta=1.0)
    name, grid, _, args, _ = _conv_launch(ng)
    assert name == "ga_conv_sm90_64x128x64_f16_update"
    fields = dict(zip(GEMM_FIELDS, gk.ARGS.unpack(args[:gk.ARGS_BYTES])))
    positions = 8 * 28 * 28
    assert (fields["M"], fields["N"], fields["K"]) == (64, 9 * 128, positions)
    assert (fields["a"], fields["b"], fields["c"]) == (E.ptr, I.ptr, G.ptr)
    assert (fields["ldc"], fields["flags"], fields["alpha"]) == (9 * 128, gk.EPI_BETA, 0.5)
    # 9 tiles of 64x128 on 132 SMs: the 98 K-tiles split 11 ways (9 each, 99 blocks)
    assert (fields["splits"], fields["tiles_per_split"]) == (11, 9)
    assert fields["partial"] != 0 and _names(ng)[-1] == "ga_gemm_splitk_reduce"
    (_, _, dims, _, _, _, channels, pixels, *_), = im2col_maps
    assert dims == (128, 28, 28, 8) and (channels, pixels) == (64, 64)
    (a_map,) = [m for m in tensor_maps if m["ptr"] == E.ptr]
    assert a_map["dims"] == (64, positions, 1) and a_map["box"] == (64, 64, 1)


@pytest.mark.parametrize("C, K, name", [
    (12, 64, "ga_im2col_b2_n8"), (64, 12, "ga_im2col_b2_v8"),
    (40, 64, "ga_im2col_b2_v8")])  # (40 of 64: not padded)
def test_update_with_unaligned_channels_gathers(hopper, C, K, name):
    ng = hopper
    layer = ng.conv_layer(np.float16, 2, C, K, H=9, W=9, R=3, S=3)
    ng.update_conv(layer, *_tensors(ng, layer, "update"))
    assert [e[0] for e in _gathers(ng)] == [name]


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_update_with_partial_chunks_pads_them(hopper, tensor_maps, im2col_maps, beta):  # noqa: F811
    """C = 96: the kernel fills two whole 64-channel chunks per tap of an fp32
    temporary (alpha applied, no beta), and one fused kernel keeps the 96
    real channels (adding beta * grad_F)."""
    ng = hopper
    layer = ng.conv_layer(np.float16, 2, 96, 64, H=9, W=9, R=3, S=3)
    I, E, G = _tensors(ng, layer, "update")
    ng.update_conv(layer, I, E, G, alpha=0.5, beta=beta)
    assert _gathers(ng) == [] and _names(ng)[-1] == "fused"
    name, _, _, args, _ = _conv_launch(ng)
    assert name == "ga_conv_sm90_64x128x64_f16_update"
    fields = dict(zip(GEMM_FIELDS, gk.ARGS.unpack(args[:gk.ARGS_BYTES])))
    assert (fields["M"], fields["N"], fields["ldc"]) == (64, 9 * 128, 9 * 128)
    assert fields["c_type"] == gk.TYPE_CODE[np.dtype(np.float32)]
    assert fields["flags"] & gk.EPI_BETA == 0 and fields["c"] != G.ptr
    assert (fields["alpha"], fields["beta"]) == (0.5, 0.0)
    geom = plans.GEOM.unpack(args[gk.ARGS_BYTES:gk.ARGS_BYTES + plans.GEOM.size])
    assert geom[5] == 96 and geom[-1] == 128  # C, and the padded channels' FastDiv


@pytest.mark.parametrize("m, n, ktiles, schedule", [
    (128, 576, 12544, 44),   # VGG-A conv2's update: 3 tiles of 128x192; 132 blocks in one wave
    (256, 1152, 3136, 13),   # VGG-A conv3's: 10 tiles, each cut between ~13 blocks
    (256, 2304, 3136, 7),    # VGG-A conv4's: 18 tiles, each cut between ~9 blocks
    (512, 2304, 784, plans.STREAM_K),   # VGG-A conv5's: 36 tiles, cut between ~5
    (512, 4608, 196, plans.STREAM_K),   # VGG-A conv8's: 72 tiles, 1.8 a block
    (1024, 9216, 288, plans.STREAM_K),  # Overfeat conv5's: 288 tiles, 2.2 a block
    (64, 64, 10, 1),         # fewer K-tiles than SMs: not cut
])
def test_update_schedule_fills_the_machine(hopper, m, n, ktiles, schedule):
    cfg, _ = plans.choose_update_tile(hopper, m, n)
    assert plans.choose_schedule(hopper, cfg, m, n, ktiles) == schedule


@pytest.mark.parametrize("m, n, tile, paired", [
    (128, 576, (128, 192), False),    # VGG-A conv2's: 3 whole tiles of 192, not 2.25 of 256
    (128, 1152, (128, 192), False),   # GoogLeNet 3a 3x3's (C = 96 padded to 128): 6 of 192
    (384, 1728, (128, 256), False),   # AlexNet conv3's: 7 columns of 256 (9 of 192: 0.92x)
    (192, 576, (128, 192), False),    # GoogLeNet conv3's: whole tiles beat pairs of 256
    (256, 1152, (128, 256), True),    # VGG-A conv3's: 4.5 columns of 256, but paired
    (512, 4608, (128, 256), True),    # VGG-A conv8's
    (192, 1600, (128, 256), True),    # AlexNet conv2's
    (64, 64, (64, 64), False),
    (32, 1600, (64, 128), False),     # GoogLeNet 3a 5x5's: fewer than 128 filters
    (128, 128, (128, 128), False),    # no tile wider than the output
    (128, 192, (128, 192), False),    # one tile of 192, not two of 128
    (384, 832, (128, 256), False),    # GoogLeNet 5b 1x1's: 256 and 192 model level, 256 kept
])
def test_update_tile(hopper, m, n, tile, paired):
    """The filter gradient's tile: as wide as the output allows, or 192
    wide where that is less work over the whole output (a part-empty last
    column counted whole, pairs 1.1x faster, 128x192 tiles 0.95x as fast
    as 128x256 ones)."""
    cfg, chosen = plans.choose_update_tile(hopper, m, n)
    assert ((cfg.bm, cfg.bn), chosen) == (tile, paired)


@pytest.mark.parametrize("K, tile_n, stored", [(128, 128, True), (96, 96, False)])
def test_fprop_output_stored_by_the_copy_engine(hopper, tensor_maps, im2col_maps, K, tile_n,  # noqa: F811
                                                stored):
    """Plain fprop's 16-bit output, on tiles of a multiple of 64 columns,
    goes out through the copy engine: its map is O as (K, N*P*Q, 1), 64
    rows x 32 channels a store, 64-byte swizzle (96-wide tiles store it
    from the threads)."""
    ng = hopper
    layer = ng.conv_layer(np.float16, 32, 64, K, H=28, W=28, R=3, S=3, pad_h=1, pad_w=1)
    I, F, O = _tensors(ng, layer, "fprop")
    ng.fprop_conv(layer, I, F, O, relu=True)
    name, _, _, args, _ = _conv_launch(ng)
    assert "x%dx64_" % tile_n in name
    fields = dict(zip(GEMM_FIELDS, gk.ARGS.unpack(args[:gk.ARGS_BYTES])))
    assert bool(fields["flags"] & gk.EPI_TMA_C) == stored
    c_maps = [m for m in tensor_maps if m["ptr"] == O.ptr]
    if stored:
        (c_map,) = c_maps
        assert c_map["dims"] == (K, 32 * 28 * 28, 1) and c_map["strides"][0] == 2 * K
        assert c_map["box"] == (32, 64, 1) and c_map["swizzle"] == 64
    else:
        assert c_maps == []


def _stream_k_fields(ng, name):
    """GemmArgs of the one launch, ``name`` over all 132 SMs (no reduce kernel)."""
    launched, grid, _, args, _ = _conv_launch(ng)
    assert launched == name and grid == (132, 1, 1)
    assert _names(ng) == [name]
    return dict(zip(GEMM_FIELDS, gk.ARGS.unpack(args[:gk.ARGS_BYTES])))


def test_stream_k_update_plan(hopper, tensor_maps, im2col_maps):  # noqa: F811
    """VGG-A conv8's filter gradient: one kernel over all 132 SMs in
    multicast pairs, a partial tile slot per block and then its flags,
    which are zeroed before the launch (and before a replay of it)."""
    ng = hopper
    layer = ng.conv_layer(np.float16, 64, 512, 512, H=14, W=14, R=3, S=3, pad_h=1, pad_w=1)
    I, E, G = _tensors(ng, layer, "update")
    ng.update_conv(layer, I, E, G)
    fields = _stream_k_fields(ng, "ga_conv_sm90_128x256x64_f16_update_mc2")  # 66 pairs
    assert ng.last_gemm.cluster == 2
    assert fields["flags"] == gk.SCHED_STREAM_K | gk.EPI_TMA_C
    assert (fields["splits"], fields["tiles_per_split"]) == (1, 196)
    slots = 132 * 128 * 256 * 4
    assert ng.memsets == [(fields["partial"] + slots, 0, 132 * 2)]
    assert ng.last_gemm.zero[1:] == (fields["partial"] + slots, 132 * 2)


@pytest.mark.parametrize("m, n, ktiles, tile, stream_k", [
    (18432, 256, 72, (128, 256), True),     # Overfeat conv3's data gradient: 2.2 waves of 128x128
    (18432, 512, 144, (128, 256), True),    # Overfeat conv4's: 4.4 waves of 128x128
    (21632, 192, 54, (128, 192), True),     # AlexNet conv3's: 1.3 waves of 128x192
    (18432, 1024, 144, (128, 256), True),   # Overfeat conv5's fprop: 4.4 waves of 128x256
    (12544, 512, 72, (128, 128), False),    # VGG-A conv7's: 3.0 waves
    (50176, 512, 72, (128, 256), False),    # VGG-A conv6's: 5.9 waves
    (200704, 256, 36, (128, 256), False),   # VGG-A conv4's: 11.9 waves
    (802816, 128, 9, (256, 128), False),    # VGG-A conv2's without a bias (with one: transposed)
    (802816, 64, 18, (256, 64), False),     # its data gradient
    (100352, 96, 100, (256, 96), False),    # Overfeat conv2's data gradient: 96 channels
    (21632, 384, 27, (256, 128), False),    # AlexNet conv3's: 1.9 waves of 256x128, 3.8 of 128x128
    (21632, 256, 36, (128, 128), False),    # AlexNet conv5's: not 256x96 (57 against 52 us)
])
def test_fprop_schedule(hopper, m, n, ktiles, tile, stream_k):
    """Stream-K only where it models faster with its shared K-tiles 1.06x
    slower (benchmarks/conv_schedule.py: Overfeat's layers, three of
    AlexNet's and one of GoogLeNet's); 256-row tiles where the output is
    at most 128 columns, or 384 over few positions."""
    cfg, chosen = plans.choose_fprop(hopper, m, n, ktiles)
    assert ((cfg.bm, cfg.bn), chosen) == (tile, stream_k)


@pytest.mark.parametrize("kind", ["fprop", "bprop"])
def test_data_parallel_128x128_tiles_run_in_ping_pong(hopper, kind):
    """VGG-A conv7's passes: 392 tiles of 128x128 in waves over 132 blocks,
    on the ping-pong kernel (each consumer warpgroup a whole tile)."""
    ng = hopper
    layer = ng.conv_layer(np.float16, 64, 512, 512, H=14, W=14, R=3, S=3, pad_h=1, pad_w=1)
    a, b, out = _tensors(ng, layer, kind)
    getattr(ng, f"{kind}_conv")(layer, a, b, out)
    name, grid, block, _, _ = _conv_launch(ng)
    assert name == f"ga_conv_sm90_128x128x64_f16_{kind}_pp"
    assert grid == (132, 1, 1) and block == (384, 1, 1)
    assert ng.last_gemm.zero is None


def test_few_filters_run_transposed(hopper, tensor_maps, im2col_maps):  # noqa: F811
    """VGG-A conv2's fprop (128 filters, 802,816 positions): the filters as
    the tile's rows, output positions as its columns -- F is the kernel's A
    (tiled), the input its B (gathered 256 positions a copy) -- and C stored
    transposed into O, the bias along the rows."""
    ng = hopper
    layer = ng.conv_layer(np.float16, 64, 64, 128, H=112, W=112, R=3, S=3, pad_h=1, pad_w=1)
    I, F, O = _tensors(ng, layer, "fprop")
    bias = ng.empty((128,), np.float16)
    ng.fprop_conv(layer, I, F, O, relu=True, bias=bias)
    name, grid, block, args, _ = _conv_launch(ng)
    assert name == "ga_conv_sm90_128x256x64_f16_fprop_t"
    assert grid == (132, 1, 1) and block == (384, 1, 1)
    fields = dict(zip(GEMM_FIELDS, gk.ARGS.unpack(args[:gk.ARGS_BYTES])))
    assert (fields["M"], fields["N"], fields["K"]) == (128, 64 * 112 * 112, 9 * 64)
    assert (fields["a"], fields["b"], fields["c"], fields["bias"]) == (F.ptr, I.ptr, O.ptr,
                                                                       bias.ptr)
    assert (fields["ldc"], fields["bias_m"], fields["bias_n"]) == (128, 1, 0)
    assert fields["flags"] == gk.EPI_RELU | gk.EPI_BIAS | gk.EPI_TMA_C and fields["splits"] == 1
    (a_map,) = [m for m in tensor_maps if m["ptr"] == F.ptr]
    assert a_map["dims"] == (64, 128, 9) and a_map["box"] == (64, 128, 1)
    (ptr, *_, pixels, _, _), = im2col_maps
    assert ptr == I.ptr and pixels == 256
    # O stored by the copy engine as (K, N*P*Q): 64 filters x 32 positions a copy
    (c_map,) = [m for m in tensor_maps if m["ptr"] == O.ptr]
    assert c_map["dims"] == (128, 64 * 112 * 112, 1) and c_map["strides"][0] == 256
    assert c_map["box"] == (64, 32, 1) and c_map["swizzle"] == 128


@pytest.mark.parametrize("K, beta, H, with_bias", [
    (96, False, 112, True), (256, False, 56, True), (128, True, 112, True),
    (128, False, 14, True), (128, False, 112, False)])
def test_other_fprops_stay_untransposed(hopper, K, beta, H, with_bias):
    """96 filters (the 256x96 tiles are as fast), 256 (128x256 tiles
    already), beta (the transposed epilogue does not read C), under a wave
    of transposed tiles (64 x 14 x 14 positions: 49 tiles), or no bias
    (the transposed tiles are slower where the bias does not pay)."""
    ng = hopper
    layer = ng.conv_layer(np.float16, 64, 64, K, H=H, W=H, R=3, S=3, pad_h=1, pad_w=1)
    I, F, O = _tensors(ng, layer, "fprop")
    bias = ng.empty((K,), np.float16) if with_bias else None
    ng.fprop_conv(layer, I, F, O, beta=1.0 if beta else 0.0, bias=bias)
    name, _, _, args, _ = _conv_launch(ng)
    assert not name.endswith("_t")
    fields = dict(zip(GEMM_FIELDS, gk.ARGS.unpack(args[:gk.ARGS_BYTES])))
    assert (fields["a"], fields["b"]) == (I.ptr, F.ptr)


def test_fewer_128x128_tiles_than_two_a_block_stay_cooperative(hopper):
    """GoogLeNet 5b's 3x3 reduce: 98 tiles, one a block, each on both
    consumer warpgroups (in ping-pong one warpgroup would run it alone)."""
    ng = hopper
    layer = ng.conv_layer(np.float16, 128, 832, 192, H=7, W=7)
    I, F, O = _tensors(ng, layer, "fprop")
    ng.fprop_conv(layer, I, F, O)
    name, grid, _, _, _ = _conv_launch(ng)
    assert name == "ga_conv_sm90_128x128x64_f16_fprop" and grid == (98, 1, 1)


def test_stream_k_bprop_plan(hopper, tensor_maps, im2col_maps):  # noqa: F811
    """Overfeat conv3's data gradient: one kernel over all 132 SMs on 128x256
    tiles (stream-K, its whole waves first), a partial tile slot per block
    and then its flags, zeroed before the launch."""
    ng = hopper
    layer = ng.conv_layer(np.float16, 128, 256, 512, H=12, W=12, R=3, S=3, pad_h=1, pad_w=1)
    F, E, G = _tensors(ng, layer, "bprop")
    ng.bprop_conv(layer, F, E, G)
    fields = _stream_k_fields(ng, "ga_conv_sm90_128x256x64_f16_bprop")
    assert fields["flags"] == gk.SCHED_STREAM_K | gk.SCHED_WHOLE_FIRST | gk.EPI_TMA_C
    assert (fields["M"], fields["N"], fields["tiles_per_split"]) == (18432, 256, 72)
    slots = 132 * 128 * 256 * 4
    assert ng.last_gemm.zero[1:] == (fields["partial"] + slots, 132 * 2)


#: gather-route filter gradients: channels that fill no 64-wide chunk, C = 6
#: (col rows padded: 54 taps), a pointwise layer (no gather)
GATHERED_UPDATES = [
    pytest.param(dict(LAYER, C=12), id="gathered"),
    pytest.param(dict(N=2, C=6, K=8, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1), id="c6"),
    pytest.param(dict(N=2, C=40, K=8, H=5, W=3), id="pointwise"),
]
#: GemmArgs fields a replay fills in per call (pointers, TMA maps, scalars)
_PER_CALL = {"tmap_a", "tmap_b", "a", "b", "c", "partial", "alpha", "beta", "call"}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kw", GATHERED_UPDATES)
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_gathered_update_replays_its_first_launches(tensor_maps, im2col_maps, arch, kw, beta):  # noqa: F811
    """A repeated gather-route update replays what the first call recorded --
    the same kernels, grids and arguments -- with the new call's pointers,
    alpha and beta."""
    ng = _gpu(arch)
    layer = ng.conv_layer(np.float16, **kw)
    ng.update_conv(layer, *_tensors(ng, layer, "update"), alpha=2.0, beta=beta)
    first = list(ng.launches)
    (plan,) = _recorded_updates(ng)
    I, E, G = _tensors(ng, layer, "update")  # noqa: E741
    ng.launches.clear()
    ng.update_conv(layer, I, E, G, alpha=3.0, beta=beta)
    again = list(ng.launches)
    assert [(e[0], e[1], e[2]) for e in again] == [(e[0], e[1], e[2]) for e in first]
    gathers = _gathers(ng)
    if plan.gather is None:
        assert gathers == []
        sources = {I.ptr, E.ptr}
    else:
        (_, _, _, args, _), = gathers
        (_, _, _, first_args, _), = _gathers_of(first)
        assert args["src"] == I.ptr and {**args, "src": 0, "dst": 0} == \
            {**first_args, "src": 0, "dst": 0}
        sources = {E.ptr, args["dst"]}
    (gemm,) = [e[3] for e in again if e[0].startswith("ga_gemm") and "splitk" not in e[0]]
    (gemm0,) = [e[3] for e in first if e[0].startswith("ga_gemm") and "splitk" not in e[0]]
    assert {gemm["a"], gemm["b"]} == sources and gemm["c"] in (G.ptr, 0)
    assert (gemm["alpha"], gemm["beta"]) == (3.0, beta)
    assert {k: v for k, v in gemm.items() if k not in _PER_CALL} == \
        {k: v for k, v in gemm0.items() if k not in _PER_CALL}


def _recorded_updates(ng):
    return [p for p in ng._conv_plans.values() if isinstance(p, convolution.GatheredUpdate)]


def test_gathered_update_is_recorded_for_contiguous_tensors_only(ng):
    layer = ng.conv_layer(np.float16, **LAYER)
    I, E, G = _tensors(ng, layer, "update")  # noqa: E741
    wide = ng.empty(layer.dimI[:-1] + (2 * layer.C,), np.float16)
    ng.update_conv(layer, wide[..., ::2], E, G)
    assert _recorded_updates(ng) == []
    ng.update_conv(layer, I, E, G)
    assert len(_recorded_updates(ng)) == 1


def test_gathered_update_with_stochastic_rounding_is_not_recorded(ng):
    """Rounding grad_F stochastically keeps the GEMM's own path, which
    refuses it inside a captured step."""
    layer = ng.conv_layer(np.float16, **LAYER)
    I, E, G = _tensors(ng, layer, "update")  # noqa: E741
    G.rounding = True
    for _ in range(2):
        ng.update_conv(layer, I, E, G)
    assert _recorded_updates(ng) == []


def test_gathered_update_in_chunks_is_not_replayed(ng, monkeypatch):
    monkeypatch.setattr(convolution, "WORKSPACE_BYTES", 1)
    layer = ng.conv_layer(np.float16, **LAYER)
    for _ in range(2):
        ng.launches.clear()
        ng.update_conv(layer, *_tensors(ng, layer, "update"))
        assert [g[3]["N"] for g in _gathers(ng)] == [1] * layer.N
    assert _recorded_updates(ng) == []

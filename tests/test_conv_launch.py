"""GPU convolution up to the driver calls, on machines without a GPU.

A GPU factory whose driver is a recorder (see test_gemm_plan): every
launch is logged -- the gathers of kernels/conv_im2col.cu with their
ConvArgs unpacked, and the GEMMs with their GemmArgs -- and checked: the
sequence per pass (gather, GEMM, scatter), the kernel picked (element
size, channels per thread), the pointers and sizes handed over, and the
batch split into chunks when one call's gather buffer would exceed the
workspace budget.
"""
import ctypes

import numpy as np
import pytest

from gpuarray.conv import convolution
from test_gemm_plan import GemmRecordingGPU, tensor_maps  # noqa: F401 - a fixture

FIELDS = "src dst N size out filter stride pad dil C alpha beta".split()


def _unpack(raw):
    args = dict(zip(FIELDS[:3], raw[:3]))
    for i, name in enumerate(FIELDS[3:9]):
        args[name] = raw[3 + 3 * i:6 + 3 * i]
    args["C"], args["alpha"], args["beta"] = raw[21:]
    return args


class _Kernel:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def launch(self, grid, block, params, shared):
        pointer, _ = params
        raw = convolution.ARGS.unpack(ctypes.string_at(pointer[0], convolution.ARGS.size))
        self.log.append((self.name, grid, block, _unpack(raw), shared))


class _Library:
    def __init__(self, log):
        self.log = log

    def function(self, stem, name, smem=0):
        assert stem == convolution.STEM
        return _Kernel(name, self.log)


@pytest.fixture
def ng(tensor_maps):  # noqa: F811 - the fixture imported above
    gpu = GemmRecordingGPU()
    gpu.conv_library = _Library(gpu.launches)
    return gpu


def _names(ng):
    """Kernel names of the recorded launches ("fused" for generated kernels)."""
    return [entry[0] if isinstance(entry[0], str) else "fused" for entry in ng.launches]


def _gathers(ng):
    return [entry for entry in ng.launches
            if isinstance(entry[0], str) and entry[0].startswith(("ga_im2col", "ga_col2im"))]


LAYER = dict(N=4, C=8, K=16, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1, str_w=2)


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


@pytest.mark.parametrize("dtype, C, name", [(np.float16, 16, "ga_im2col_b2_v8"),
                                            ("bfloat16", 12, "ga_im2col_b2_v1"),
                                            (np.float32, 12, "ga_im2col_b4_v4"),
                                            (np.float32, 3, "ga_im2col_b4_v1")])
def test_gather_width_follows_the_channels(ng, dtype, C, name):
    layer = ng.conv_layer(dtype, 2, C, 8, H=5, W=5, R=3, S=3)
    ng.fprop_conv(layer, *_tensors(ng, layer, "fprop"))
    (got, grid, _, _, _), = _gathers(ng)
    vec = int(name[-1])
    per_image = layer.P * layer.Q * 9 * C // vec
    assert got == name and grid == (-(-per_image // convolution.THREADS), 2, 1)


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

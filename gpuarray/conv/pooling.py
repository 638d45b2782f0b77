"""Pooling on the GPU: one checked PoolCall -> the kernels of kernels/pool.cu.

In: a :class:`gpuarray.conv.call.PoolCall` (checked against its layer) and
the GPU factory.  Out: the pooled output (and argmax) or the input
gradient, queued on the factory's stream.

The kernels read and write contiguous NDHWC tensors; a strided view is
copied to (or computed through) a contiguous temporary.  Max pooling's
backward pass needs each window's argmax: without one given, a forward
pass computes it into a temporary first.  The kernels move 16 bytes per
access (V channels) when the channel axis is not pooled and C and the
addresses allow it.
"""
import struct

from ..core import dtypes

STEM = "pool"
THREADS = 256
#: blocks along y walk the images; the driver allows 65535
MAX_GRID_Y = 65535

#: PoolArgs of kernels/pool.cu: five pointers, N, then size, out, window,
#: stride and pad per pooled axis (channel, depth, height, width), and
#: include_padding, padded to the struct's 8-byte alignment
ARGS = struct.Struct("<5Qq20ii4x")

_TYPE_NAME = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def run(gpu, call):
    """Queue the kernels of ``call`` (fprop or bprop) on ``gpu``."""
    pool = call.layer
    inputs = _contiguous(gpu, call.inputs)
    if call.kind == "fprop":
        out, argmax = _output(gpu, call.out), _output(gpu, call.argmax)
        launch(gpu, "fprop", pool, I=inputs, O=out, argmax=argmax)
        _copy_back(call.out, out)
        _copy_back(call.argmax, argmax)
        return
    errors = _contiguous(gpu, call.errors)
    argmax = call.argmax
    if pool.op == "max":
        if argmax is None:
            argmax = gpu.empty(pool.dimO, pool.argmax_dtype)
            launch(gpu, "fprop", pool, I=inputs, argmax=argmax)
        else:
            argmax = _contiguous(gpu, argmax)
    grad = _output(gpu, call.out)
    launch(gpu, "bprop", pool, E=errors, grad_I=grad, argmax=argmax)
    _copy_back(call.out, grad)


def _contiguous(gpu, t):
    return t if t.is_contiguous else gpu.evaluate(t)


def _output(gpu, target):
    """Where a kernel writes ``target``: itself when contiguous, else a temporary."""
    if target is None or target.is_contiguous:
        return target
    return gpu.empty(target.shape, target.dtype)


def _copy_back(target, written):
    if written is not target:
        target[:] = written


def launch(gpu, kind, pool, I=None, O=None, argmax=None, E=None, grad_I=None):  # noqa: E741
    """Queue one pooling kernel on contiguous tensors (absent ones: None)."""
    tensors = (I, O, argmax, E, grad_I)
    vec = _vector_width(pool, [t for t in tensors if t is not None and t is not argmax], argmax)
    name = f"ga_pool_{kind}_{pool.op}_{_TYPE_NAME[dtypes.name(pool.dtype)]}_v{vec}"
    if pool.op == "max":
        name += "_u8" if pool.argmax_dtype.itemsize == 1 else "_i32"
    dims = pool.dimO if kind == "fprop" else pool.dimI
    per_image = dims[1] * dims[2] * dims[3] * dims[4] // vec
    grid = (-(-per_image // THREADS), min(pool.N, MAX_GRID_Y), 1)
    args = ARGS.pack(*(t.ptr if t is not None else 0 for t in tensors), pool.N,
                     pool.C, pool.D, pool.H, pool.W, pool.K, pool.M, pool.P, pool.Q,
                     pool.J, pool.T, pool.R, pool.S, *pool.stride, *pool.pad,
                     int(pool.include_padding))
    kernel = gpu.conv_library.function(STEM, name)
    kernel.launch(grid, (THREADS, 1, 1), args, 0)
    gpu._stats["kernels_launched"] += 1


def _vector_width(pool, tensors, argmax):
    """Channels per thread: 16 bytes' worth when the channel axis is not pooled, else 1.

    The V indices of an argmax move as one access of V of its elements.
    """
    vec = 16 // pool.dtype.itemsize
    plain_channels = pool.J == 1 and pool.stride[0] == 1 and pool.pad[0] == 0
    aligned = all(t.ptr % 16 == 0 for t in tensors) and (
        argmax is None or argmax.ptr % (vec * argmax.itemsize) == 0)
    return vec if plain_channels and pool.C % vec == 0 and aligned else 1

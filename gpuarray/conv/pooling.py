"""Pooling on the GPU: one checked PoolCall -> the kernels of kernels/pool*.cu.

In: a :class:`gpuarray.conv.call.PoolCall` (checked against its layer) and
the GPU factory.  Out: the pooled output (and argmax) or the input
gradient, queued on the factory's stream.

The kernels read and write contiguous NDHWC tensors; a strided view is
copied to (or computed through) a contiguous temporary.  Max pooling's
backward pass needs each window's argmax: without one given, a forward
pass computes it into a temporary first.  The kernels move 16 bytes per
access (V channels) when the channel axis is not pooled and C and the
addresses allow it; then the convnets' layers (2x2 and 3x3 windows, at
most 3 outputs along H and along W holding an input position) take the
kernels of ``pool_window.cu``, the others the general ones of ``pool.cu``.

A pass on contiguous tensors is recorded (:class:`PoolPlan`: the kernel,
its grid and its packed arguments, the pointers left as holes) under its
*situation* -- the layer's key, the pass, each tensor's shape, strides,
dtype and 16-byte alignment -- and :func:`replay` runs it again for the
same situation with the checks and the packing skipped: the situation can
only match a call whose first occurrence passed every check.
"""
import struct

from ..core import dtypes
from ..cuda import stream
from . import fastdiv
from .layer import PoolLayer

STEM, WINDOW_STEM = "pool", "pool_window"
THREADS = 256
#: blocks along y walk the images; the driver allows 65535
MAX_GRID_Y = 65535
#: windows (R = S) whose taps the pool_window fprop kernels know at compile time
FPROP_WINDOWS = (2, 3)
#: the most outputs along H or along W holding one input position that the
#: pool_window bprop kernels gather (ceil(window / stride))
MAX_GATHER = 3
#: recorded situations kept per factory (the cache is emptied when full)
MAX_PLANS = 256

#: PoolArgs of kernels/pool.cuh: five pointers, N, then size, out, window,
#: stride and pad per pooled axis (channel, depth, height, width),
#: include_padding, and seven FastDiv (magic, shift, divisor): three that
#: split a thread's index within an image, then one per stride
ARGS = struct.Struct("<5Qq21i" + fastdiv.FORMAT * 7)
#: PoolArgs' pointers in order, and which of a call's (I, out, E, argmax) fills each
_FIELDS = ("I", "O", "argmax", "E", "grad_I")
_SOURCES = {"fprop": {"I": 0, "O": 1, "argmax": 3}, "bprop": {"E": 2, "grad_I": 1, "argmax": 3}}

_TYPE_NAME = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def situation(gpu, kind, pool, tensors):
    """The key a pooling pass is recorded under (None: a layer or tensor of
    another kind, which the checks will refuse).

    ``tensors`` are the call's ``(I, out, E, argmax)``, None where absent;
    the key holds each one's shape, strides, dtype and 16-byte alignment.
    """
    if type(pool) is not PoolLayer:
        return None
    key = [kind, pool.key]
    for t in tensors:
        if t is None:
            key.append(None)
        elif type(t) is gpu.tensor_class and t.backend is gpu:
            key.append((t.shape, t.strides, t.dtype, t.ptr & 15))
        else:
            return None
    return tuple(key)


def _recordable(call, tensors):
    """Whether a pass runs as one launch on the call's own tensors: every
    tensor contiguous, and max pooling's bprop given its argmax."""
    if call.kind == "bprop" and call.layer.op == "max" and call.argmax is None:
        return False
    return all(t is None or t.is_contiguous for t in tensors)


def replay(gpu, kind, pool, tensors):
    """Run the recorded plan of this pass's situation; False where there is none."""
    key = situation(gpu, kind, pool, tensors)
    plan = gpu._pool_plans.get(key) if key is not None else None
    if plan is None:
        return False
    plan.run(gpu, tensors)
    return True


def run(gpu, call):
    """Queue the kernels of ``call`` (fprop or bprop) on ``gpu``; record the
    pass when it is one launch on the call's own tensors."""
    tensors = (call.inputs, call.out, call.errors, call.argmax)
    key = situation(gpu, call.kind, call.layer, tensors) if _recordable(call, tensors) else None
    if key is not None:
        plan = PoolPlan(gpu, call.kind, call.layer, tensors)
        plan.run(gpu, tensors)
        if len(gpu._pool_plans) >= MAX_PLANS:
            gpu._pool_plans.clear()
        gpu._pool_plans[key] = plan
    elif call.kind == "fprop":
        _fprop(gpu, call)
    else:
        _bprop(gpu, call)


def _fprop(gpu, call):
    inputs = _contiguous(gpu, call.inputs)
    out, argmax = _output(gpu, call.out), _output(gpu, call.argmax)
    PoolPlan(gpu, "fprop", call.layer, (inputs, out, None, argmax)).run(
        gpu, (inputs, out, None, argmax))
    _copy_back(call.out, out)
    _copy_back(call.argmax, argmax)


def _bprop(gpu, call):
    pool = call.layer
    errors, argmax = _contiguous(gpu, call.errors), call.argmax
    if pool.op == "max":
        if argmax is None:
            argmax = gpu.empty(pool.dimO, pool.argmax_dtype)
            found = (_contiguous(gpu, call.inputs), None, None, argmax)
            PoolPlan(gpu, "fprop", pool, found).run(gpu, found)
        else:
            argmax = _contiguous(gpu, argmax)
    grad = _output(gpu, call.out)
    tensors = (None, grad, errors, argmax)
    PoolPlan(gpu, "bprop", pool, tensors).run(gpu, tensors)
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


class PoolPlan:
    """One pooling kernel launch, its arguments packed once with the pointers
    as holes, run on the contiguous tensors of a call's ``(I, out, E, argmax)``.

    Where the compiled launch entry is built, a run patches the pointers in
    and launches in one C call; elsewhere the arguments are packed again.
    """

    def __init__(self, gpu, kind, pool, tensors):
        sources = _SOURCES[kind]
        given = {field: tensors[k] for field, k in sources.items() if tensors[k] is not None}
        argmax = given.get("argmax")
        vec = _vector_width(pool, [t for f, t in given.items() if f != "argmax"], argmax)
        stem, name = kernel_name(kind, pool, vec)
        dims = pool.dimO if kind == "fprop" else pool.dimI
        per_image = dims[1] * dims[2] * dims[3] * dims[4] // vec
        self.grid = (-(-per_image // THREADS), min(pool.N, MAX_GRID_Y), 1)
        self.kernel = gpu.conv_library.function(stem, name)
        #: (PoolArgs byte offset, index into the call's tensors) of each pointer
        self.holes = [(8 * _FIELDS.index(field), sources[field]) for field in _FIELDS
                      if field in given]
        self.args = ARGS.pack(0, 0, 0, 0, 0, pool.N,
                              pool.C, pool.D, pool.H, pool.W, pool.K, pool.M, pool.P, pool.Q,
                              pool.J, pool.T, pool.R, pool.S, *pool.stride, *pool.pad,
                              int(pool.include_padding),
                              *(field for d in (dims[4] // vec, dims[3], dims[2]) + pool.stride
                                for field in fastdiv.fast_divisor(d)))
        self.patched = self.kernel.patched_launch(
            self.grid, (THREADS, 1, 1), self.args,
            [(offset, slot, "add", 0) for slot, (offset, _) in enumerate(self.holes)])

    def run(self, gpu, tensors):
        """Launch on ``tensors`` (the call's ``(I, out, E, argmax)``)."""
        pointers = [tensors[k].ptr for _, k in self.holes]
        if self.patched is not None:
            result = self.patched.launch(pointers, stream.launch_handle())
            if result:
                self.kernel.check_launch(result)
        else:
            args = bytearray(self.args)
            for (offset, _), ptr in zip(self.holes, pointers):
                struct.pack_into("<Q", args, offset, ptr)
            self.kernel.launch(self.grid, (THREADS, 1, 1), args, 0)
        gpu._stats["kernels_launched"] += 1


def kernel_name(kind, pool, vec):
    """``(stem, kernel)`` of one pass with ``vec`` channels per thread."""
    dtype = _TYPE_NAME[dtypes.name(pool.dtype)]
    byte_argmax = pool.op == "max" and pool.argmax_dtype.itemsize == 1
    suffix = "_u8" if byte_argmax else "" if pool.op == "avg" else "_i32"
    # the pool_window kernels read argmax indices as bytes
    if vec > 1 and (byte_argmax or pool.op == "avg"):
        if kind == "fprop" and pool.R == pool.S and pool.R in FPROP_WINDOWS:
            return WINDOW_STEM, f"ga_pool_fprop_{pool.op}_{dtype}_r{pool.R}s{pool.S}{suffix}"
        gather = max(-(-pool.R // pool.stride[2]), -(-pool.S // pool.stride[3]))
        if kind == "bprop" and gather <= MAX_GATHER:
            return WINDOW_STEM, f"ga_pool_bprop_{pool.op}_{dtype}_k{gather}{suffix}"
    return STEM, f"ga_pool_{kind}_{pool.op}_{dtype}_v{vec}{suffix}"


def _vector_width(pool, tensors, argmax):
    """Channels per thread: 16 bytes' worth when the channel axis is not pooled, else 1.

    The V indices of an argmax move as one access of V of its elements.
    """
    vec = 16 // pool.dtype.itemsize
    plain_channels = pool.J == 1 and pool.stride[0] == 1 and pool.pad[0] == 0
    aligned = all(t.ptr % 16 == 0 for t in tensors) and (
        argmax is None or argmax.ptr % (vec * argmax.itemsize) == 0)
    return vec if plain_channels and pool.C % vec == 0 and aligned else 1

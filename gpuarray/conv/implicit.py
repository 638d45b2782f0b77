"""Which convolutions run as one implicit-GEMM kernel on Hopper, and running them.

In: a checked :class:`~gpuarray.conv.call.ConvCall` and the GPU factory.
Out: True when the call ran as one kernel of kernels/conv_sm90.cu (two
with split-K), whose producer gathers the activations straight from
memory through an im2col tensor map -- no im2col matrix, no copy -- and
whose epilogue is the GEMM's (alpha, bias, relu, beta); False when the
call must take the gather + GEMM route of
:mod:`~gpuarray.conv.convolution`; :func:`record` gives the same
launches recorded instead, for a bound call (:mod:`~gpuarray.conv.bound`)
to queue again per run.

Which calls: sm_90, fp16/bf16, 2-D layers within the copy engine's im2col
limits (padding and dilated extent within a signed byte, strides up to
8), contiguous 16-byte aligned tensors (fprop's output and the errors E
may be channel slices with 16-byte rows), and per pass: fprop with C % 8 ==
0; bprop with unit stride and C, K % 8 == 0; update with C, K % 8 == 0
(C % 64 != 0: the kernel fills whole 64-channel chunks of an fp32
temporary, and a fused assignment keeps the C real ones -- where the
chunks are at least two-thirds real and the layer is not pointwise).
The decision and the plan are recorded per layer structure and epilogue
(:mod:`~gpuarray.conv.implicit_plan`) -- also when the answer is no -- so
a repeated call costs a dictionary lookup and the launch; a descriptor is
re-encoded only when its tensor moves.
"""
import numpy as np

from ..core import dtypes
from . import implicit_plan as plans
from .call import is_rows, row_stride
from .layer import pointwise

#: the copy engine's im2col limits for a 4-D tensor: corners within a
#: signed byte, traversal strides up to 8
CORNER = (-128, 127)
MAX_STRIDE = 8
MAX_PLANS = 1024
_HALF = (np.dtype(np.float16), dtypes.bfloat16)
_NO = "no"  # a recorded "this situation takes the other route"


def try_run(gpu, call):
    """Run ``call`` as an implicit GEMM if it is one; return whether it was."""
    found = _launch_of(gpu, call)
    if found is None:
        return False
    plan, args, padded = found
    plan.launch(*args)
    if padded is not None:
        keep_channels(call, padded)
    return True


def record(gpu, call):
    """``call``'s launches recorded, not queued (:mod:`gpuarray.conv.bound`
    queues them again per run): ``(GemmLaunch, padded)`` with ``padded``
    the fp32 gradient of a padded filter update (which
    :func:`keep_channels` then narrows into ``call.out``) or None; None
    where the call takes another route."""
    found = _launch_of(gpu, call)
    if found is None:
        return None
    plan, args, padded = found
    return plan.record(*args), padded


def _launch_of(gpu, call):
    """``(plan, the arguments of its launch or record, padded)``, or None
    where the call takes another route; ``padded``: a padded filter
    update's fp32 gradient, which the kernel writes instead of the output."""
    found = _plan_of(gpu, call)
    if found is None:
        return None
    plan, a, b = found
    if call.kind == "update" and call.layer.C % plans.CHUNK:
        full = _padded_gradient(gpu, call)
        return plan, (gpu, a.ptr, b.ptr, full.ptr, 0, 0, call.alpha, 0.0), full
    bias = call.bias.ptr if call.bias is not None else 0
    return plan, (gpu, a.ptr, b.ptr, call.out.ptr, bias, 0, call.alpha, call.beta), None


def _plan_of(gpu, call):
    """``(plan, a, b)``: the recorded plan of ``call``'s situation and the
    kernel's operands in its order, or None where the call takes another route."""
    a, b, out, bias = call.a, call.b, call.out, call.bias
    ld = _row_stride(call)
    if ld is None or (a.ptr | b.ptr | out.ptr) & 15:
        return None
    key = (call.kind, call.layer.key, call.relu, call.beta != 0, ld,
           None if bias is None else (bias.dtype, bias.strides))
    plan = gpu._conv_plans.get(key)
    if plan is None:
        plan = _record(gpu, call, ld)
        if len(gpu._conv_plans) >= MAX_PLANS:
            gpu._conv_plans.clear()
        gpu._conv_plans[key] = plan
    if plan is _NO:
        return None
    if call.kind != "fprop" or plan.swapped:  # the kernel's A is call.b: E, or F transposed
        a, b = b, a
    return plan, a, b


def _padded_gradient(gpu, call):
    """The fp32 buffer of a padded filter update: the kernel writes alpha *
    E^T im2col(I) there for whole 64-channel chunks (C % 64 != 0)."""
    layer = call.layer
    return gpu.empty(layer.dimF[:4] + (plans.padded_channels(layer),), np.float32)


def keep_channels(call, full):
    """One fused assignment keeps the C real channels of the padded
    gradient ``full``, adds beta * grad_F and rounds once."""
    part = full._view(call.out.shape, full.strides, 0)  # full[..., :C], made directly
    if call.beta != 0:
        call.out[...] = part + call.out * call.beta
    else:
        call.out[...] = part


def _row_stride(call):
    """Elements between the rows of the one tensor that may be a channel slice
    (fprop's output, the errors E of bprop and update), or None when a tensor
    is neither contiguous nor such a slice with 16-byte rows."""
    view = call.out if call.kind == "fprop" else call.b
    others = (call.a, call.b) if call.kind == "fprop" else (call.a, call.out)
    if not all(t.is_contiguous for t in others) or not is_rows(view):
        return None
    ld = row_stride(view)
    return ld if ld * view.dtype.itemsize % 16 == 0 else None


def _record(gpu, call, ld):
    layer = call.layer
    if not _gathers(gpu, layer):
        return _NO
    if call.kind == "fprop":
        if layer.C % 8:
            return _NO
        return plans.record_fprop(gpu, layer, call.relu, call.beta != 0, call.bias, ldo=ld)
    if call.kind == "bprop":
        if layer.stride != (1, 1, 1) or layer.C % 8 or layer.K % 8:
            return _NO
        flipped = plans.bprop_layer(layer)
        if not _gathers(gpu, flipped):
            return _NO
        return plans.record_fprop(gpu, flipped, False, call.beta != 0, None, "bprop", layer,
                                  ldi=ld)
    padded = layer.C % plans.CHUNK != 0
    # A pointwise layer's update is one plain GEMM, with no channel padding;
    # padding that more than halves the useful work loses to the gather
    # route (H100: C = 96 and 48 gained 20-60%, C = 16 lost 10-18%).
    if layer.C % 8 or layer.K % 8 or padded and (
            pointwise(layer) or 2 * plans.padded_channels(layer) > 3 * layer.C):
        return _NO
    # (a padded update's beta is the copy's, not the kernel's)
    return plans.record_update(gpu, layer, call.beta != 0 and not padded, ld)


def _gathers(gpu, layer):
    """True when the copy engine can gather this layer's input by im2col."""
    if gpu.arch != "sm_90" or layer.dtype not in _HALF or (layer.D, layer.T) != (1, 1):
        return False
    _, pad_h, pad_w = layer.pad
    _, dil_h, dil_w = layer.dilation
    corners = (-pad_h, -pad_w, pad_h - dil_h * (layer.R - 1), pad_w - dil_w * (layer.S - 1))
    return (all(CORNER[0] <= c <= CORNER[1] for c in corners)
            and max(layer.stride) <= MAX_STRIDE)

"""Indexed reductions: a ``ng.ReductionKernel`` with ``raw`` parameters, or
whose code uses CuPy's indices (``_i``, ``_j``, ``_J``, ``_in_ind``,
``_out_ind``).

In: a :class:`~gpuarray.userkernels.reduction.ReductionKernel` and a call's
operands, ``axis``, ``keepdims`` and ``out``.  Out: a tensor -- the
reduction, evaluated at once -- which later expressions take as an operand.

Why not fused: the map expression of such a kernel reads whole arrays
(``raw``) or depends on where its element is in the whole reduction, which a
fused kernel -- whose loops are the assignment's -- cannot give it.  So the
call runs as a kernel of its own, eagerly, as CuPy's does.  Its semantics
are CuPy's:

* The reduction runs over the broadcast shape of the non-raw array
  operands; with none, CuPy's "Loop size is undecided." ValueError.
* With a ``raw`` input parameter the reduced axes must lead (``axis=0``,
  ``(0, 1)``, ``None``...), as CuPy requires; otherwise CuPy's
  NotImplementedError("Illegal conditions").
* In ``map_expr``: ``_i`` is the flat C-order index of the output element
  over the kept axes, ``_J`` that of the element over the reduced axes,
  ``_j = _J * _out_ind.size() + _i`` (with leading reduced axes, the flat
  C-order index into the broadcast input), ``_in_ind.size()`` and
  ``_out_ind.size()`` the numbers of input and output elements.  A raw
  parameter ``x`` reads as in an indexed elementwise kernel (``x[k]``,
  flat C-order, and ``x.size()``).  ``post_map_expr`` sees ``a``, ``_i``,
  ``_out_ind`` and the raw parameters.  CuPy's multi-index ``_in_ind.get()``
  is not offered.
* A raw output is written by ``post_map_expr`` itself (``y[_i] = a``); it
  must be given (``out``) C-contiguous and of the output's dtype.  A
  non-raw ``out`` must have the result's shape; it takes any dtype.

:func:`plan` (the checks and shapes) serves the CPU factory too
(:mod:`gpuarray.userkernels.host`); :func:`run` launches the CUDA kernel of
:mod:`.reduction_source`, compiled once per structure and C types.
"""
import math
import re
from dataclasses import dataclass

from ..core import dtypes, shapes
from ..core.array import Tensor
from ..core.optree import Expression, settled
from . import indexed, reduction_source
from . import params as parsing
from .indexed_source import Slot
from .reduction_source import ReductionSpec

#: threads per block of an indexed reduction
BLOCK = reduction_source.BLOCK
#: CuPy's names of a reduction's indices, as names of their own
_INDEX_NAME = re.compile(r"(?<![\w.])(?<!->)(?:_i|_j|_J|_in_ind|_out_ind)(?!\w)")


def uses_index(*codes):
    """Whether any of the C ``codes`` uses a reduction's index (comments and literals aside)."""
    return any(_INDEX_NAME.search(indexed._NOT_CODE.sub(" ", code)) for code in codes)


@dataclass
class ReductionCall:
    """One call, checked: what every backend needs but the memory."""

    kernel: object
    operands: tuple
    resolved: tuple
    typedefs: tuple
    out_dtype: object
    reduce_dtype: object
    loop: tuple
    axes: tuple
    result_shape: tuple
    out: object

    @property
    def nout(self):
        """The number of output elements."""
        return math.prod(d for k, d in enumerate(self.loop) if k not in self.axes)

    @property
    def nred(self):
        """The number of elements reduced into each output element."""
        return math.prod(self.loop[k] for k in self.axes)


def plan(kernel, operands, axis, keepdims, out):
    """Check a reduction call (indexed, or any on the CPU factory).

    A kernel that could fuse keeps the fused rules: scalars alone reduce
    one element, any axes, and ``out`` binds no placeholder.

    Raises
    ------
    TypeError
        A raw parameter given a scalar, operands or ``out`` whose dtypes do
        not fit.
    ValueError
        No non-raw array (indexed), operands that do not broadcast, a raw
        output without ``out``, an ``out`` of the wrong shape.
    NotImplementedError
        Raw inputs with reduced axes that do not lead.
    numpy.exceptions.AxisError
        An axis out of range.
    """
    params, out_param = kernel.in_params, kernel.out_param
    indexed._check_raw(params, operands)
    resolved, bound = parsing.bind(params, [a.operand_type for a in operands])
    out_dtype = indexed._output_dtype(out_param, bound, out if kernel.indexed else None)
    arrays = [a.shape for p, a in zip(params, operands) if not p.raw and isinstance(a, Expression)]
    if kernel.indexed and not arrays:
        raise ValueError("Loop size is undecided.")
    loop = shapes.broadcast_shapes(*arrays) if arrays else ()
    axes = shapes.reduction_axes(axis, len(loop))
    if any(p.raw for p in params) and axes != tuple(range(len(axes))):
        raise NotImplementedError(
            f"Illegal conditions: a ReductionKernel with raw parameters reduces leading axes "
            f"only (axis=0, (0, 1), ... or None), not axis={axis!r}")
    kept = tuple(1 if k in axes else d for k, d in enumerate(loop))
    result = kept if keepdims else tuple(d for k, d in enumerate(loop) if k not in axes)
    _check_out(kernel, out, out_dtype, result)
    return ReductionCall(kernel, tuple(operands), resolved,
                         tuple(sorted((p, dtypes.compute_type(dt)) for p, dt in bound.items())),
                         out_dtype, kernel.reduce_type or out_dtype, loop, axes, result, out)


def _check_out(kernel, out, out_dtype, result):
    out_param = kernel.out_param
    if out_param.raw and out is None:
        raise ValueError(f"Output array size is undecided: the raw output {out_param.name} "
                         "needs out=")
    if out is None:
        return
    if out_param.raw:
        indexed._check_out(kernel.backend, out_param, out, out_dtype)
        return
    if not isinstance(out, Tensor):
        raise TypeError(f"out must be a tensor, not {type(out).__name__}")
    if out.backend is not kernel.backend:
        raise ValueError("out belongs to a different factory (backend) than the operands")
    if tuple(out.shape) != result:
        raise ValueError(
            "output parameter for reduction operation has the wrong shape: found "
            f"{shapes.shape_str(out.shape)} but expected {shapes.shape_str(result)}")


def split(loop, axes, strides):
    """The kept and the reduced dimensions of ``loop``, each collapsed, and
    every operand's strides over them: ``(kept, reduced, kept strides,
    reduced strides)``; each of the two is at least ``(1,)``."""
    kept = [k for k in range(len(loop)) if k not in axes]
    out = [indexed.collapse(tuple(loop[k] for k in dims), [tuple(s[k] for k in dims) for s in strides])
           for dims in (kept, axes)]
    return out[0][0], out[1][0], out[0][1], out[1][1]


def target(call):
    """The tensor a call returns: ``out``, or a new one of the result's shape."""
    if call.out is not None:
        return call.out
    return call.kernel.backend.empty(call.result_shape, call.out_dtype)


def run(call):
    """Launch a planned call on the GPU; returns its output tensor."""
    kernel = call.kernel
    backend = kernel.backend
    result = target(call)
    if call.nout == 0:
        return result  # nothing to compute: no kernel is compiled
    buffer = result if kernel.out_param.raw else _buffer(call, result)
    keep, slots, values, strided = [], [], [], []
    for p, a, dt in zip(kernel.in_params, call.operands, call.resolved):
        slot, value = _input(backend, p, a, dt, call.loop, keep)
        slots.append(slot)
        values.append(value)
        if slot.role == "strided":
            strided.append(value[1])
    odims, rdims, ostrides, rstrides = split(call.loop, call.axes, strided)
    out_param = kernel.out_param
    out_slot = Slot(out_param.name, "raw" if out_param.raw else "flat", dtypes.c_type(buffer.dtype),
                    dtypes.compute_type(call.out_dtype))
    spec = ReductionSpec(kernel.name, kernel.map_expr, kernel.post_map_expr,
                         kernel.combiner(call.reduce_dtype, call.typedefs), tuple(slots), out_slot,
                         len(odims), len(rdims), call.typedefs)
    loaded, fmt = indexed.function(kernel, spec, reduction_source.generate)
    lanes = min(BLOCK.bit_length() - 1, max(call.nred - 1, 0).bit_length())
    args = [call.nout, call.nred, lanes, *odims, *rdims]
    walked = iter(zip(ostrides, rstrides))
    for slot, value in zip(slots, values):
        if slot.role == "strided":
            kept, reduced = next(walked)
            args += [value[0], *kept, *reduced]
        else:
            args += value
    args += [buffer.ptr, buffer.size] if out_param.raw else [buffer.ptr]
    return indexed.launch(backend, loaded, fmt, call.nout, BLOCK >> lanes, args, buffer, result)


def _buffer(call, result):
    """The contiguous tensor the kernel writes a non-raw output into: the
    result itself where it can, else one the result is assigned from
    (rounding stochastically where the result asks for it)."""
    store = dtypes.numpy_compute_dtype(call.out_dtype) if result.rounding else call.out_dtype
    if store == result.dtype and result.is_contiguous:
        return result
    return call.kernel.backend.empty(call.result_shape, store)


def _input(backend, p, a, dtype, loop, keep):
    """(slot, launch values) of one input: raw, scalar or strided (pointer
    and element strides broadcast over the loop); a copy is kept alive in
    ``keep`` until the launch is queued."""
    compute = dtypes.compute_type(dtype)
    if not isinstance(a, Expression):
        storage = dtypes.scalar_arg_type(compute)
        return Slot(p.name, "scalar", storage, compute), [indexed._scalar(a, dtype, storage)]
    t = settled(a)
    size = dtype.itemsize
    fits = isinstance(t, Tensor) and t.dtype == dtype and (
        t.is_contiguous if p.raw else all(s % size == 0 for s in t.strides))
    if not fits:
        t = indexed._evaluated(backend, t, dtype)
        keep.append(t)
    if p.raw:
        return Slot(p.name, "raw", dtypes.c_type(dtype), compute), [t.ptr, t.size]
    steps = shapes.broadcast_strides(t.shape, tuple(s // size for s in t.strides), loop)
    return Slot(p.name, "strided", dtypes.c_type(dtype), compute), (t.ptr, steps)

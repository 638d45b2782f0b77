"""User kernels on the CPU factory: the user's C code in a C++ loop, run on
numpy's memory.

In: an :class:`~gpuarray.userkernels.elementwise.ElementwiseKernel` or a
planned reduction (:func:`gpuarray.userkernels.indexed_reduction.plan`)
of the CPU factory, and a call's operands.  Out: a tensor, evaluated at
once -- an elementwise kernel inside an expression runs at the call and
its result is an operand like any other (the GPU fuses it; the values are
the same).

The rules are the GPU's (:mod:`.indexed`, :mod:`.indexed_reduction`):
the same checks run first, the same names reach the code.  The loop is
:mod:`.host_source`'s, compiled by :mod:`.host_compiler` once per
structure and C types (``ng.stats()["kernels_compiled"]`` counts the
kernels this process built or loaded from the disk cache).

float16, bfloat16 and the 8-bit floats are ``float`` in the code, as on
the GPU: their operands are converted to float32 before the loop and
results are rounded when stored (to nearest, or stochastically where the
tensor asks for it); a raw one is read from a float32 copy, so writes to a
raw *input* of those dtypes do not reach it (raw outputs are copied back).
"""
import ctypes
import math

import numpy as np

from ..core import dtypes
from ..core.array import Tensor
from ..core.optree import Expression, settled
from . import host_compiler, host_source, indexed, indexed_reduction
from .indexed_source import Slot


def host_dtype(dtype):
    """The dtype the loop reads and writes for ``dtype`` (float32 for the
    storage-only floats, which the host has no type for)."""
    return dtypes.numpy_compute_dtype(dtype)


def run_elementwise(kernel, operands, out, size):
    """Run an elementwise kernel's call on the host; returns its output tensor.

    Raises
    ------
    TypeError, ValueError
        The GPU's checks (:func:`gpuarray.userkernels.indexed.check`).
    gpuarray.cuda.compiler.CompileError
        Code that does not compile, or no C++ compiler.
    """
    backend, out_param = kernel.backend, kernel.out_param
    size, resolved, bound, out_dtype, loop = indexed.check(kernel, operands, out, size)
    fused = not kernel.indexed and size is None
    if out_param.raw:
        target = out if out is not None else backend.empty((size,), out_dtype)
    else:
        target = out if out is not None else backend.empty(loop, out_dtype)
    n = math.prod(loop)
    if n == 0:
        return target  # nothing to compute, as on the GPU: no kernel is compiled
    inputs = _Inputs(backend, loop, fused)
    for p, a, dt in zip(kernel.in_params, operands, resolved):
        inputs.add(p, a, dt)
    result = _Output(backend, out_param, target, out_dtype, inputs.arrays)
    dims, walked = indexed.collapse(loop, inputs.strides)
    spec = host_source.HostElementwise(kernel.name, kernel.operation, tuple(inputs.slots),
                                       result.slot, _typedefs(bound))
    meta = [n, len(dims), *inputs.sizes, *result.sizes, *dims, *(s for w in walked for s in w)]
    _launch(kernel, spec, meta, inputs.pointers + [result.pointer])
    return result.finish()


def run_reduction(call):
    """Run a planned reduction on the host; returns its output tensor.

    Raises
    ------
    gpuarray.cuda.compiler.CompileError
        Code that does not compile, or no C++ compiler.
    """
    kernel = call.kernel
    backend = kernel.backend
    target = indexed_reduction.target(call)
    if call.nout == 0:
        return target
    inputs = _Inputs(backend, call.loop, not kernel.indexed)
    for p, a, dt in zip(kernel.in_params, call.operands, call.resolved):
        inputs.add(p, a, dt)
    result = _Output(backend, kernel.out_param, target, call.out_dtype, inputs.arrays)
    odims, rdims, ostrides, rstrides = indexed_reduction.split(call.loop, call.axes, inputs.strides)
    spec = host_source.HostReduction(kernel.name, kernel.map_expr, kernel.post_map_expr,
                                     kernel.combiner(call.reduce_dtype, call.typedefs),
                                     tuple(inputs.slots), result.slot, call.typedefs)
    meta = [call.nout, call.nred, len(odims), len(rdims), *inputs.sizes, *result.sizes, *odims,
            *rdims, *(s for o, r in zip(ostrides, rstrides) for s in (*o, *r))]
    _launch(kernel, spec, meta, inputs.pointers + [result.pointer])
    return result.finish()


def _typedefs(bound):
    return tuple(sorted((p, dtypes.compute_type(dt)) for p, dt in bound.items()))


def _launch(kernel, spec, meta, pointers):
    """Run the compiled loop of ``spec`` (built on first use) on ``meta`` and ``pointers``."""
    backend = kernel.backend
    function = kernel._indexed.get(spec)
    if function is None:
        function, built = host_compiler.kernel(host_source.generate(spec))
        backend._stats["kernels_compiled"] += built
        kernel._indexed[spec] = function
    meta = np.array(meta, np.int64)
    addresses = (ctypes.c_void_p * len(pointers))(*pointers)
    function(meta.ctypes.data, ctypes.addressof(addresses))
    backend._stats["kernels_launched"] += 1


class _Inputs:
    """A call's inputs as the loop reads them: slots, pointers, raw sizes,
    and each strided operand's byte strides over ``loop``; the numpy arrays
    (copies among them) are kept until the loop has run."""

    def __init__(self, backend, loop, fused):
        self.backend, self.loop, self.fused = backend, loop, fused
        self.slots, self.pointers, self.sizes, self.strides, self.arrays = [], [], [], [], []

    def add(self, p, a, dtype):
        compute, host = dtypes.compute_type(dtype), host_dtype(dtype)
        if not isinstance(a, Expression):
            storage = dtypes.scalar_arg_type(compute)
            value = np.array(indexed._scalar(a, dtype, storage), _SCALARS[storage])
            self.slots.append(Slot(p.name, "scalar", storage, compute))
            self._keep(value)
            return
        if p.raw:
            array = np.ascontiguousarray(self._array(a, dtype, False), host)
            self.slots.append(Slot(p.name, "raw", dtypes.c_type(host), compute))
            self.sizes.append(array.size)
        else:
            array = np.broadcast_to(self._array(a, dtype, self.fused).astype(host, copy=False),
                                    self.loop)
            self.slots.append(Slot(p.name, "strided", dtypes.c_type(host), compute))
            self.strides.append(array.strides)
        self._keep(array)

    def _keep(self, array):
        self.arrays.append(array)
        self.pointers.append(array.ctypes.data)

    def _array(self, a, dtype, fused):
        """``a`` as a numpy array of ``dtype`` (a view of its tensor where it
        can).  A lazy array is evaluated; in a kernel that could fuse, one of
        a storage-only float dtype is evaluated unrounded, in float32, as
        the fused kernel would read it."""
        t = settled(a)
        if isinstance(t, Tensor):
            view = t.numpy_view()
            return view if view.dtype == dtype else view.astype(dtype)
        value = t if t.dtype == dtype else self.backend.astype(t, dtype)
        if fused and host_dtype(dtype) != dtype:
            value = self.backend.astype(value, host_dtype(dtype))
        return self.backend.evaluate(value).numpy_view()


class _Output:
    """The output as the loop writes it: a C-contiguous host array -- the
    target's own memory where it can -- copied into the target by
    :meth:`finish` otherwise."""

    def __init__(self, backend, param, target, dtype, inputs):
        self.backend, self.target = backend, target
        host = host_dtype(dtype)
        view = target.numpy_view()
        self.buffer = None
        if param.raw:  # checked: C-contiguous, of the output's dtype
            self.array = view if host == dtype else view.astype(host)
            self.sizes = [self.array.size]
        else:
            shares = any(np.may_share_memory(view, a) for a in inputs)
            direct = target.dtype == host and target.is_contiguous and not shares
            self.buffer = target if direct else backend.empty(target.shape, host)
            self.array = self.buffer.numpy_view()
            self.sizes = []
        self.slot = Slot(param.name, "raw" if param.raw else "flat", dtypes.c_type(host),
                         dtypes.compute_type(dtype))
        self.pointer = self.array.ctypes.data

    def finish(self):
        """The target, holding the loop's values."""
        if self.buffer is None:
            if self.array.dtype != self.target.dtype:  # a float32 copy of a raw output
                self.target.numpy_view()[...] = self.array  # rounds to nearest
        elif self.buffer is not self.target:
            self.backend.assign(self.target, self.buffer)
        return self.target


_SCALARS = {"double": np.float64, "long long": np.int64, "unsigned long long": np.uint64}

"""Dispatch: run an assignment, replaying a recorded plan when one fits.

In: the destination view and the op-tree of ``out[...] = tree``.  Out:
kernels queued on the device.  Planning, layout and argument packing cost
tens of microseconds of Python; a program that runs the same expression
again (a training loop) should pay that once.  So the first time a
*situation* is seen -- tree structure, leaf shapes, strides and dtypes,
which leaves share memory with each other and with ``out``, pointer
alignment -- the full path (plan -> launch.prepare -> kernel cache) runs
and is recorded as a recipe: for each kernel, its arguments, with the
pointers and scalar values marked as holes.  Later the recipe is replayed
with the new pointers and scalar values, fresh temporaries from the pool
and a fresh call counter (so ``rand()`` draws new numbers).

The recipe cache keys on sizes (a new shape is a new situation), but the
kernel cache behind it does not: a new shape reuses the compiled kernel.
"""
from functools import partial

from . import launch, plan
from .array import Tensor
from .optree import Scalar


class Dispatcher:
    """Per-factory cache of recorded assignment recipes."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.recipes = {}

    def execute(self, out, tree):
        """Queue the kernels computing ``out[...] = tree``."""
        leaves = tree.leaves
        key = (tree.sig, out.sig, _aliasing(out, leaves))
        recipe = self.recipes.get(key)
        if recipe is None:
            recipe = self.recipes[key] = self._record(out, tree, leaves)
        recipe.replay(self.gpu, out, leaves)

    def _record(self, out, tree, leaves):
        steps, temps = plan.plan(self.gpu, out, tree)
        sources = _Sources(out, leaves, temps)
        kernels = []
        for step in steps:
            spec = launch.prepare(step, self.gpu.sms, self.gpu.seed, 0)
            kernel = self.gpu._kernel(step.program, spec.layout)
            holes = [(0, sources.pointer(step.out))]
            holes += [(1 + k, sources.pointer(t)) for k, t in enumerate(step.leaves)]
            holes += [(spec.first_scalar + k, sources.scalar(s, t))
                      for k, (s, t) in enumerate(zip(step.scalars, step.program.scalar_types))]
            if step.out.buffer is out.buffer:
                holes.append((spec.call_index + 1, ("rounding", 0, None)))
            kernels.append((kernel, spec.grid, spec.block, spec.args, holes, spec.call_index))
        return _Recipe([t.nbytes for t in temps], kernels)


class _Recipe:
    """Recorded kernels of one situation, with holes for pointers and scalars."""

    def __init__(self, temp_sizes, kernels):
        self.temp_sizes, self.kernels = temp_sizes, kernels

    def replay(self, gpu, out, leaves):
        temps = [gpu.pool.allocate(n) for n in self.temp_sizes]
        values = {"out": (out.buffer.ptr + out.offset,),
                  "leaf": [x.value if isinstance(x, Scalar) else x.buffer.ptr + x.offset
                           for x in leaves],
                  "temp": [t.ptr for t in temps],
                  "rounding": (out.rounding or 0,)}
        for kernel, grid, block, args, holes, call_index in self.kernels:
            args = list(args)
            for position, (kind, index, adjust) in holes:
                value = values[kind][index]
                args[position] = value + adjust if isinstance(adjust, int) else (
                    adjust(value) if adjust else value)
            gpu._calls += 1
            args[call_index] = gpu._calls
            kernel.prepared_async_call(grid, block, None, *args)
        gpu._stats["kernels_launched"] += len(self.kernels)
        gpu.last_kernel = self.kernels[-1][0]
        # temporaries go back to the pool now: later work on the same stream
        # runs after these kernels, so reusing the memory is safe
        for t in temps:
            t.free()


def _aliasing(out, leaves):
    """How the tensors of an assignment share memory, and their alignment.

    For ``out`` and each tensor leaf: the index of the first of them with
    the same buffer, the byte distance from it, and the address modulo 16.
    """
    first = {}
    pattern = []
    for t in (out,) + leaves:
        if isinstance(t, Scalar):
            continue
        ptr = t.buffer.ptr + t.offset
        group, base = first.setdefault(id(t.buffer), (len(first), ptr))
        pattern.append((group, ptr - base, ptr % 16))
    return tuple(pattern)


class _Sources:
    """Maps a step's tensors and scalars back to the assignment's own."""

    def __init__(self, out, leaves, temps):
        self.scalars = {id(x): k for k, x in enumerate(leaves) if isinstance(x, Scalar)}
        self.buffers = {}
        for k, t in reversed(list(enumerate(leaves))):
            if isinstance(t, Tensor):
                self.buffers[id(t.buffer)] = ("leaf", k, t)
        for k, t in enumerate(temps):
            self.buffers[id(t.buffer)] = ("temp", k, t)
        self.buffers[id(out.buffer)] = ("out", 0, out)

    def pointer(self, t):
        kind, index, source = self.buffers[id(t.buffer)]
        delta = (t.buffer.ptr + t.offset) - (source.buffer.ptr + source.offset)
        return kind, index, delta

    def scalar(self, s, ctype):
        return "leaf", self.scalars[id(s)], partial(launch.scalar_arg, ctype=ctype)

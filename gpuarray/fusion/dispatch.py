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

While a captured step records (:mod:`gpuarray.cuda.capture`), its floats
reach the tree as stand-ins (:mod:`gpuarray.core.step_numbers`): the
dispatch launches with their values and tells the recording which bytes
of which kernel each one fills, so that a later call of the step with
other values updates the graph's kernel nodes instead of recording again.
"""
import struct
from operator import add, itemgetter

from ..core.array import Tensor
from ..core.optree import OpTreeNode, leaves
from ..core.scalars import Scalar
from ..core.step_numbers import StepNumber
from ..cuda import semaphores, stream
from ..cuda.stream import launch_state
from . import launch, plan
from .slots import CALL_SLOT, FIRST_LEAF, OUT_SLOT, ROUNDING_SLOT, slots_of


#: recorded situations kept per factory
MAX_RECIPES = 4096


class Dispatcher:
    """Per-factory cache of recorded assignment recipes, and the counters
    each launch moves (held here, where a replay reads them as C fields: the
    factory's class, with its many mixins, makes each of its own attribute
    lookups dearer than the launch's other host work).

    Attributes
    ----------
    recipes : dict
        Recipe by situation.
    calls : int
        The factory's Philox call counter (``gpu._calls``), advanced once per
        kernel so each launch draws its own random numbers.
    launched : int
        Kernels the replays launched, a C counter the factory adds to its
        ``kernels_launched`` (``GPU._kernels_launched``): a dictionary
        update per replay costs more than the counter.
    last_kernel : Kernel or None
        The kernel launched or compiled last (``gpu.last_kernel``).
    attached : object
        The factory's per-thread flag ``ready`` (``gpu._attached``, kept in
        step by ``GPU._detach_threads``): False sends a thread's first
        assignment through ``gpu._attach``.
    """

    def __init__(self, gpu):
        self.gpu = gpu
        self.recipes = {}
        self.calls = 0
        self.launched = 0
        self.attached = gpu._attached
        self.last_kernel = None

    def execute(self, out, tree):
        """Queue the kernels computing ``out[...] = tree``.

        The factory's ``_execute``, called by the assignment itself: so it
        makes the checks of every device call (``cuda.context.device_call``) here.
        """
        gpu = self.gpu
        if not self.attached.ready:
            gpu._attach()
        try:
            slots, pattern = slots_of(out, tree)
            operand = tree
            key = (operand.sig, out.sig, pattern)
            launching = launch_state()
            if launching.capture is not None:
                self._execute_captured(out, tree, slots, key, launching)
                return
            recipe = self.recipes.get(key)
            if recipe is None:
                recipe = self._new_recipe(key, out, tree)
            recipe.replay(self, slots, launching.handle, None)
        except Exception as err:
            gpu._device_error(err)
            raise

    def _execute_captured(self, out, tree, slots, key, launching):
        """:meth:`execute`'s work while this thread records a step: the step's
        random draws and the kernel arguments its floats fill are noted."""
        if _draws_random(out, tree):
            stream.note_random()
        tracer = launching.tracer
        traced = _take_numbers(slots, tracer)
        recipe = self.recipes.get(key)
        if recipe is None:
            # planning packs the scalars' values once: the floats' own, so
            # the stand-ins are not marked as used on the host
            stand_ins = [(leaf, leaf.value) for leaf in leaves(tree)
                         if type(leaf) is Scalar and type(leaf.value) is StepNumber]
            for leaf, number in stand_ins:
                leaf.value = number.value
            try:
                recipe = self._new_recipe(key, out, tree)
            finally:
                for leaf, number in stand_ins:
                    leaf.value = number
        note = _noting(tracer, traced, slots, launching.handle) if traced else None
        recipe.replay(self, slots, launching.handle, note)

    def _new_recipe(self, key, out, tree):
        """Record the recipe of a situation first seen (see the module's docstring)."""
        if len(self.recipes) >= MAX_RECIPES:
            # forget the oldest: a program cycling through many shapes
            # must not grow without bound (compiled kernels are kept)
            del self.recipes[next(iter(self.recipes))]
        recipe = self.recipes[key] = self._record(out, tree, leaves(tree))
        return recipe

    def _record(self, out, tree, leaves):
        steps, temps = plan.plan(self.gpu, out, tree)
        sources = _Sources(out, leaves, temps)
        kernels, counters = [], 0
        for step in steps:
            spec = launch.prepare(step, self.gpu.sms, self.gpu.seed, 0, self.gpu.clusters,
                                  self.gpu._replays.address)
            kernel = self.gpu._kernel(step.program, spec.layout)
            holes = _step_holes(step, spec, 0, sources, out)
            if spec.finish is not None:
                holes += _step_holes(step.finish, spec.finish, spec.finish_offset, sources, out)
                # the block counter, a slot after the temporaries' (Recipe.replay)
                slot = FIRST_LEAF + len(leaves) + len(temps) + counters
                holes.append((len(spec.args) - 1, slot, 0))
                counters += 1
            kernels.append(_Launcher(kernel, spec, holes))
        return _Recipe([t.nbytes for t in temps], kernels, counters)


def _take_numbers(slots, tracer):
    """Replace the stand-ins among ``slots`` by their floats; returns
    ``{slot: stand-in}`` for those of the recording ``tracer`` (a stand-in
    kept from another, finished recording is a plain number here)."""
    traced = {}
    for k in range(FIRST_LEAF, len(slots)):
        value = slots[k]
        if type(value) is StepNumber:
            if value.recording is tracer:
                traced[k] = value
            slots[k] = value.value
    return traced


def _noting(tracer, traced, slots, handle):
    """``note(launcher)`` for a replay while a step records: tells ``tracer``
    the arguments of each kernel launched on ``handle`` that the stand-ins
    ``traced`` (``{slot: stand-in}``) fill."""
    def note(launcher):
        holes = launcher.traced_holes(traced)
        if holes:
            tracer.note_kernel(handle, launcher.kernel, launcher.grid, launcher.block,
                               launcher.arguments(slots), holes)
    return note


def _step_holes(step, spec, offset, sources, out):
    """Holes of one step's arguments, which start at argument ``offset``."""
    holes = [(offset, *sources.pointer(step.out))]
    holes += [(offset + 1 + k, *sources.pointer(t)) for k, t in enumerate(step.leaves)]
    holes += _scalar_holes(offset + spec.first_scalar, step, sources)
    holes.append((offset + spec.call_index, CALL_SLOT, 0))
    if step.out.buffer is out.buffer:
        holes.append((offset + spec.call_index + 1, ROUNDING_SLOT, 0))
    return holes


def _scalar_holes(position, step, sources):
    """Holes of a step's scalar arguments, from argument ``position`` on (a
    complex scalar fills two: its real and imaginary parts)."""
    holes = []
    for s, ctype in zip(step.scalars, step.program.scalar_types):
        slot = sources.scalar_slot(s)
        for convert in launch.scalar_parts(ctype):
            holes.append((position, slot, convert))
            position += 1
    return holes


def _draws_random(out, tree):
    """True when the assignment uses random numbers (rand() or stochastic rounding).

    Their key mixes in the replay counter, which a graph holding them must
    advance on every replay (the call counters it froze would repeat them).
    """
    if out.rounding:
        return True
    nodes = [tree]
    while nodes:
        node = nodes.pop()
        if isinstance(node, OpTreeNode):
            if node.op == "rand":
                return True
            nodes.extend(node.args)
    return False


#: alignment of each temporary inside a replay's block (any vector access)
_TEMP_ALIGN = 256


class _Launcher:
    """One recorded kernel launch: its argument buffer, packed once, and the
    holes (pointers, scalars, call counter, rounding bits) filled on each
    replay.

    Where the compiled launch entry is built, the kernel's
    :meth:`~gpuarray.cuda.driver.Kernel.patched_launch` patches and
    launches in one C call; elsewhere a copy of the buffer is patched here,
    a run of neighbouring holes per ``Struct.pack_into``.
    """

    def __init__(self, kernel, spec, holes):
        self.kernel, self.grid, self.block = kernel, spec.grid, spec.block
        self.packed = struct.Struct(kernel.arg_format).pack(*spec.args)
        self.holes = holes
        self.runs = _runs(kernel.arg_format, holes)
        self.patched = kernel.patched_launch(self.grid, self.block, self.packed,
                                             _entry_holes(kernel.arg_format, holes))

    def run(self, slots, stream_handle):
        """Launch with the holes filled from ``slots``."""
        if self.patched is not None:
            result = self.patched.launch(slots, stream_handle)
            if result:
                self.kernel.check_launch(result)
            return
        self.kernel.launch_packed(self.grid, self.block, self.arguments(slots))

    def arguments(self, slots):
        """The packed arguments with the holes filled from ``slots``."""
        # a copy per call (tens of ns): threads replaying one recipe never
        # patch each other's buffer between patching and launching
        buffer = bytearray(self.packed)
        for pack_into, offset, fetch in self.runs:
            pack_into(buffer, offset, *fetch(slots))
        return buffer

    def traced_holes(self, traced):
        """The holes the stand-ins ``traced`` (``{slot: stand-in}``) fill:
        ``(byte offset, struct format, converter, stand-in)`` each."""
        arg_format = self.kernel.arg_format
        offsets = _offsets(arg_format)
        return [(offsets[position], arg_format[position], convert, traced[slot])
                for position, slot, convert in self.holes if slot in traced]


#: hole kinds of the compiled entry for each scalar converter of
#: launch.scalar_parts, and the argument formats its 8-byte holes take
_SCALAR_KINDS = {float: "double", launch.signed_arg: "int", launch.unsigned_arg: "int",
                 launch.bool_arg: "bool", launch.real_part: "real",
                 launch.imaginary_part: "imag"}
_ENTRY_FORMATS = frozenset("PQqd")


def _entry_holes(arg_format, holes):
    """``holes`` as the compiled entry takes them, ``(byte offset, slot, kind,
    delta)``; None where one is not an 8-byte argument or has a converter
    the entry does not know (the Python patching then serves)."""
    offsets = _offsets(arg_format)
    entry = []
    for position, slot, adjust in holes:
        if arg_format[position] not in _ENTRY_FORMATS:
            return None
        if type(adjust) is int:
            entry.append((offsets[position], slot, "add", adjust))
        elif adjust in _SCALAR_KINDS:
            entry.append((offsets[position], slot, _SCALAR_KINDS[adjust], 0))
        else:
            return None
    return entry


def _runs(arg_format, holes):
    """Group holes into runs one ``Struct.pack_into`` call each can patch.

    ``holes`` are ``(position, slot, adjust)``: ``adjust`` is a byte delta
    added to the slot (pointers, counters) or a converter (scalars).  A run
    is neighbouring positions of one kind whose sub-format packs with the
    same padding as the whole argument buffer; returns
    ``[(pack_into, byte offset, fetch), ...]``, ``fetch(slots)`` giving the
    run's values.
    """
    offsets = _offsets(arg_format)
    runs = []
    for position, slot, adjust in sorted(holes, key=lambda hole: hole[0]):
        if runs:
            start, end, members = runs[-1]
            same_kind = (type(adjust) is int) == (type(members[0][1]) is int)
            if position == end + 1 and same_kind and _packs_alike(arg_format, offsets,
                                                                  start, position):
                runs[-1] = (start, position, members + [(slot, adjust)])
                continue
        runs.append((position, position, [(slot, adjust)]))
    return [(struct.Struct(arg_format[start:end + 1]).pack_into, offsets[start], _fetcher(members))
            for start, end, members in runs]


def _fetcher(members):
    """``fetch(slots)``: the values of one run's holes, through C-level
    itemgetter and map where the adjustments allow (the common cases: no
    delta, one converter for the whole run)."""
    indices = [slot for slot, _ in members]
    adjusts = [adjust for _, adjust in members]
    get = itemgetter(*indices) if len(indices) > 1 else _single(indices[0])
    if all(type(a) is int for a in adjusts):
        if not any(adjusts):
            return get
        return lambda slots: map(add, get(slots), adjusts)
    if all(a is adjusts[0] for a in adjusts):
        convert = adjusts[0]
        return lambda slots: map(convert, get(slots))
    return lambda slots: [convert(value) for convert, value in zip(adjusts, get(slots))]


def _single(index):
    """itemgetter of one index, as a 1-tuple (itemgetter's own gives the bare item)."""
    return lambda slots: (slots[index],)


def _offsets(arg_format):
    """Byte offset of each argument (one format character each, native alignment)."""
    return [struct.calcsize(arg_format[:k + 1]) - struct.calcsize(c)
            for k, c in enumerate(arg_format)]


def _packs_alike(arg_format, offsets, start, end):
    """True when ``arg_format[start:end + 1]`` packed at ``offsets[start]``
    puts each argument where the whole format does."""
    sub = _offsets(arg_format[start:end + 1])
    return all(offsets[start] + o == offsets[start + k] for k, o in enumerate(sub))


class _Recipe:
    """Recorded kernels of one situation, with holes for pointers and scalars.

    A replay takes all its temporaries as one block, each at a 256-byte
    aligned offset (one pool call, not one per temporary); where a kernel's
    last block finishes the work, the block comes from the semaphore pool
    and its first bytes are the block counters (``gpuarray.cuda.semaphores``).
    """

    def __init__(self, temp_sizes, launchers, counters=0):
        self.launchers, self.counters = launchers, counters
        end = semaphores.COUNTER_BYTES if counters else 0
        offsets = []
        for nbytes in temp_sizes:
            offsets.append(end)
            end += -(-nbytes // _TEMP_ALIGN) * _TEMP_ALIGN
        # slots after the leaves: the temporaries, then the counters
        self.offsets = offsets + [4 * k for k in range(counters)]
        self.temp_bytes = end

    def replay(self, dispatcher, slots, handle, note):
        """Launch the recorded kernels with this call's pointers and scalars
        on the ``CUstream`` ``handle``; ``note(launcher)`` after each launch
        unless ``note`` is None (a recording, :meth:`Dispatcher._execute_captured`)."""
        block = None
        if self.temp_bytes:
            gpu = dispatcher.gpu
            block = (gpu.semaphores if self.counters else gpu.pool).allocate(self.temp_bytes)
            base = block.ptr
            slots.extend([base + offset for offset in self.offsets])
        calls = dispatcher.calls
        for launcher in self.launchers:
            calls += 1
            slots[CALL_SLOT] = calls
            launcher.run(slots, handle)
            if note is not None:
                note(launcher)
        dispatcher.calls = calls
        # temporaries go back to the pool now: later work on the same stream
        # runs after these kernels, so reusing the memory is safe
        if block is not None:
            block.free()
        dispatcher.launched += len(self.launchers)
        dispatcher.last_kernel = launcher.kernel


class _Sources:
    """Maps a step's tensors and scalars back to slots of the assignment."""

    def __init__(self, out, leaves, temps):
        self.scalars = {id(x): FIRST_LEAF + k for k, x in enumerate(leaves)
                        if isinstance(x, Scalar)}
        self.buffers = {}
        for k, t in reversed(list(enumerate(leaves))):
            if isinstance(t, Tensor):
                self.buffers[id(t.buffer)] = (FIRST_LEAF + k, t)
        for k, t in enumerate(temps):
            self.buffers[id(t.buffer)] = (FIRST_LEAF + len(leaves) + k, t)
        self.buffers[id(out.buffer)] = (OUT_SLOT, out)

    def pointer(self, t):
        """(slot, byte delta) giving the address of tensor ``t``."""
        slot, source = self.buffers[id(t.buffer)]
        return slot, (t.buffer.ptr + t.offset) - (source.buffer.ptr + source.offset)

    def scalar_slot(self, s):
        """The slot holding scalar ``s``'s value."""
        return self.scalars[id(s)]

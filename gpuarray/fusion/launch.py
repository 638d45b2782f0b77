"""Launch: a planned step -> layout class, kernel arguments, grid and block.

In: a :class:`gpuarray.fusion.plan.Step` and the device's multiprocessor count.
Out: a :class:`Launch` holding the :class:`gpuarray.fusion.layout.Layout` (which,
with the program, picks the compiled kernel), the packed argument values
and the launch shape.  This is where sizes and strides enter: adjacent
axes that every operand walks contiguously are collapsed, so most kernels
see one or two dimensions; contiguous, aligned elementwise operands get
16-byte vector accesses.
"""
from dataclasses import dataclass

from ..core.shapes import size_of
from .layout import CLUSTER, EW_THREADS as _EW_THREADS, MAX_THREADS, LastBlock, Layout

#: row elements a thread of a reduction kernel aims to handle
ITEMS_PER_THREAD = 64
#: registers a thread may spend caching row elements
CACHE_REGISTERS = 64
#: fewest cache slots compiled into a kernel (one class for all short rows)
SHORT_ROW_CACHE = 16


@dataclass
class Launch:
    """Everything needed to launch one compiled kernel.

    ``call_index`` is the position of the call-counter argument.  A partial
    kernel whose last block runs a finishing step (``Step.finish``) has that
    step's arguments after its own, from ``finish_offset`` (``finish`` is
    their :class:`Launch`), and the address of its block counter last.
    """

    layout: object
    args: list
    grid: tuple
    block: tuple
    first_scalar: int
    call_index: int
    finish: "Launch" = None
    finish_offset: int = 0


def prepare(step, sms, seed, call, clusters=True, replays=0):
    """Compute the layout class, arguments and launch shape of ``step``.

    ``sms`` is the device's multiprocessor count; ``clusters`` whether it
    has thread-block clusters (compute capability 9.0 and later);
    ``replays`` the address of the factory's replay counter, which random
    numbers mix into their key.
    """
    spec = _prepare_one(step, sms, seed, call, clusters, replays)
    if step.finish is None:
        return spec
    # the finishing step runs as one block of the partial kernel, in the
    # plain row loop (no register cache: the partial kernel's launch bounds
    # leave 32 registers a thread), with the partial kernel's index type:
    # a warp or more a row, the block's threads over as many rows as fit
    finish = _prepare_one(step.finish, sms, seed, call, clusters, replays, spec.layout.wide)
    layout = LastBlock(spec.layout, step.finish.program, finish.layout)
    return Launch(layout, spec.args + finish.args + [0], spec.grid, spec.block,
                  spec.first_scalar, spec.call_index, finish, len(spec.args))


def _prepare_one(step, sms, seed, call, clusters, replays, last_block_wide=None):
    """:func:`prepare` of one step; ``last_block_wide`` (the partial kernel's
    index width) when it runs as the last block of a partial kernel."""
    program = step.program
    operands = [step.out] + list(step.leaves)
    strides = [_element_strides(t, step.shape) for t in operands]
    outer = [a for a in range(len(step.shape)) if a not in step.axes]
    inner = list(step.axes)
    outer_dims = _collapse(step.shape, outer, strides)
    inner_dims = _collapse(step.shape, inner, strides) if program.mode != "ew" else []
    if not outer_dims:
        outer_dims = [(1, [0] * len(operands))]
    if program.mode != "ew" and not inner_dims:
        inner_dims = [(1, [0] * len(operands))]
    rows = size_of(d for d, _ in outer_dims)
    length = size_of(d for d, _ in inner_dims)
    wide = _needs_wide_index(outer_dims + inner_dims, rows * length)
    if last_block_wide is not None:
        layout = Layout(len(outer_dims), len(inner_dims), wide=last_block_wide)
        tpr = max(32, min(MAX_THREADS, _pow2_ceil(length), MAX_THREADS // _pow2_ceil(rows)))
        grid, block = (1, 1, 1), (MAX_THREADS, 1, 1)
    elif program.mode == "partial":
        columns = _columns(step, outer_dims, inner_dims)
        vec = 0 if columns else _row_vector_width(step, outer_dims, inner_dims, length)
        layout = Layout(len(outer_dims), len(inner_dims), vec=vec, wide=wide, columns=columns)
        blocks = -(-rows // 32) if columns else rows
        grid, block, tpr = (blocks * step.chunks, 1, 1), (MAX_THREADS, 1, 1), step.chunks
    elif program.mode == "ew":
        vec, bcast = _vector_width(step, outer_dims)
        layout = Layout(len(outer_dims), 0, vec, bcast, wide=wide)
        grid, block, tpr = _ew_shape(rows, vec, sms)
    else:
        layout, grid, block, tpr = _reduction_launch(step, outer_dims, inner_dims, sms, wide,
                                                     clusters)
    args = [step.out.buffer_ptr() + step.out.offset]
    args += [t.buffer_ptr() + t.offset for t in step.leaves]
    args += [d for d, _ in outer_dims] + [d for d, _ in inner_dims]
    for k in range(len(operands)):
        args += [s[k] for _, s in outer_dims] + [s[k] for _, s in inner_dims]
    first_scalar = len(args)
    for s, t in zip(step.scalars, step.program.scalar_types):
        args += [convert(s.value) for convert in scalar_parts(t)]
    # seed, call, nbits, tpr end the list
    args += [replays, seed, call, step.out.rounding or 0, tpr]
    return Launch(layout, args, grid, block, first_scalar, len(args) - 3)


def _reduction_launch(step, outer_dims, inner_dims, sms, wide, clusters):
    """Layout class, grid, block and threads per row of a reduction kernel."""
    rows = size_of(d for d, _ in outer_dims)
    length = size_of(d for d, _ in inner_dims)
    if _columns(step, outer_dims, inner_dims):
        layout = Layout(len(outer_dims), len(inner_dims), wide=wide, columns=True)
        blocks = max(1, min(-(-rows // 32), sms * 32))
        return layout, (blocks, 1, 1), (MAX_THREADS, 1, 1), 0
    cluster = clusters and rows < sms and length >= 8192
    # vector access needs fewer registers for indexing, leaving room to
    # cache twice as many row elements
    vec = _row_vector_width(step, outer_dims, inner_dims, length)
    share = 1 if vec else 2
    slots = _cache_slots(step.program, CACHE_REGISTERS // share)
    items = min(ITEMS_PER_THREAD // share, slots) if slots else ITEMS_PER_THREAD // share
    grid, block, tpr = _reduction_shape(rows, length, sms, cluster, items)
    cache = _cache_class(slots, -(-length // tpr))
    vec = vec if cache else 0
    layout = Layout(len(outer_dims), len(inner_dims), vec=vec, cluster=cluster,
                    cache=max(cache, vec), wide=wide)
    return layout, grid, block, tpr


def _columns(step, outer_dims, inner_dims):
    """True when rows neighbour in memory and run along a strided axis.

    Then neighbouring threads should take neighbouring rows (see
    ``reduce.ReductionWriter.column_prologue``).
    """
    loads = [1 + i.arg for i in step.program.instrs if i.op == "load" and i.level == "elem"]
    if not loads or len(inner_dims) != 1 or outer_dims[-1][0] < 32:
        return False
    inner, last = inner_dims[0][1], outer_dims[-1][1]
    return all(abs(last[k]) == 1 and inner[k] != 1 for k in loads)


def _element_strides(t, shape):
    lead = len(shape) - t.ndim
    out = [0] * lead
    for d, s, full in zip(t.shape, t.strides, shape[lead:]):
        out.append(s // t.itemsize if d == full and d != 1 else 0)
    return out


def _collapse(shape, axes, strides):
    """Merge adjacent axes walked contiguously by every operand.

    Returns ``[(size, [stride of each operand]), ...]``, outermost first;
    size-1 axes are dropped.
    """
    dims = []
    for a in axes:
        if shape[a] == 1:
            continue
        cur = [s[a] for s in strides]
        if dims and all(prev == shape[a] * c for prev, c in zip(dims[-1][1], cur)):
            dims[-1] = (dims[-1][0] * shape[a], cur)
        else:
            dims.append((shape[a], cur))
    return dims


def _needs_wide_index(dims, count):
    """True when an element index or offset may pass 2**30.

    Kernels index with 32-bit ints when they can (fewer registers, cheaper
    arithmetic); the margin below 2**31 keeps grid-stride loops from
    overflowing on their last step.
    """
    limit = 1 << 30
    if count >= limit:
        return True
    extents = [0] * len(dims[0][1]) if dims else []
    for size, strides in dims:
        for k, s in enumerate(strides):
            extents[k] += abs(s) * (size - 1)
    return any(e >= limit for e in extents)


def _vector_width(step, dims):
    """Elements per vector access for a 1-D contiguous elementwise launch, or 0."""
    if len(dims) != 1:
        return 0, ()
    strides = dims[0][1]
    if strides[0] != 1 or any(s not in (0, 1) for s in strides[1:]):
        return 0, ()
    streamed = [step.out] + [t for t, s in zip(step.leaves, strides[1:]) if s == 1]
    vec = max(1, min(8, 16 // max(t.itemsize for t in streamed)))
    if vec < 2 or any((t.buffer_ptr() + t.offset) % (vec * t.itemsize) for t in streamed):
        return 0, ()
    return vec, tuple(k for k, s in enumerate(strides[1:]) if s == 0)


def _row_vector_width(step, outer_dims, inner_dims, length):
    """Elements per vector access along cached rows, or 0.

    Needs one contiguous inner dimension for every operand read per element
    (and for ``out`` when rows are written back), rows a multiple of the
    width, and every row start aligned to 16 bytes.
    """
    program = step.program
    if len(inner_dims) != 1:
        return 0
    operands = [0] if program.mode == "bcast" else []
    operands += [1 + i.arg for i in program.instrs if i.op == "load" and i.level == "elem"]
    tensors = [step.out] + list(step.leaves)
    streamed = [tensors[k] for k in operands]
    if not streamed or any(inner_dims[0][1][k] != 1 for k in operands):
        return 0
    vec = min(8, 16 // max(t.itemsize for t in streamed))
    if vec < 2 or length % vec:
        return 0
    aligned = all((t.buffer_ptr() + t.offset) % (vec * t.itemsize) == 0 for t in streamed)
    strides_ok = all(s[k] % vec == 0 for _, s in outer_dims for k in operands)
    return vec if aligned and strides_ok else 0


def _ew_shape(n, vec, sms):
    work = -(-n // max(vec, 1))
    blocks = max(1, min(-(-work // _EW_THREADS), sms * 16))
    return (blocks, 1, 1), (_EW_THREADS, 1, 1), 0


def _reduction_shape(rows, length, sms, cluster, items):
    """Grid, block and threads per row for a reduction kernel.

    Aims at ``items`` row elements per thread; rows too long for one
    block go to a cluster when there are fewer rows than multiprocessors.
    """
    if cluster:
        threads = min(MAX_THREADS, max(128, _pow2_ceil(-(-length // (CLUSTER * items)))))
        return (rows * CLUSTER, 1, 1), (threads, 1, 1), threads * CLUSTER
    # at least a warp per row (one thread per element for rows shorter than
    # that): neighbouring threads then read neighbouring elements
    tpr = min(MAX_THREADS, max(_pow2_ceil(-(-length // items)), min(32, _pow2_ceil(length))))
    threads = max(256, tpr)
    rows_per_block = threads // tpr
    blocks = max(1, min(-(-rows // rows_per_block), sms * 32))
    return (blocks, 1, 1), (threads, 1, 1), tpr


def _cache_slots(program, budget):
    """Row elements a thread can keep in registers (a power of two), or 0.

    Reduction kernels are bounded to 128 registers a thread: at most
    ``budget`` of them hold cached values (8-byte values take two).
    """
    loads = sum(_REGISTERS.get(ins.ctype, 1)
                for ins in program.instrs if ins.op == "load" and ins.level == "elem")
    if not loads or loads > budget:
        return 0
    return 1 << (budget // loads).bit_length() - 1


#: 32-bit registers a value of each C type takes (1 unless listed)
_REGISTERS = {"double": 2, "long long": 2, "unsigned long long": 2, "ga_complex64": 2,
              "ga_complex128": 4}


def _cache_class(slots, needed):
    """Cache size compiled into the kernel, or 0 when the row does not fit.

    The power of two above ``needed``, but never below ``SHORT_ROW_CACHE``:
    a few classes keep recompiles rare (most new row lengths reuse a
    kernel), and no row pays for many more guarded slots than it uses.
    """
    if not slots or needed > slots:
        return 0
    return min(slots, max(SHORT_ROW_CACHE, _pow2_ceil(needed)))


def _pow2_ceil(n):
    return 1 << max(0, (int(n) - 1).bit_length())


def scalar_arg(value, ctype):
    """A scalar's value converted for the kernel argument type ``ctype``."""
    return scalar_converter(ctype)(value)


def scalar_converter(ctype):
    """The one-argument function :func:`scalar_arg` applies for ``ctype``
    (looked up once per recorded launch, not per call)."""
    return _CONVERTERS.get(ctype, signed_arg)


def scalar_parts(ctype):
    """The converters giving the packed argument values of a ``ctype`` scalar,
    in order: one, or two for a complex scalar (its real and imaginary parts)."""
    if ctype == "ga_complex128":
        return (real_part, imaginary_part)
    return (scalar_converter(ctype),)


def real_part(value):
    """A complex scalar's real part, as a float."""
    return float(complex(value).real)


def imaginary_part(value):
    """A complex scalar's imaginary part, as a float."""
    return float(complex(value).imag)


def signed_arg(value):
    """An integer scalar for a ``long long`` argument."""
    # a Python int above 2**63 (stored into a uint64) travels as its bit
    # pattern; C's conversion to the unsigned type restores it
    return (int(value) + 2**63) % 2**64 - 2**63


def unsigned_arg(value):
    """An integer scalar for an ``unsigned long long`` argument."""
    return int(value) % 2**64


def bool_arg(value):
    """A bool scalar, passed as a ``long long`` 0 or 1."""
    return int(bool(value))


_CONVERTERS = {"double": float, "unsigned long long": unsigned_arg, "bool": bool_arg}

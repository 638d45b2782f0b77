"""Fusion planning: one op-tree assignment -> the fewest kernel programs.

In: a destination tensor view and a checked op-tree.  Out: a list of
:class:`Step` objects, each one kernel: a :class:`Program` (the structure
code generation needs: instructions in dependency order, their dtypes,
reduction stages -- no sizes, pointers or scalar values, so it is the
cache key) plus the bindings a launch needs (tensors, scalar values, the
iteration shape and reduced axes).

How a tree is cut into kernels:

* identical subtrees are merged (common-subexpression elimination);
* reductions over the same operand shape and axes as the outermost one
  become stages of one kernel; a reduction over other axes is hoisted
  into its own kernel writing a pooled temporary, which the main kernel
  then reads as a broadcast operand;
* a kernel is ``ew`` (no reductions), ``reduce`` (the destination has the
  reduced axes of size 1) or ``bcast`` (reduced values are broadcast back
  over the full shape, as in ``A - mean(A, axis=1)``);
* a destination that overlaps an operand read through a different view
  (``A[1:] = A[:-1]``) is computed into a temporary first, as numpy does.
"""
from dataclasses import dataclass

import numpy as np

from ..core import dtypes, ops
from ..core.array import Tensor
from ..core.optree import OpTreeNode, Scalar, operand_type, walk
from ..core.shapes import size_of
from ..cuda.semaphores import COUNTER_BYTES
from .split import SplitMixin, is_columnar, should_split


#: kernels of one assignment that a last block finishes: one 4-byte block
#: counter each, in the counter bytes of a semaphore block
MAX_COUNTERS = COUNTER_BYTES // 4
#: the most rows, and row elements in all, a partial kernel's last block
#: reduces in place of a finishing kernel: at least 32 threads a row and 8
#: rows a pass over 256 threads, so at most two passes, each a few reads
LAST_BLOCK_ROWS = 16
LAST_BLOCK_ELEMENTS = 16384


@dataclass(frozen=True)
class Instr:
    """One instruction of a kernel program.

    ``op`` is an op name, or ``load`` (``arg`` = leaf index), ``scalar``
    (``arg`` = scalar index) or ``rand`` (``arg`` = stream index).
    ``args`` are indices of earlier instructions; ``in_ctypes`` the C types
    the operands are converted to; ``ctype`` the C type of the result.
    ``level`` is ``row`` when the value is constant along the reduced axes,
    ``stage`` the reduction pass after which it can be computed.
    """

    op: str
    args: tuple
    arg: object
    dtype: str
    ctype: str
    in_ctypes: tuple
    level: str
    stage: int


@dataclass(frozen=True)
class Program:
    """Structure of one kernel; hashable, and the kernel cache's key."""

    mode: str
    instrs: tuple
    leaf_types: tuple
    scalar_types: tuple
    out_type: str
    out_dtype: str
    root: int
    nstages: int


@dataclass
class Step:
    """One kernel launch: a program and what it runs on."""

    program: Program
    out: Tensor
    leaves: list
    scalars: list
    shape: tuple
    axes: tuple
    chunks: int = 0
    #: a one-block step run by this partial step's last block to finish
    finish: "Step" = None

    @property
    def rows(self):
        """Points of the kept axes: rows the step reduces (or elements it writes)."""
        return size_of(d for a, d in enumerate(self.shape) if a not in self.axes)

    @property
    def length(self):
        """Elements of a row: the size of the reduced axes."""
        return size_of(self.shape[a] for a in self.axes)


def plan(backend, out, tree):
    """Cut ``out[...] = tree`` into kernel steps, in launch order.

    Returns
    -------
    (list of Step, list of Tensor)
        The steps, and the temporaries they use, in allocation order.
    """
    planner = _Planner(backend)
    return _finish_in_last_block(planner.assign(out, tree)), planner.temps


def _finish_in_last_block(steps):
    """Fold each small reduction into the partial kernel just before it.

    A long reduction is two kernels (:mod:`~gpuarray.fusion.split`): partials
    over the whole GPU, then a small kernel combining them -- one block for
    a reduction to one value.  The partial kernel's last block to finish can
    run the second program itself (:mod:`~gpuarray.fusion.generate`): one
    launch fewer on the host, no gap between the kernels on the device.
    Only where one block does the second's work in about two passes over
    its rows (:data:`LAST_BLOCK_ROWS`, :data:`LAST_BLOCK_ELEMENTS`), and not
    where it draws random numbers: its draws would change.
    """
    merged, counters = [], 0
    for step in steps:
        last = merged[-1] if merged else None
        if (last is not None and last.program.mode == "partial" and last.finish is None
                and step.program.mode == "reduce" and step.rows <= LAST_BLOCK_ROWS
                and step.rows * step.length <= LAST_BLOCK_ELEMENTS
                and not step.out.rounding and counters < MAX_COUNTERS
                and all(ins.op != "rand" for ins in step.program.instrs)):
            last.finish = step
            counters += 1
        else:
            merged.append(step)
    return merged


class _Planner(SplitMixin):
    def __init__(self, backend):
        self.backend = backend
        self.sms = getattr(backend, "sms", 132)
        self.steps = []
        self.temps = []

    def assign(self, out, tree):
        if _overlaps(out, tree):
            temp = self.materialize(tree)
            self.kernel(out, temp)
        else:
            self.kernel(out, tree)
        return self.steps

    def materialize(self, node):
        """Evaluate ``node`` into a pooled temporary and return it.

        float16/bfloat16 intermediates are kept in float32, so hoisting a
        value out of a kernel does not add a rounding.
        """
        storage = np.float32 if dtypes.is_low_precision(node.dtype) else node.dtype
        temp = self.backend.empty(node.shape, storage)
        self.temps.append(temp)
        self.kernel(temp, node)
        return _Logical(temp, node.dtype)

    def kernel(self, out, tree):
        if isinstance(tree, OpTreeNode) and tree.op == "squeeze":
            out, tree = self._unsqueeze_root(out, tree)
        tree = self._replace_inner_squeezes(tree)
        tree = _cse(tree, {})
        shape, axes, tree = self._choose_space(out, tree)
        if axes and should_split(shape, axes, self.sms, is_columnar(tree, shape, axes)):
            tree = self.split_reductions(tree, shape, axes, {})
            shape, axes, tree = self._choose_space(out, tree)
        mode = "ew" if not axes else ("bcast" if out.shape == shape else "reduce")
        self.add_step(mode, out, tree, shape, axes)

    def add_step(self, mode, out, tree, shape, axes, chunks=0):
        """Queue one kernel computing ``tree`` into ``out``."""
        step = _build(mode, out, tree, shape, axes)
        step.chunks = chunks
        self.steps.append(step)

    @staticmethod
    def rebuild(node, args):
        """``node`` with new operands (the same node when they are unchanged)."""
        return _rebuild_if_changed(node, args)

    @staticmethod
    def logical(tensor, dtype):
        """A float32 temporary read as holding ``dtype`` values."""
        return _Logical(tensor, dtype)

    def _unsqueeze_root(self, out, squeeze):
        child = squeeze.args[0]
        if out.shape == squeeze.shape:
            return out.reshape(child.shape), child
        return out, self.materialize(child).reshape(squeeze.shape)

    def _replace_inner_squeezes(self, node):
        if not isinstance(node, OpTreeNode):
            return node
        if node.op == "squeeze":
            return self.materialize(node.args[0]).reshape(node.shape)
        args = tuple(self._replace_inner_squeezes(a) for a in node.args)
        return _rebuild_if_changed(node, args)

    def _choose_space(self, out, tree):
        """Pick the (shape, axes) of the reductions fused here; hoist the rest."""
        reductions = [n for n in walk(tree) if isinstance(n, OpTreeNode) and n.is_reduction]
        if not reductions:
            return out.shape, (), tree
        outer = reductions[-1]  # postorder: the last one is outermost
        shape, axes = outer.args[0].shape, outer.attrs
        keep = tuple(1 if i in axes else d for i, d in enumerate(shape))
        if out.shape not in (shape, keep):
            shape, axes = out.shape, ()
        tree = self._hoist(tree, shape, axes, {})
        return shape, axes, tree

    def _hoist(self, node, shape, axes, memo):
        """Materialise reductions that do not reduce ``axes`` of ``shape``."""
        if not isinstance(node, OpTreeNode):
            return node
        if id(node) in memo:
            return memo[id(node)]
        if node.is_reduction and (node.attrs != axes or node.args[0].shape != shape):
            result = self.materialize(node)
        else:
            args = tuple(self._hoist(a, shape, axes, memo) for a in node.args)
            result = _rebuild_if_changed(node, args)
        memo[id(node)] = result
        return result


class _Logical(Tensor):
    """A float32 temporary standing in for a float16/bfloat16 value."""

    def __init__(self, tensor, logical_dtype):
        super().__init__(tensor.backend, tensor.buffer, tensor.shape, tensor.dtype,
                         tensor.strides, tensor.offset)
        self.logical_dtype = np.dtype(logical_dtype)

    def _view(self, shape, strides, offset):
        view = Tensor(self.backend, self.buffer, shape, self.dtype, strides, offset)
        return _Logical(view, self.logical_dtype)


def _rebuild(node, args):
    return OpTreeNode(node.backend, node.op, args, node.attrs, node.shape, node.dtype)


def _rebuild_if_changed(node, args):
    # compare by identity: == on expressions builds an expression
    if all(a is b for a, b in zip(args, node.args)):
        return node
    return _rebuild(node, args)


def _key(node):
    if isinstance(node, Tensor):
        return ("T", node.buffer_ptr(), node.offset, node.shape, node.strides, str(node.dtype))
    if isinstance(node, Scalar):
        # by identity: merging equal values would make the program depend on them
        return ("S", id(node))
    return None


def _cse(node, table):
    """Merge structurally identical subtrees (leaves by identity of their view)."""
    if not isinstance(node, OpTreeNode):
        return table.setdefault(_key(node), node)
    args = tuple(_cse(a, table) for a in node.args)
    key = (node.op, node.attrs, str(node.dtype)) + tuple(id(a) for a in args)
    if node.op == "rand":
        key += (id(node),)
    if key not in table:
        table[key] = _rebuild_if_changed(node, args)
    return table[key]


def _span(t):
    """Byte range [lo, hi) a tensor view touches, as device addresses."""
    lo = hi = t.buffer_ptr() + t.offset
    for d, s in zip(t.shape, t.strides):
        if d > 1:
            lo, hi = (lo + (d - 1) * s, hi) if s < 0 else (lo, hi + (d - 1) * s)
    return lo, hi + t.itemsize


def _overlaps(out, tree):
    """True when an operand shares memory with ``out`` through another view."""
    lo, hi = _span(out)
    for leaf in walk(tree):
        if not isinstance(leaf, Tensor):
            continue
        same = (leaf.buffer_ptr() == out.buffer_ptr() and leaf.offset == out.offset
                and leaf.shape == out.shape and leaf.strides == out.strides
                and leaf.dtype == out.dtype)
        llo, lhi = _span(leaf)
        if not same and llo < hi and lo < lhi:
            return True
    return False


def _build(mode, out, tree, shape, axes):
    """Turn a hoisted, CSE'd tree into a Program and its bindings."""
    builder = _ProgramBuilder(mode, shape, axes)
    root = builder.add(tree)
    program = Program(mode, tuple(builder.instrs), tuple(builder.leaf_types),
                      tuple(builder.scalar_types), dtypes.c_type(out.dtype), str(out.dtype),
                      root, builder.nstages)
    return Step(program, out, builder.leaves, builder.scalars, shape, axes)


class _ProgramBuilder:
    def __init__(self, mode, shape, axes):
        self.mode, self.shape, self.axes = mode, shape, axes
        self.instrs, self.index = [], {}
        self.leaves, self.leaf_types = [], []
        self.scalars, self.scalar_types = [], []
        self.nrand = 0
        self.nstages = 0

    def add(self, node):
        if id(node) in self.index:
            return self.index[id(node)]
        if isinstance(node, Tensor):
            instr = self._leaf(node)
        elif isinstance(node, Scalar):
            instr = self._scalar(node)
        else:
            args = tuple(self.add(a) for a in node.args)
            instr = self._op(node, args)
        self.instrs.append(instr)
        self.index[id(node)] = len(self.instrs) - 1
        return len(self.instrs) - 1

    def _leaf(self, t):
        logical = getattr(t, "logical_dtype", t.dtype)
        lead = len(self.shape) - t.ndim
        row = self.mode != "ew" and all(
            a < lead or t.shape[a - lead] == 1 for a in self.axes)
        self.leaves.append(t)
        self.leaf_types.append(dtypes.c_type(t.dtype))
        return Instr("load", (), len(self.leaves) - 1, str(logical), dtypes.compute_type(logical),
                     (), "row" if row else "elem", 0)

    def _scalar(self, s):
        self.scalars.append(s)
        self.scalar_types.append(dtypes.scalar_c_type(s.value))
        # no dtype: the value's own type must not reach the cache key
        return Instr("scalar", (), len(self.scalars) - 1, "",
                     dtypes.scalar_c_type(s.value), (), "row", 0)

    def _type_scalars(self, args, in_ctypes):
        """Pass scalars in the kind of C type their consumer computes in.

        ``B * 2`` and ``B * 3.5`` on a float tensor then give one program
        (the constant travels as a double either way); a scalar's own
        Python type only decides when the op has no loop type for it.
        """
        for a, ct in zip(args, in_ctypes):
            ins = self.instrs[a]
            if ins.op == "scalar" and ins.ctype == dtypes.scalar_c_type(self.scalars[ins.arg].value):
                arg_type = dtypes.scalar_arg_type(ct)
                self.instrs[a] = Instr("scalar", (), ins.arg, "", arg_type, (), "row", 0)
                self.scalar_types[ins.arg] = arg_type

    def _op(self, node, args):
        operands = [self.instrs[a] for a in args]
        ready = max((i.stage for i in operands), default=0)
        ctype = dtypes.compute_type(node.dtype)
        if node.op == "rand":
            self.nrand += 1
            return Instr("rand", (), self.nrand - 1, "float32", "float", (), "elem", 0)
        if node.is_reduction:
            self.nstages = max(self.nstages, ready + 1)
            in_dtype = node.args[0].dtype if node.op not in ("sum", "prod") else node.dtype
            return Instr(node.op, args, None, str(node.dtype), ctype,
                         (dtypes.compute_type(in_dtype),), "row", ready + 1)
        level = "row" if all(i.level == "row" for i in operands) else "elem"
        in_ctypes = _in_ctypes(node)
        self._type_scalars(args, in_ctypes)
        return Instr(node.op, args, _attr(node), str(node.dtype), ctype, in_ctypes, level, ready)


def _attr(node):
    if node.op == "astype":
        return str(node.attrs[0])
    if node.op == "user":  # the user's function (gpuarray.userkernels): part of the key
        return node.attrs[0]
    return None


def _in_ctypes(node):
    if node.op == "user":
        return node.attrs[0].in_ctypes
    if node.op == "astype":
        return (dtypes.compute_type(node.args[0].dtype),)
    if node.op == "where":
        return ("bool",) + (dtypes.compute_type(node.dtype),) * 2
    loop, _ = ops.resolve(node.op, tuple(_logical_type(a) for a in node.args))
    return tuple(dtypes.compute_type(dt) for dt in loop)


def _logical_type(arg):
    return getattr(arg, "logical_dtype", None) or operand_type(arg)

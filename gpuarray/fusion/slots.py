"""Slots: the values a cached assignment's replay fills its holes from.

In: the destination view and the op-tree of ``out[...] = tree``.  Out:
the slots -- out's address, its rounding bits, the call counter, then each
leaf's address or value -- and the pattern of alignments and shared
buffers that, with the tree's signature, names the situation a recipe was
recorded for (:mod:`gpuarray.fusion.dispatch`).  This runs on every
cached assignment, so it walks the tree once, in C where compiled.
"""
from ..core.optree import OpTreeNode, leaves
from ..core.scalars import Scalar
from ..cuda.mempool import PooledBuffer

#: slot layout of one assignment: out pointer, rounding bits, call counter,
#: then the leaves (and after them the replay's temporaries)
OUT_SLOT, ROUNDING_SLOT, CALL_SLOT, FIRST_LEAF = 0, 1, 2, 3


def slots_of(out, tree):
    """The values a replay fills holes from, and the memory-sharing pattern.

    Slots: out's address, its rounding bits, the call counter (set by the
    replay), each leaf's address (tensors) or value (scalars), the leaves
    in :func:`~gpuarray.core.optree.leaves`' order (walked here, so building
    a node does not collect them).  Pattern: for ``out`` and each tensor
    leaf, its address modulo 16 where its buffer is not met before, else
    :func:`_shared` of the index of the first of them with the same buffer
    (among the distinct buffers in order), the byte distance from it and
    the address modulo 16.  Ints, so the recipe key hashes and compares
    without walking nested tuples.
    """
    buffer = out.buffer
    out_ptr = _address(buffer) + out.offset
    slots = [out_ptr, out._rounding or 0, 0]
    pattern = [out_ptr & 15]
    # each distinct buffer met and the address of its first view, in turn:
    # assignments have a few leaves, so a list searched by identity is
    # cheaper than a dict of ids (and one list than two)
    met = [buffer, out_ptr]
    if type(tree) is OpTreeNode:
        _walk(tree, slots, pattern, met, 0)
    else:
        _leaf(tree, slots, pattern, met)
    return slots, tuple(pattern)


#: how deep :func:`_walk` recurses before walking the rest with a list of
#: pending nodes: the C stack stays small for any tree, and the common
#: shallow tree is walked without building that list
_NESTING = 64


def _walk(node, slots, pattern, met, depth):
    """:func:`slots_of`' work for the leaves of a tree, operands left to right."""
    if depth == _NESTING:
        _walk_deep(node, slots, pattern, met)
        return
    for arg in node.args:
        if type(arg) is OpTreeNode:
            _walk(arg, slots, pattern, met, depth + 1)
        else:
            _leaf(arg, slots, pattern, met)


def _walk_deep(tree, slots, pattern, met):
    """:func:`_walk` without recursion, for trees nested deeper than
    ``_NESTING``: the leaves in :func:`~gpuarray.core.optree.leaves`' order."""
    for leaf in leaves(tree):
        _leaf(leaf, slots, pattern, met)


def _leaf(leaf, slots, pattern, met):
    """:func:`slots_of`' work for one leaf, a scalar or a tensor."""
    if type(leaf) is Scalar:
        s = leaf
        slots.append(s.value)
        return
    t = leaf
    buffer = t.buffer
    ptr = _address(buffer) + t.offset
    slots.append(ptr)
    for group in range(len(met) // 2):
        if met[2 * group] is buffer:
            pattern.append(_shared(group, ptr - met[2 * group + 1], ptr & 15))
            return
    met.append(buffer)
    met.append(ptr)
    pattern.append(ptr & 15)


def _shared(group, delta, align):
    """The pattern entry of a tensor sharing the ``group``-th buffer met, at
    ``delta`` bytes from its first tensor, with address modulo 16 ``align``:
    a negative int (a new buffer's entry is its alignment, 0 to 15), one per
    triple (the distance zigzag-coded to be non-negative); the triple itself
    past 2**16 buffers (no int equals a tuple)."""
    if group >= 1 << 16:
        return group, delta, align
    zigzag = 2 * delta if delta >= 0 else -2 * delta - 1
    return -1 - ((zigzag << 20) | (group << 4) | align)


def _address(buffer):
    """A tensor buffer's device pointer (raises for a freed pool buffer)."""
    if type(buffer) is PooledBuffer:
        block = buffer
        return block.pointer()
    return buffer.ptr  # memory another library lent (interop)

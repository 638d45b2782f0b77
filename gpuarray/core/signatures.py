"""Signatures: the ints that name op-tree structures for the recipe cache.

In: an op's name and its operands' signatures, or any node's structure as
a tuple.  Out: an int no other structure has, and for the fast paths the
facts kept beside it.  A cached assignment's recipe key
(:mod:`gpuarray.fusion.dispatch`) holds the tree's signature, so it hashes
and compares one int for the whole tree; a tensor's signature names its
layout (:func:`gpuarray.core.array.layout_sig`, non-negative ids), a
scalar's its type and a node's its structure (negative ids, from one
counter here).

The fast paths of :mod:`gpuarray.core.optree` (an operator or an
elementwise function) find a node's id with its shape and dtype in
:func:`binary_table` / :func:`unary_table` of the op, keyed by the
operands' signatures (two paired into one int, :func:`pair`): the
operands' signatures fix both, so broadcasting and type resolution run
once per structure.  Any other node takes its id from :func:`structure`,
keyed by ``(op, attrs, dtype)`` and the operands' signatures.  The tables
are bounded and ids never repeat: clearing a table makes later trees miss
a recipe once, never match a wrong one.
"""
import itertools

#: the next structure id (negative, counting down)
_structure_ids = itertools.count(-1, -1)
#: fast-path entries per op name, and ids of other structures
_BINARY = {}
_UNARY = {}
_STRUCTURES = {}
#: entries a table holds before it is emptied (a few MB at most)
_MAX_STRUCTURES = 1 << 14


def new_structure_sig():
    """A signature no operand has had before (see :attr:`Operand.sig`)."""
    return next(_structure_ids)


def structure(key):
    """The int naming the structure ``key``, a tuple (made on first use)."""
    sig = _STRUCTURES.get(key)
    if sig is None:
        sig = new_structure_sig()
        keep(_STRUCTURES, key, sig)
    return sig


def keep(table, key, value):
    """``table[key] = value``, emptying the table first where it is full."""
    if len(table) >= _MAX_STRUCTURES:
        table.clear()
    table[key] = value


def binary_table(name):
    """The fast path's table of two-operand op ``name``: :func:`pair` of the
    operands' signatures -> what :mod:`~gpuarray.core.optree` keeps."""
    return _table(_BINARY, name)


def unary_table(name):
    """The fast path's table of one-operand op ``name``, by the operand's signature."""
    return _table(_UNARY, name)


def _table(tables, name):
    table = tables.get(name)
    if table is None:
        table = tables[name] = {}
    return table


def pair(a, b):
    """One key for two operand signatures: an int where both lie within 32
    bits, else the tuple (no int equals a tuple, so the two kinds never
    meet).  The int holds ``a`` in its high half and ``a ^ b`` in its low
    half: no two pairs share it, and a dict, which indexes by the low bits,
    spreads the pairs of one operand as well as those of the other."""
    high, low, mask = a, b, 0xFFFFFFFF  # C integers where compiled: ids stay far below 2**63
    if -0x80000000 <= high <= 0x7FFFFFFF and -0x80000000 <= low <= 0x7FFFFFFF:
        key = high * 65536 * 65536 + ((high ^ low) & mask)  # no overflow: |high| < 2**31
        return key
    return a, b

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
operands' signatures (of two operands: the first's, then the second's,
:func:`keep_binary`): the operands' signatures fix both, so broadcasting
and type resolution run once per structure.  Any other node takes its id
from :func:`structure`, keyed by ``(op, attrs, dtype)`` and the operands'
signatures.  The tables are bounded and ids never repeat: clearing a
table makes later trees miss a recipe once, never match a wrong one.
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
#: second operands a binary table holds per first one (a program meets a few)
_MAX_PARTNERS = 1 << 6


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
    """The fast path's table of two-operand op ``name``: the first operand's
    signature -> a table by the second's -> what :mod:`~gpuarray.core.optree`
    keeps.  Two probes by int objects the operands hold already: a key made
    of both would be a new int (allocated, hashed, compared by value and
    freed) per node."""
    return _table(_BINARY, name)


def keep_binary(table, first, second, value):
    """``table[first][second] = value`` in a :func:`binary_table`, each level
    emptied first where it is full."""
    partners = table.get(first)
    if partners is None:
        partners = {}
        keep(table, first, partners)
    elif len(partners) >= _MAX_PARTNERS:
        partners.clear()
    partners[second] = value


def unary_table(name):
    """The fast path's table of one-operand op ``name``, by the operand's signature."""
    return _table(_UNARY, name)


def _table(tables, name):
    table = tables.get(name)
    if table is None:
        table = tables[name] = {}
    return table

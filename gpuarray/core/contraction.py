"""Contractions over labelled axes: the engine under ``einsum``, ``matmul``,
``tensordot``, ``inner``, ``vecdot`` and ``vdot``.

In: operands of one factory and one dtype, each with a tuple of axis labels
(any hashable, one per axis, none twice in an operand -- diagonals are taken
before), lengths that agree or are 1 (numpy's broadcasting; callers check
and raise numpy's errors), and the labels of the result in order.  Out: the
result over those labels -- a lazy op-tree or product node where one can
express it, else a tensor (a view of the evaluated product).

Operands are contracted left to right, two at a time (numpy's
``optimize=False`` order).  A pair runs one of two ways:

* a GEMM, for the dtypes the GEMM kernels take (float16, bfloat16,
  float32) when the pair sums over a label both operands have and keeps a
  label only one of them has: each operand is transposed and reshaped (a
  view where its memory allows, else a copy) to ``(batch, M, K)`` and
  ``(batch, K, N)`` -- batch the labels both keep, K those summed -- and
  multiplied by ``batched_dot`` (``dot`` without a batch).  Labels only one
  operand has and nothing needs are summed out first (a fused reduction);
  a label of length one facing a longer one is dropped (it broadcasts).
  When each of batch, M and N is at most one label the product stays a
  lazy node, so it fuses with the assignment that consumes it (bias, relu:
  the GEMM's epilogue); otherwise it is evaluated and viewed in the
  labels' shape.
* a broadcast multiply and sum: every other dtype (integers, bool,
  float64), products without a summed label (outer and elementwise
  products), and batches of inner products (M = N = 1: a GEMM tile would
  be almost empty).  Both operands are viewed over the union of the labels,
  multiplied and summed over the labels not kept -- one lazy tree, which
  the fusion compiler runs as one kernel.

Results have the operands' dtype, as numpy's products: integer sums run
wider and wrap back, a bool sum is "any".  The CPU factory runs the same
steps with numpy.  Mixed into both factories through
:class:`gpuarray.core.products.TensorProductFunctions`.
"""
import math

from . import dtypes
from .optree import squeeze

#: operand dtypes the GEMM kernels read
GEMM_DTYPES = dtypes.KERNEL_FLOATS


class ContractionFunctions:
    """Mixin: labelled contractions of operands, as batched GEMMs or fused trees."""

    def _contract(self, terms, out_labels):
        """The contraction of ``terms`` -- ``(value, labels)`` pairs, one dtype --
        left to right, as a value over ``out_labels`` (in that order)."""
        out_labels = tuple(out_labels)
        value, labels = terms[0][0], tuple(terms[0][1])
        for i in range(1, len(terms)):
            # a label is kept while the result or an operand still to come has it
            keep = set(out_labels).union(*(set(t[1]) for t in terms[i + 1:]))
            x, xl = terms[i]
            value, labels = self._pair(value, labels, x, tuple(xl), keep, out_labels)
        drop = [n for n, c in enumerate(labels) if c not in out_labels]
        if drop:
            value = self._sum_axes(value, drop)
            labels = tuple(c for c in labels if c in out_labels)
        return self._arranged(value, labels, out_labels)

    def _pair(self, x, xl, y, yl, keep, order):
        """Contract two labelled operands; return ``(value, labels)``."""
        xs, ys = dict(zip(xl, x.shape)), dict(zip(yl, y.shape))
        # the labels each operand really has: a length one facing a longer one broadcasts
        xe = [c for c in xl if not xs[c] == 1 != ys.get(c, 1)]
        ye = [c for c in yl if not ys[c] == 1 != xs.get(c, 1)]
        summed = any(c in ye and c not in keep for c in xe)
        alone = any(c in keep for c in set(xe) ^ set(ye))
        if x.dtype in GEMM_DTYPES and summed and alone:
            x, xl = self._gemm_ready(x, xl, xe, ye, keep)
            y, yl = self._gemm_ready(y, yl, ye, xe, keep)
            return self._gemm_pair(x, xl, y, yl, keep, order)
        return self._fused_pair(x, xl, y, yl, keep, order)

    def _fused_pair(self, x, xl, y, yl, keep, order):
        """``sum(x * y)`` over the labels not kept: one lazy broadcast tree."""
        union = list(dict.fromkeys(xl + yl))
        kept = _in_order([c for c in union if c in keep], order)
        summed = [c for c in union if c not in keep]
        axes = kept + summed
        product = self._aligned(x, xl, axes) * self._aligned(y, yl, axes)
        if summed:
            product = self._sum_axes(product, range(len(kept), len(axes)))
        return product, tuple(kept)

    def _gemm_ready(self, x, xl, own, other, keep):
        """``x`` with its broadcast labels dropped (not in ``own``) and the labels
        nothing needs (in neither ``other`` nor ``keep``) summed out."""
        if len(own) < len(xl):
            t = self._view_source(x)
            x = t[tuple(slice(None) if c in own else 0 for c in xl)]
            xl = tuple(own)
        alone = [n for n, c in enumerate(xl) if c not in other and c not in keep]
        if alone:
            x = self._sum_axes(x, alone)
            xl = tuple(c for n, c in enumerate(xl) if n not in alone)
        return x, xl

    def _gemm_pair(self, x, xl, y, yl, keep, order):
        """``x`` and ``y`` (every label shared or kept) multiplied by one GEMM."""
        ks = [c for c in xl if c in yl and c not in keep]
        batch = _in_order([c for c in xl if c in yl and c in keep], order)
        ms, ns = [c for c in xl if c not in yl], [c for c in yl if c not in xl]
        if ms and ns and _rank(ns[0], order) < _rank(ms[0], order):
            # the result wants y's labels first: y^T x^T, with no copy of either
            x, xl, y, yl, ms, ns = y, yl, x, xl, ns, ms
        if not batch:
            # an operand's labels before its contracted axes, past one, become batches
            # over the other (shared) operand: the node keeps fewer labels per group,
            # and a (batch, K, N) operand stays a view where (K, batch * N) is a copy
            batch = _leading(xl, ms, ks) or _leading(yl, ns, ks)
            ms, ns = [c for c in ms if c not in batch], [c for c in ns if c not in batch]
        if batch:
            # one side without the batch labels is one matrix shared by every batch
            bx, by = ([c for c in batch if c in labels] for labels in (xl, yl))
            a = self._grouped(x, xl, [bx, ms, ks] if bx else [ms, ks])
            node = self.batched_dot(a, self._grouped(y, yl, [by, ks, ns] if by else [ks, ns]))
        else:  # a side without its own labels is a vector: dot's node has the labels' shape
            a = self._grouped(x, xl, [g for g in (ms, ks) if g])
            node = self.dot(a, self._grouped(y, yl, [g for g in (ks, ns) if g]))
        labels = tuple(batch + ms + ns)
        sizes = {**dict(zip(xl, x.shape)), **dict(zip(yl, y.shape))}
        shape = tuple(sizes[c] for c in labels)
        if len(batch) <= 1 and len(ms) <= 1 and len(ns) <= 1:
            # the labels' shape is the node's without its axes of length one: stays lazy
            return (node if node.shape == shape else squeeze(self, node, shape)), labels
        return self.evaluate(node).reshape(shape), labels

    def _grouped(self, x, xl, groups):
        """``x`` with its axes ordered by ``groups`` and each group merged into one axis."""
        t = self._view_source(x)
        t = t.transpose([xl.index(c) for group in groups for c in group])
        sizes = dict(zip(xl, x.shape))
        return t.reshape(tuple(math.prod(sizes[c] for c in group) for group in groups))

    def _aligned(self, x, xl, axes):
        """``x`` viewed over ``axes`` (its own labels in that order, new axes of
        length one for the others); a tree whose labels need no move stays a tree."""
        present = [c for c in axes if c in xl]
        if list(xl) == present and axes[len(axes) - len(present):] == present:
            return x  # missing labels only in front: broadcasting adds them
        t = self._view_source(x).transpose([xl.index(c) for c in present])
        return t[tuple(slice(None) if c in xl else None for c in axes)]

    def _sum_axes(self, x, axes):
        """``x`` summed over ``axes`` (dropped), in ``x``'s dtype as numpy's products:
        integers are summed wider and wrap back, bool sums are "any"."""
        axes = tuple(axes)
        total = self.sum(x, axis=axes, keepdims=True)
        if total.dtype != x.dtype:
            total = self.astype(total, x.dtype)
        # the axes dropped last, so that the cast runs in the reduction's kernel
        return squeeze(self, total, tuple(d for i, d in enumerate(total.shape) if i not in axes))

    def _arranged(self, value, labels, order):
        """``value`` with its axes in ``order`` (a transposed view where it must move)."""
        if tuple(labels) == tuple(order):
            return value
        return self._view_source(value).transpose([labels.index(c) for c in order])


def _leading(labels, alone, ks):
    """The labels of ``alone`` but its last that come before the first of ``ks``."""
    first = min(labels.index(c) for c in ks)
    return [c for c in alone[:-1] if labels.index(c) < first]


def _rank(label, order):
    """Position of ``label`` in ``order``; labels not in it come after."""
    return order.index(label) if label in order else len(order)


def _in_order(labels, order):
    """``labels`` sorted by their place in ``order`` (the others last, as given)."""
    return sorted(labels, key=lambda c: _rank(c, order))


def dims_text(dims):
    """numpy's text for a shape in its iterator errors: ``(2,3)``, ``(4,)``, ``()``;
    None entries are ``newaxis`` and leading ones are left out."""
    start = next((i for i, d in enumerate(dims) if d is not None), len(dims))
    if start == len(dims):
        return "()"
    body = ",".join("newaxis" if d is None else str(d) for d in dims[start:])
    return f"({body},)" if len(dims) == 1 else f"({body})"


def broadcast_error(operands, requested=None):
    """numpy's iterator error for operands that do not broadcast.

    Parameters
    ----------
    operands : sequence of (shape, remapped dims)
        Each operand's shape and its dimensions as the iterator sees them
        (None where it has none).
    requested : tuple, optional
        The core dimensions of a gufunc's output.
    """
    text = "".join(f"{dims_text(shape)}->{dims_text(dims)} " for shape, dims in operands)
    if requested is not None:
        text += f" and requested shape {dims_text(requested)}"
    return ValueError("operands could not be broadcast together with remapped shapes "
                      "[original->remapped]: " + text)


def batch_labels(ndim):
    """Labels of ``ndim`` broadcast (batch) axes, counted from the right: numpy
    aligns batches on their last axis."""
    return tuple(range(ndim - 1, -1, -1))


def check_batches(shapes_, batches, core):
    """Raise numpy's gufunc error when the batch shapes do not broadcast together.

    ``shapes_`` are the operands' shapes, ``batches`` their batch shapes,
    ``core`` the output's core dimensions (the requested shape).
    """
    width = max(len(b) for b in batches)
    for i in range(1, width + 1):
        sizes = {b[-i] for b in batches if len(b) >= i} - {1}
        if len(sizes) > 1:
            raise broadcast_error(
                [(s, [None] * (width - len(b)) + list(b) + [None] * len(core))
                 for s, b in zip(shapes_, batches)], tuple(core))

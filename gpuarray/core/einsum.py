"""numpy's ``einsum``: subscripts parsed as numpy parses them, then contracted
by :mod:`gpuarray.core.contraction`.

In: a subscripts string (``"ij,jk->ik"``, ``"...ii->...i"``, implicit
output) or numpy's interleaved form (``einsum(A, [0, 1], B, [1, 2])``), and
operands of one factory (host data is copied in).  Out: the result over
the output subscripts -- a view where numpy returns one (a transpose or
diagonal of one operand), a lazy tree or product node where the
contraction allows, else a tensor.

Repeated subscripts in an operand take its diagonal (a view); subscripts
of one operand that nothing else needs are summed out; the operands are
then contracted left to right -- numpy's ``optimize=False`` order, whatever
``optimize`` says -- each pair as a batched GEMM (float16, bfloat16,
float32) or as a fused broadcast multiply and sum (other dtypes).  The
result dtype is the operands' promoted dtype, as numpy's.  Errors are
numpy's, with its wording: malformed subscripts, operand counts, collapsed
dimensions that differ, and dimensions that do not broadcast (numpy's
"remapped shapes" message).  Mixed into both factories through
:class:`gpuarray.core.products.TensorProductFunctions`.
"""
import string

from . import ops
from .contraction import ContractionFunctions, broadcast_error

#: what numpy takes as a subscript (ASCII letters)
LETTERS = frozenset(string.ascii_letters)
_NO_ELLIPSIS = ("dimensions than subscripts given in einstein sum, but no '...' ellipsis "
                "provided to broadcast the extra dimensions.")


class EinsumFunctions(ContractionFunctions):
    """Mixin: numpy's ``einsum`` on the contraction engine."""

    def einsum(self, subscripts, *operands, out=None, optimize=False):
        """Einstein summation over the operands, as ``numpy.einsum``.

        Parameters
        ----------
        subscripts : str
            numpy's subscripts: one comma-separated group of letters per
            operand, ``...`` for broadcast axes, and ``->`` before the
            output's subscripts (without it, the subscripts that occur once,
            in alphabetical order, after the broadcast axes).  Or numpy's
            interleaved form: ``einsum(op0, sublist0, op1, sublist1, ...,
            [sublistout])`` with integers 0-51 and ``Ellipsis``.
        *operands : array_like
            Tensors or trees of this factory, or host data (copied in).
        out : Tensor, optional
            Where to evaluate the result.
        optimize : bool or str
            Accepted for numpy's signature; the operands are always
            contracted left to right (numpy's ``optimize=False``).

        Returns
        -------
        Tensor or Expression
            A view of the one operand (transpose, diagonal), a lazy tree or
            product node, or a tensor; the operands' promoted dtype.

        Raises
        ------
        ValueError
            Malformed subscripts, too many or too few operands, repeated
            subscripts over axes of different lengths, axes that do not
            broadcast, as numpy's.
        TypeError
            A malformed interleaved sublist.
        """
        if not isinstance(subscripts, (str, bytes)):
            subscripts, operands = _interleaved((subscripts,) + operands)
        elif not operands:
            raise ValueError("must specify the einstein sum subscripts string and at least one operand")
        if isinstance(subscripts, bytes):
            subscripts = subscripts.decode("ascii")
        xs = [self._lazy_operand(x) for x in operands]
        inputs, output = parse(subscripts, [x.ndim for x in xs])
        check_sizes(inputs, output, [x.shape for x in xs], single=len(xs) == 1 and out is None)
        dtype = ops.promote(*(x.dtype for x in xs))
        terms = []
        for x, labels in zip(xs, inputs):
            x, labels = self._collapsed(x, labels)
            terms.append((x if x.dtype == dtype else self.astype(x, dtype), labels))
        return self._finish(self._contract(terms, output), out)

    def _collapsed(self, x, labels):
        """``x`` with each repeated label's axes replaced by their diagonal (a view)."""
        labels = list(labels)
        while len(set(labels)) < len(labels):
            label = next(c for c in labels if labels.count(c) > 1)
            i = labels.index(label)
            j = labels.index(label, i + 1)
            x = self.diagonal(x, 0, i, j)  # the diagonal becomes the last axis
            labels = [c for n, c in enumerate(labels) if n not in (i, j)] + [label]
        return x, tuple(labels)


def parse(subscripts, ndims):
    """The labels of each operand and of the output, numpy's way.

    Letters label themselves; the axes under ``...`` get integer labels,
    0 for the last, so that operands' broadcast axes align on the right.
    """
    inputs, counts, rest = [], {}, subscripts
    for k, ndim in enumerate(ndims):
        length = next((i for i, c in enumerate(rest) if c in ",-"), len(rest))
        stop = rest[length:length + 1]
        if k == len(ndims) - 1 and stop == ",":
            raise ValueError("more operands provided to einstein sum function than specified "
                             "in the subscripts string")
        if k < len(ndims) - 1 and stop != ",":
            raise ValueError("fewer operands provided to einstein sum function than specified "
                             "in the subscripts string")
        labels = _operand_labels(rest[:length], ndim, k)
        for c in labels:
            counts[c] = counts.get(c, 0) + 1
        inputs.append(labels)
        rest = rest[length + (k < len(ndims) - 1):]
    broadcast = max(sum(isinstance(c, int) for c in labels) for labels in inputs)
    if not rest:
        once = sorted(c for c, n in counts.items() if n == 1 and isinstance(c, str))
        return inputs, list(range(broadcast - 1, -1, -1)) + once
    if not rest.startswith("->"):
        raise ValueError("einstein sum subscript string does not contain proper '->' output specified")
    return inputs, _output_labels(rest[2:], broadcast, counts)


def _operand_labels(text, ndim, k):
    """One operand's labels (numpy's ``parse_operand_subscripts``)."""
    labels, ellipsis, i = [], None, 0
    while i < len(text):
        c = text[i]
        if c in LETTERS:
            if len(labels) >= ndim:
                raise ValueError(f"einstein sum subscripts string contains too many subscripts "
                                 f"for operand {k}")
            labels.append(c)
        elif c == ".":
            if ellipsis is not None or text[i:i + 3] != "...":
                raise ValueError("einstein sum subscripts string contains a '.' that is not part "
                                 f"of an ellipsis ('...') in operand {k}")
            ellipsis, i = len(labels), i + 2
        elif c != " ":
            raise _invalid(c)
        i += 1
    if ellipsis is None:
        if len(labels) != ndim:
            raise ValueError("operand has more " + _NO_ELLIPSIS)
        return labels
    return labels[:ellipsis] + list(range(ndim - len(labels) - 1, -1, -1)) + labels[ellipsis:]


def _output_labels(text, broadcast, counts):
    """The output's labels (numpy's ``parse_output_subscripts``)."""
    labels, ellipsis, i = [], False, 0
    while i < len(text):
        c = text[i]
        if c in LETTERS:
            if c in text[i + 1:]:
                raise ValueError(f"einstein sum subscripts string includes output subscript "
                                 f"'{c}' multiple times")
            if c not in counts:
                raise ValueError(f"einstein sum subscripts string included output subscript "
                                 f"'{c}' which never appeared in an input")
            labels.append(c)
        elif c == ".":
            if ellipsis or text[i:i + 3] != "...":
                raise ValueError("einstein sum subscripts string contains a '.' that is not part "
                                 "of an ellipsis ('...') in the output")
            ellipsis, i = True, i + 2
            labels.extend(range(broadcast - 1, -1, -1))
        elif c != " ":
            raise _invalid(c)
        i += 1
    if broadcast and not ellipsis:
        raise ValueError("output has more " + _NO_ELLIPSIS)
    return labels


def _invalid(c):
    return ValueError(f"invalid subscript '{c}' in einstein sum subscripts string, "
                      "subscripts must be letters")


def check_sizes(inputs, output, shapes_, single):
    """numpy's errors for axes that cannot be contracted: repeated labels over
    lengths that differ, then labels whose lengths do not broadcast."""
    if single:
        _check_single_view(inputs[0], output, shapes_[0])
    sizes = []
    for k, (labels, shape) in enumerate(zip(inputs, shapes_)):
        own = {}
        for c, n in zip(labels, shape):
            if own.setdefault(c, n) != n:
                raise ValueError(f"dimensions in operand {k} for collapsing index '{c}' don't "
                                 f"match ({own[c]} != {n})")
        sizes.append(own)
    for c in set().union(*sizes):
        if len({own[c] for own in sizes if c in own} - {1}) > 1:
            raise _remapped_error(sizes, output)


def _check_single_view(labels, output, shape):
    """numpy's view path for one operand: it checks repeated labels until a
    label the output lacks (then the general check words the error)."""
    first = {}
    for c, n in zip(labels, shape):
        if c in first:
            if first[c] != n:
                raise ValueError(f"dimensions in single operand for collapsing index '{c}' "
                                 f"don't match ({first[c]} != {n})")
        elif c not in output:
            return
        else:
            first[c] = n


def _remapped_error(sizes, output):
    """numpy's iterator message: each operand (diagonals collapsed) over the
    iterator's axes -- the output's, then the summed labels in order."""
    summed = sorted({c for own in sizes for c in own if c not in output})
    axes = list(output) + summed
    return broadcast_error([(tuple(own.values()), [own.get(c) for c in axes]) for own in sizes])


def _interleaved(args):
    """numpy's ``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])`` as a
    subscripts string and the operands."""
    if len(args) < 2:
        raise ValueError("must provide at least an operand and a subscripts list to einsum")
    count = len(args) // 2
    text = ",".join(_sublist(args[2 * k + 1]) for k in range(count))
    if len(args) % 2:
        text += "->" + _sublist(args[-1])
    return text, args[0:2 * count:2]


def _sublist(items):
    """One sublist of the interleaved form as subscripts text."""
    try:
        items = list(items)
    except TypeError:
        raise TypeError("the subscripts for each operand must be a list or a tuple") from None
    text = ""
    for item in items:
        if item is Ellipsis:
            if "..." in text:
                raise ValueError("each subscripts list may have only one ellipsis")
            text += "..."
        elif isinstance(item, int):
            if not 0 <= item < 52:
                raise ValueError("subscript is not within the valid range [0, 52)")
            text += string.ascii_uppercase[item] if item < 26 else string.ascii_lowercase[item - 26]
        else:
            raise TypeError("each subscript must be either an integer or an ellipsis")
    return text

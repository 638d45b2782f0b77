"""Choosing and reshaping by value: ``select``, ``choose``, ``piecewise``, ``resize``,
``trim_zeros``.

In: tensors, op-trees or array_likes of one factory and numpy's arguments
(``piecewise`` takes Python callables or constants).  Out: new tensors (a
view for ``trim_zeros``), numpy's values and errors.  ``select`` is one
fused chain of ``where`` (the first true condition wins), ``choose`` one
too (its "raise" mode reads one bool back for the bounds); ``piecewise``
applies each function to the elements its condition selects, through the
boolean-mask gather and assignment; ``resize`` repeats the flattened array
with one gather; ``trim_zeros`` finds the first and last non-zero element
(read back) and slices.
"""
import numpy as np

from ..core import ops
from ..core.index_tricks import check_clip_mode
from ..core.optree import Expression


class ChoosingFunctions:
    """Mixin: ``select``, ``piecewise``, ``resize``, ``trim_zeros``."""

    def select(self, condlist, choicelist, default=0):
        """The choice of the first true condition, else ``default``, as ``numpy.select``.

        Raises
        ------
        ValueError
            Lists of different lengths, or empty.
        TypeError
            A condition not boolean.
        """
        if len(condlist) != len(choicelist):
            raise ValueError("list of cases must be same length as list of conditions")
        if not condlist:
            raise ValueError("select with an empty condition list is not possible")
        conditions = [self._choice_operand(c) for c in condlist]
        for k, c in enumerate(conditions):
            if c.dtype != np.bool_:
                raise TypeError(f"invalid entry {k} in condlist: should be boolean ndarray")
        choices = [self._choice_operand(c) for c in choicelist]
        kind = ops.promote(*(c.dtype for c in choices), self.operand(default).operand_type)
        result = self.astype(self.operand(default), kind)
        for condition, choice in zip(reversed(conditions), reversed(choices)):
            result = self.where(condition, choice, result)
        return self.evaluate(self.astype(result, kind))

    def choose(self, a, choices, out=None, mode="raise"):
        """``choices[a[i]][i]`` at each position (all broadcast), as ``numpy.choose``.

        Raises
        ------
        TypeError
            ``a`` not integer or bool (numpy's 'safe' casting message).
        ValueError
            No choices, a bad ``mode``, or with mode "raise" an index out of
            range (one bool read back).
        """
        check_clip_mode(mode)
        index = self._choice_operand(a)
        if index.dtype.kind not in "biu":
            raise TypeError(f"Cannot cast array data from {index.dtype!r} to dtype('int64') "
                            "according to the rule 'safe'")
        options = [self._choice_operand(c) for c in choices]
        if not options:
            raise ValueError("0-length sequence.")
        n = len(options)
        index = self.astype(index, np.int64)
        if mode == "wrap":
            index = self.mod(index, n)
        elif mode == "clip":
            index = self.clip(index, 0, n - 1)
        elif self._any_true(self.logical_or(self.less(index, 0), self.greater_equal(index, n))):
            raise ValueError("invalid entry in choice array")
        kind = ops.promote(*(c.operand_type for c in options))
        result = self.astype(options[-1], kind)
        for k in range(n - 2, -1, -1):
            result = self.where(self.equal(index, k), options[k], result)
        return self._finish(self.astype(result, kind), out)

    def piecewise(self, x, condlist, funclist, *args, **kw):
        """``funclist[k]`` of the elements where ``condlist[k]`` holds (a constant
        for a non-callable; one extra function for where none holds), as
        ``numpy.piecewise``."""
        values = self._choice_operand(x)
        values = values if hasattr(values, "strides") else self.evaluate(values)
        conditions = [self._choice_operand(c) for c in
                      (condlist if isinstance(condlist, (list, tuple)) else [condlist])]
        if len(funclist) == len(conditions) + 1:
            none = self.logical_not(self._any_of(conditions))
            conditions.append(self.evaluate(none))
        elif len(funclist) != len(conditions):
            raise ValueError(f"with {len(conditions)} condition(s), either {len(conditions)} or "
                             f"{len(conditions) + 1} functions are expected")
        result = self.zeros(values.shape, values.dtype)
        for condition, function in zip(conditions, funclist):
            mask = self.evaluate(self.broadcast_to(condition, values.shape))
            if callable(function):
                picked = values[mask]
                if picked.size:
                    result[mask] = function(picked, *args, **kw)
            else:
                result[mask] = function
        return result

    def resize(self, a, new_shape):
        """``a`` flattened and repeated (or cut) to ``new_shape``, as ``numpy.resize``."""
        flat = self._contiguous(self._as_tensor(a)).reshape(-1)
        shape = (new_shape,) if np.ndim(new_shape) == 0 else tuple(new_shape)
        if any(n < 0 for n in shape):
            raise ValueError("all elements of `new_shape` must be non-negative")
        size = int(np.prod(shape, dtype=np.int64))
        if size == 0 or flat.size == 0:
            return self.zeros(shape, flat.dtype)
        return self.take(flat, self.arange(size), mode="wrap").reshape(shape)

    def trim_zeros(self, filt, trim="fb"):
        """``filt`` without its leading ("f") and/or trailing ("b") zeros, as
        ``numpy.trim_zeros`` (a view)."""
        x = self._as_tensor(filt)
        nonzero = self.flatnonzero(x)
        if not nonzero.size:
            return x[:0]
        trim = trim.lower()
        first, last = (int(v) for v in self.concatenate([nonzero[:1], nonzero[-1:]]).get())
        return x[(first if "f" in trim else 0):(last + 1 if "b" in trim else x.shape[0])]

    def _choice_operand(self, a):
        return self.operand(a) if isinstance(a, Expression) or np.ndim(a) == 0 else \
            self.array(np.asarray(a))

    def _any_of(self, conditions):
        found = conditions[0]
        for c in conditions[1:]:
            found = self.logical_or(found, c)
        return found

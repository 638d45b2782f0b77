"""numpy's ``pad``: a new tensor with the input in the middle and the margins
filled by mode -- "constant", "edge", "reflect", "symmetric", "wrap" or
"empty".

In: a tensor, op-tree or host data of one factory (as numpy's
``asarray``), numpy's ``pad_width`` (an int, a ``(before, after)`` pair,
one pair per axis, or a dict of axis -> width) and the mode's keyword
arguments (``constant_values``, ``reflect_type``).  Out: a new tensor of
the input's dtype.

It follows numpy's own algorithm, axis after axis, each step a slice
assignment -- one fused copy (or fill) kernel, no kernel of its own: the
input is copied into the middle, then the margins along axis k are filled
from the tensor as padded so far (axes before k at full length, axes after
k only over the input's extent, which later steps overwrite).  "reflect",
"symmetric" and "wrap" fill a margin wider than the input in several
chunks, as numpy does, so the values (``reflect_type="odd"`` included) are
numpy's.  Mixed into both factories through
:class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import numpy as np

#: mode -> the keyword arguments it takes (numpy's table)
_MODES = {
    "constant": ("constant_values",),
    "edge": (),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
    "wrap": (),
    "empty": (),
}
#: numpy's modes this library does not implement
_NOT_IMPLEMENTED = ("linear_ramp", "maximum", "mean", "median", "minimum")


class PaddingFunctions:
    """Mixin: numpy's ``pad``, built from slice assignments (fused copies)."""

    def pad(self, array, pad_width, mode="constant", **kwargs):
        """``array`` padded along each axis, as ``numpy.pad``.

        Parameters
        ----------
        array : array_like
            Input.
        pad_width : int, sequence or dict
            Elements added before and after each axis: one int for all,
            ``(before, after)`` for every axis, ``((before, after), ...)``
            one pair per axis, or ``{axis: width or (before, after)}``.
        mode : str
            "constant" (``constant_values``, default 0: a scalar, a pair or
            one pair per axis), "edge" (the edge value repeated), "reflect"
            (mirrored about the edge, edge excluded), "symmetric" (mirrored,
            edge included), "wrap" (the other end's values) or "empty"
            (undefined).  "reflect" and "symmetric" take ``reflect_type``
            ("even", or "odd": the values reflected through the edge value).

        Returns
        -------
        Tensor
            A new tensor of ``array``'s dtype.

        Raises
        ------
        TypeError
            A ``pad_width`` not of integers.
        ValueError
            A negative width, a ``pad_width`` that does not broadcast to one
            pair per axis, an unknown mode, a keyword the mode does not take,
            or a mode other than "constant" and "empty" extending an empty axis.
        NotImplementedError
            numpy's statistic and ramp modes, and a callable mode.
        """
        x = self._view_source(array)
        widths = _pad_widths(pad_width, x.ndim)
        _check_mode(mode, kwargs)
        out = self.empty(tuple(n + b + a for n, (b, a) in zip(x.shape, widths)), x.dtype)
        inner = tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, widths))
        out[inner] = x
        if mode == "constant":
            self._pad_constant(out, inner, widths, kwargs.get("constant_values", 0))
        elif mode != "empty":
            self._pad_from_values(out, inner, widths, x.shape, mode, kwargs)
        return out

    # -- helpers --------------------------------------------------------
    def _pad_constant(self, out, inner, widths, constant_values):
        """Fill the margins with the constants, axis after axis (numpy's order,
        which decides the corners; numpy's conversion of each value)."""
        values = _as_pairs(constant_values, out.ndim)
        for axis, ((before, after), pair) in enumerate(zip(widths, values)):
            region = out[_roi(inner, axis)]
            region[_at(axis, slice(None, before))] = _as_stored(pair[0], out.dtype)
            region[_at(axis, slice(region.shape[axis] - after, None))] = _as_stored(pair[1], out.dtype)

    def _pad_from_values(self, out, inner, widths, shape, mode, kwargs):
        """The margins of the modes that copy values of the tensor."""
        if 0 in shape:
            # numpy: these modes cannot extend an empty axis; the result is empty anyway
            for axis, (n, pair) in enumerate(zip(shape, widths)):
                if n == 0 and any(pair):
                    raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                     "'constant' or 'empty'")
            return
        odd = kwargs.get("reflect_type", "even") == "odd"
        for axis, (n, pair) in enumerate(zip(shape, widths)):
            region = out[_roi(inner, axis)]
            if mode == "edge" or (mode in ("reflect", "symmetric") and n == 1 and any(pair)):
                _pad_edges(region, axis, pair)  # numpy reflects a single element as an edge
            elif mode == "wrap":
                while any(pair):
                    pair = _wrap_step(region, axis, pair, n)
            else:
                while any(pair):
                    pair = _reflect_step(region, axis, pair, n, mode == "symmetric", odd)


def _pad_widths(pad_width, ndim):
    """numpy's pad_width as one ``(before, after)`` pair of ints per axis."""
    if isinstance(pad_width, dict):
        pairs = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            pairs[axis] = tuple(width) if isinstance(width, tuple) else (width, width)
        pad_width = pairs
    widths = np.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    return [(int(before), int(after)) for before, after in _as_pairs(widths, ndim, as_index=True)]


def _as_pairs(x, ndim, as_index=False):
    """``x`` broadcast to one ``(before, after)`` pair per axis, numpy's rules:
    one value for all, one pair for every axis, or one pair (or value) per axis."""
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3 and (x.size == 1 or (x.size == 2 and x.shape != (2, 1))):
        # numpy's fast path: [[1], [2]] is one value per axis, [1, 2] a pair for all
        first, last = x.ravel()[0], x.ravel()[-1]  # numpy scalars, as numpy's
        if as_index and (first < 0 or last < 0):
            raise ValueError("index can't contain negative values")
        return ((first, last),) * ndim
    if as_index and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return np.broadcast_to(x, (ndim, 2)).tolist()


def _as_stored(value, dtype):
    """A constant converted as numpy's ``padded[...] = value`` converts it
    (numpy scalars cast, Python ints range-checked, NaN refused by integers),
    by numpy itself, as a Python scalar the tensor stores unchanged."""
    cell = np.zeros((), dtype)
    cell[()] = value
    return cell.item()


def _check_mode(mode, kwargs):
    """numpy's errors for the mode and its keyword arguments."""
    if callable(mode) or mode in _NOT_IMPLEMENTED:
        raise NotImplementedError(f"pad mode {mode!r} is not implemented by gpuarray "
                                  f"(it has {', '.join(map(repr, _MODES))})")
    if mode not in _MODES:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - set(_MODES[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")


def _at(axis, index):
    """A key selecting ``index`` along ``axis`` and everything along the axes before."""
    return (slice(None),) * axis + (index,)


def _roi(inner, axis):
    """The part of the padded tensor that padding along ``axis`` fills: every
    axis up to ``axis`` at full length, the later ones over the input only."""
    return (slice(None),) * (axis + 1) + inner[axis + 1:]


def _pad_edges(region, axis, pair):
    """Both margins along ``axis`` as the edge values repeated (broadcast copies)."""
    before, after = pair
    end = region.shape[axis] - after
    region[_at(axis, slice(None, before))] = region[_at(axis, slice(before, before + 1))]
    region[_at(axis, slice(end, None))] = region[_at(axis, slice(end - 1, end))]


def _reflect_step(region, axis, pair, length, symmetric, odd):
    """One chunk of reflection on each side, numpy's ``_set_reflect_both``;
    returns the widths still to fill."""
    before, after = pair
    filled = region.shape[axis] - before - after
    if symmetric:
        # whole periods of the input only, edge repeated
        chunk_max, edge_offset = filled // length * length, 1
    else:
        chunk_max, edge_offset = (filled - 1) // (length - 1) * (length - 1), 0
    if before:
        chunk = min(chunk_max, before)
        stop = before - edge_offset
        values = region[_at(axis, slice(stop + chunk, stop, -1))]
        if odd:
            values = 2 * region[_at(axis, slice(before, before + 1))] - values
        region[_at(axis, slice(before - chunk, before))] = values
        before -= chunk
    if after:
        chunk = min(chunk_max, after)
        start = -after + edge_offset - 2
        values = region[_at(axis, slice(start, start - chunk, -1))]
        if odd:
            values = 2 * region[_at(axis, slice(-after - 1, -after))] - values
        first = region.shape[axis] - after
        region[_at(axis, slice(first, first + chunk))] = values
        after -= chunk
    return before, after


def _wrap_step(region, axis, pair, length):
    """One chunk of wrapping on each side, numpy's ``_set_wrap_both``;
    returns the widths still to fill."""
    before, after = pair
    period = (region.shape[axis] - before - after) // length * length
    left = right = 0
    if before:
        end = before + period
        chunk = region[_at(axis, slice(end - min(period, before), end))]
        if before > period:
            region[_at(axis, slice(before - period, before))] = chunk
            left = before - period
        else:
            region[_at(axis, slice(None, before))] = chunk
    if after:
        start = -after - period
        chunk = region[_at(axis, slice(start, start + min(period, after)))]
        if after > period:
            region[_at(axis, slice(-after, -after + period))] = chunk
            right = after - period
        else:
            region[_at(axis, slice(-after, None))] = chunk
    return left, right

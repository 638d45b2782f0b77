"""numpy's ``default_rng`` on both factories: a :class:`Generator` of random tensors.

In: a seed (None, an int, a sequence of ints or a ``numpy.random.SeedSequence``)
and numpy's arguments of ``random``, ``uniform``, ``normal``,
``standard_normal``, ``exponential`` and ``integers`` (``choice``,
``permutation`` and ``shuffle`` come from :mod:`gpuarray.core.sampling`).
Out: new tensors of the factory holding fresh numbers on every call
(``size=None``: a 0-d tensor), reproducible from the seed.

Every draw is an op-tree over the factory's ``rand()`` leaf (uniform float32
with 24 random bits), transformed in the same fused kernel (Box-Muller,
``-log1p(-u)``, integer multiply-shift) and evaluated while the generator's
own state drives ``rand()`` -- the leaf takes no seed of its own:

* CPU: ``rand()`` reads the factory's numpy Generator; for the draw it is
  swapped for the generator's own ``numpy.random.Generator(Philox(seed))``.
* GPU: ``rand()`` is Philox4x32-10 keyed by the factory's seed and counted
  by (element, leaf, call counter).  For the draw the factory's call counter
  is moved to the generator's own position in [2**31, 2**32) -- plain
  ``rand()`` counts up from 0 -- and put back afterwards.  A generator's
  stream is thus set by its seed *and* the factory's seed; its position has
  31 bits, so two seeds' streams overlap if their positions fall within
  the number of kernels drawn (chance about draws / 2**31).  A draw must not
  run while another thread launches on the same factory.

Either way ``ng.rand()``'s own stream is left exactly as it was.  Mixed into
both factories through :class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import contextlib
import math
import operator

import numpy as np

from . import dtypes, shapes
from .optree import Expression
from .sampling import SamplingMethods

#: GPU call counters at or above this belong to generators (rand() counts from 0)
_CALL_BASE = 1 << 31
#: positions a generator walks before wrapping; the margin keeps one draw's
#: kernels below 2**32, which the kernels' 32-bit counter would wrap to 0
_CALL_SPAN = (1 << 31) - 256
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class RandomFunctions:
    """Mixin: ``default_rng``, numpy's random number generator constructor."""

    def default_rng(self, seed=None):
        """A new :class:`Generator` of this factory's tensors, as ``numpy.random.default_rng``.

        Parameters
        ----------
        seed : None, int, sequence of ints, numpy.random.SeedSequence or Generator
            Entropy (None: fresh from the OS); a Generator of this factory is returned as is.
        """
        if isinstance(seed, Generator) and seed.backend is self:
            return seed
        return Generator(self, seed)


class Generator(SamplingMethods):
    """Random tensors drawn like ``numpy.random.Generator``'s methods.

    Two generators made with the same seed on the same factory (on the GPU:
    factories with the same seed) give the same numbers; CPU and GPU streams
    differ.  Array-valued distribution parameters are not supported.
    """

    def __init__(self, backend, seed=None):
        self.backend = backend
        entropy = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        if hasattr(backend, "_calls"):  # GPU: a position of the Philox call counter
            self._position = int(entropy.generate_state(1, np.uint32)[0]) % _CALL_SPAN
        elif hasattr(backend, "_rng"):  # CPU: rand() reads a numpy Generator
            self._numpy = np.random.Generator(np.random.Philox(entropy))
        else:
            raise TypeError(f"{type(backend).__name__} evaluates rand() in a way a Generator cannot seed")

    def __repr__(self):
        return f"Generator(Philox) on {self.backend!r}"

    @contextlib.contextmanager
    def _drawing(self):
        """Point the factory's ``rand()`` at this generator's state for a draw."""
        ng = self.backend
        if hasattr(self, "_numpy"):
            saved, ng._rng = ng._rng, self._numpy
            try:
                yield
            finally:
                ng._rng = saved
            return
        saved = ng._calls
        # each launch takes the counter + 1: the next draw starts past this one's kernels
        ng._calls = _CALL_BASE + self._position
        try:
            yield
        finally:
            self._position = (ng._calls - _CALL_BASE) % _CALL_SPAN
            ng._calls = saved

    def _new(self, shape, dtype, tree):
        """A new tensor holding ``tree`` (evaluated inside :meth:`_drawing`)."""
        out = self.backend.empty(shape, dtype)
        self.backend.assign(out, tree)
        return out

    @staticmethod
    def _shape(size):
        return _size(size)

    def _floats(self, size, dtype, method, build):
        """A new float tensor holding ``build(dtype)``, drawn from this generator."""
        shape, dtype = _size(size), _float_dtype(dtype, method)
        with self._drawing():
            return self._new(shape, dtype, build(dtype))

    # -- uniform bits -----------------------------------------------------
    def _unit(self, dtype):
        """Uniform [0, 1): float32 with 24 random bits; float64 with 53, numpy's
        resolution, from three ``rand()`` leaves (bits 1-24, 25-48, 49-53: exact sums)."""
        ng = self.backend
        if dtype == np.float32:
            return ng.rand()
        hi, mid, lo = (ng.astype(ng.rand(), np.float64) for _ in range(3))
        return hi + mid * 2.0 ** -24 + ng.floor(lo * 32.0) * 2.0 ** -53

    def _bits(self):
        """24 uniform random bits as uint64 (``rand()`` is k * 2**-24, so the product is exact)."""
        return self.backend.astype(self.backend.rand() * 16777216.0, np.uint64)

    def _below(self, span):
        """uint64 tree uniform in [0, span), 1 <= span <= 2**64.

        Multiply-shift ``floor(k * span / 2**b)`` on b = 24 or 48 random bits
        (two ``rand()`` leaves above 2**8: float32 has 24 bits), split so that
        uint64 never overflows; above 2**32, 64 random bits modulo ``span``.
        Relative bias at most span / 2**b: 2**-16 up to span 2**48, exact for
        powers of two.
        """
        if span <= 1 << 8:
            return (self._bits() * span) >> 24
        if span <= 1 << 32:
            k1, k2 = self._bits(), self._bits()
            return (k1 * span + ((k2 * span) >> 24)) >> 24
        word = (self._bits() << 40) | (self._bits() << 16) | (self._bits() >> 8)
        return word if span == 1 << 64 else word % span

    # -- distributions ----------------------------------------------------
    def random(self, size=None, dtype=np.float64):
        """Uniform floats in [0, 1), as ``numpy.random.Generator.random``.

        Parameters
        ----------
        size : int, tuple of ints or None
            Output shape; None gives a 0-d tensor.
        dtype : float32 (24 random bits) or float64 (53, numpy's resolution)
            Another raises numpy's TypeError.
        """
        return self._floats(size, dtype, "random", self._unit)

    def uniform(self, low=0.0, high=1.0, size=None, *, dtype=np.float64):
        """Uniform floats in [low, high), as ``numpy.random.Generator.uniform``.

        ``dtype`` (float32 or float64) is a gpuarray extension.  As in numpy,
        rounding of ``low + (high - low) * u`` can give ``high``.

        Raises
        ------
        OverflowError
            ``high - low`` not finite.
        ValueError
            ``high < low``.
        """
        low, high = _real(low, "low"), _real(high, "high")
        width = high - low
        if not math.isfinite(width):
            raise OverflowError("high - low range exceeds valid bounds")
        if width < 0:
            raise ValueError("high - low < 0")
        return self._floats(size, dtype, "uniform", lambda dt: self._unit(dt) * width + low)

    def _gaussian(self, dtype):
        """Box-Muller from two uniforms, one fused tree (1 - u >= 2**-24 or 2**-53 bounds abs(z))."""
        ng = self.backend
        radius = ng.sqrt(ng.log1p(-self._unit(dtype)) * -2.0)
        return radius * ng.cos(self._unit(dtype) * (2.0 * math.pi))

    def standard_normal(self, size=None, dtype=np.float64):
        """Standard normal floats, as ``numpy.random.Generator.standard_normal``
        (Box-Muller; tails cut at 5.77 for float32, 8.57 for float64)."""
        return self._floats(size, dtype, "standard_normal", self._gaussian)

    def normal(self, loc=0.0, scale=1.0, size=None, *, dtype=np.float64):
        """Normal floats ``loc + scale * z``, as ``numpy.random.Generator.normal``.

        ``dtype`` (float32 or float64) is a gpuarray extension.

        Raises
        ------
        ValueError
            ``scale < 0`` (numpy's message; -0.0 included, NaN passes).
        """
        loc, scale = _real(loc, "loc"), _non_negative(scale, "scale")
        return self._floats(size, dtype, "normal", lambda dt: self._gaussian(dt) * scale + loc)

    def exponential(self, scale=1.0, size=None, *, dtype=np.float64):
        """Exponential floats of mean ``scale``, ``-log1p(-u) * scale``, as
        ``numpy.random.Generator.exponential`` (``dtype`` is a gpuarray extension).

        Raises
        ------
        ValueError
            ``scale < 0``.
        """
        scale = _non_negative(scale, "scale")
        ng = self.backend
        # -log1p(-0.0) is +0.0: no negative zeros
        return self._floats(size, dtype, "exponential",
                            lambda dt: ng.negative(ng.log1p(-self._unit(dt))) * scale)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Uniform integers in [low, high) (``endpoint``: [low, high]), as
        ``numpy.random.Generator.integers``.

        Drawn by multiply-shift on 24 random bits for ranges up to 2**8, 48
        bits (two uniforms: float32 has 24) up to 2**32, 64 bits modulo the
        range above: relative bias at most range / 2**bits (<= 2**-16 up to
        2**48), where numpy's rejection sampling has none.

        Parameters
        ----------
        low, high : int
            Bounds; ``high`` None draws from [0, low).
        size : int, tuple of ints or None
            Output shape; None gives a 0-d tensor.
        dtype : an integer dtype or bool
            Default int64, as numpy.
        endpoint : bool
            Include ``high``.

        Raises
        ------
        TypeError
            A non-integer dtype, or non-integer bounds.
        ValueError
            numpy's "high <= 0", "low >= high", "low is out of bounds for ..." messages.
        """
        dtype = dtypes.as_dtype(dtype)
        if dtype.kind not in "iub":
            raise TypeError(f"Unsupported dtype {dtype!r} for integers")
        low, high = _integer_bounds(low, high, endpoint, dtype)
        shape, span = _size(size), high - low + 1
        if span == 1:
            return self.backend.full(shape, low, dtype)
        with self._drawing():
            # low + n wraps modulo 2**64 in uint64; the cast to dtype is modular too
            tree = self._below(span) + (low % (1 << 64))
            return self._new(shape, dtype, self.backend.astype(tree, dtype))


# -- argument checks -----------------------------------------------------------
def _size(size):
    """numpy's ``size``: None (a 0-d result), an int or a sequence of ints."""
    if size is None:
        return ()
    if np.ndim(size) == 0 and not isinstance(size, (bool, np.bool_)):
        try:
            size = operator.index(size)
        except TypeError:
            raise TypeError(f"expected a sequence of integers or a single integer, got '{size}'") from None
    return shapes.as_shape(size)


def _float_dtype(dtype, method):
    """numpy's random floats come in float32 and float64 only."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _FLOATS:
        raise TypeError(f"Unsupported dtype {dtype!r} for {method}")
    return dtype


def _real(value, name):
    """A distribution parameter as a Python float (array values are not built)."""
    if isinstance(value, Expression) or np.ndim(value) != 0:
        raise NotImplementedError(f"{name} must be a scalar: array-valued parameters are not built yet")
    return float(value)


def _non_negative(value, name):
    """numpy's check: a negative sign (-0.0 too) fails, NaN passes."""
    value = _real(value, name)
    if not math.isnan(value) and math.copysign(1.0, value) < 0:
        raise ValueError(f"{name} < 0")
    return value


def _integer_bounds(low, high, endpoint, dtype):
    """Inclusive [low, high] of ``integers``, checked in numpy's order."""
    low, high = operator.index(low), None if high is None else operator.index(high)
    if high is None:
        low, high = 0, low
        if high < 0 or (high == 0 and not endpoint):
            raise ValueError("high < 0" if endpoint else "high <= 0")
    high = high if endpoint else high - 1
    info = (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    name = "bool" if dtype.kind == "b" else dtype.name
    if low < info[0]:
        raise ValueError(f"low is out of bounds for {name}")
    if high > info[1]:
        raise ValueError(f"high is out of bounds for {name}")
    if low > high:
        raise ValueError("low > high" if endpoint else "low >= high")
    return low, high

"""The algorithms in the factory API: the :class:`AlgorithmFunctions` mixin.

In: user calls -- ``sort``, ``argsort``, ``partition``, ``searchsorted``,
``nonzero``, ``argwhere``, ``unique`` and the array API's ``unique_*``,
``isin`` and the ``*1d`` set functions, ``take``, ``take_along_axis``,
``quantile``, ``percentile``, ``median`` and their ``nan`` forms,
``bincount``, ``histogram``, ``digitize``, ``compress``, ``extract``,
``put``, ``put_along_axis``, ``place``, ``lexsort``, ``append``, ``insert``,
``delete``, ``fill_diagonal``, ``interp``, ``select``, ``piecewise``,
``resize``, ``trim_zeros``, ``convolve``, ``correlate`` -- tensor indexing with
integer or boolean arrays, to read (``t[key]``) and to assign (``t[key] =
value``), and the single-pass scan behind ``cumsum``.  Out: new tensors.
The shared code (the role modules mixed in here) checks arguments and
arranges rows and indices; the factory's engine (``self._algorithms``:
:mod:`~gpuarray.algorithms.host` on the CPU factory,
:mod:`~gpuarray.algorithms.device` on the GPU) runs the primitives.
"""
from .choosing import ChoosingFunctions
from .convolving import ConvolvingFunctions
from .counting import CountingFunctions
from .editing import EditingFunctions
from .gathering import GatherFunctions
from .interpolation import InterpolationFunctions
from .multi_index import MultiIndexFunctions
from .order import OrderStatisticFunctions
from .scanning import ScanRowFunctions
from .scattering import ScatterFunctions
from .searching import SearchFunctions
from .selection import SelectionFunctions
from .sets import SetFunctions
from .sorting import SortFunctions


class AlgorithmFunctions(SortFunctions, SearchFunctions, SetFunctions, GatherFunctions,
                         ScatterFunctions, ScanRowFunctions, OrderStatisticFunctions,
                         CountingFunctions, MultiIndexFunctions, SelectionFunctions,
                         EditingFunctions, InterpolationFunctions, ChoosingFunctions,
                         ConvolvingFunctions):
    """Mixin of the factories (see the module docstring); a factory sets
    ``self._algorithms`` to its engine."""

    def _algorithm(self, name, *args):
        """Run the engine's primitive ``name`` (the GPU factory wraps this in its
        device-call guard)."""
        return getattr(self._algorithms, name)(*args)

    def _contiguous(self, t):
        """``t`` itself when C-contiguous, else a contiguous copy."""
        return t if t.is_contiguous else self.evaluate(t)

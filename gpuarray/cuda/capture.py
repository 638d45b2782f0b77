"""Captured steps: a function's device work recorded once as a CUDA graph, replayed per call.

In: a function ``fn(*args)`` that issues device work through one GPU
factory (assignments, products, pooling...).  Out: :class:`CapturedStep`,
callable like ``fn``.  The first call with given arguments records
everything ``fn`` queues on a capture stream, instantiates the graph and
launches it (so that call has ``fn``'s effects, once); later calls with
the same arguments launch the graph again: one driver call, whatever
``fn`` holds.

What a graph holds is fixed when it is recorded: the addresses of the
tensors passed in (replays read and write their current contents), the
Python numbers passed in, shapes and strides.  A call with other tensors
or other numbers records another graph (``strict=True`` raises instead);
a step whose numbers change every call (a decaying learning rate) should
take them in a one-element tensor.  Temporaries allocated inside belong
to the graph for its lifetime.  What cannot be replayed -- host reads and
writes, synchronisation -- raises at recording time.

Random numbers (``rand()``, stochastic rounding) are keyed by the
factory's seed, a call counter the graph freezes, and a
:class:`ReplayCounter` on the device that a graph drawing them increments
as its last node: each replay draws fresh numbers, with no host work.
"""
import numbers

import numpy as np

from ..core.array import Tensor
from . import graph, stream
from .mempool import Keeper

#: recorded graphs a step keeps (a training loop has one or two)
MAX_GRAPHS = 16


class CapturedStep:
    """``fn`` recorded per argument signature and replayed as one graph launch.

    Parameters
    ----------
    gpu : gpuarray.GPU
        The factory whose work ``fn`` issues.
    fn : callable
        Takes tensors, Python numbers, strings, None, and tuples of those.
    strict : bool
        Raise instead of recording a second graph for other arguments.
    """

    def __init__(self, gpu, fn, strict=False):
        self.gpu, self.fn, self.strict = gpu, fn, bool(strict)
        self.graphs = {}
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__name__ = getattr(fn, "__name__", "step")

    def __call__(self, *args, **kwargs):
        if not self.gpu._attached.ready:
            self.gpu._attach()  # the graph calls need the factory's context on this thread
        key = (_key(self.gpu, args), _key(self.gpu, tuple(sorted(kwargs.items()))))
        recorded = self.graphs.get(key)
        if recorded is None:
            if self.graphs and self.strict:
                raise ValueError(f"captured step {self.__name__!r} (strict=True) was called "
                                 "with other tensors or values than it recorded")
            if len(self.graphs) >= MAX_GRAPHS:
                self.graphs.pop(next(iter(self.graphs))).release()
            recorded = self.graphs[key] = self._record(args, kwargs)
        recorded.launch(self.gpu)
        return recorded.result

    def _record(self, args, kwargs):
        gpu = self.gpu
        capture_stream = gpu._drv.Stream()
        keeper = _Keepers(gpu)
        launched = gpu._kernels_launched()
        keeper.keep()
        stream.take_random()
        try:
            with stream.capturing_on(capture_stream, f"step {self.__name__!r}"):
                graph.begin(capture_stream.handle)
                try:
                    result = self.fn(*args, **kwargs)
                    if stream.take_random():
                        gpu._replays.advance()
                except BaseException:
                    graph.abandon(capture_stream.handle)
                    raise
                captured = graph.end(capture_stream.handle)
        except BaseException:
            keeper.release()
            raise
        finally:
            keeper.stop_keeping()
        kernels = gpu._kernels_launched() - launched
        gpu._stats["kernels_launched"] -= kernels  # counted each time the graph runs
        try:
            executable = graph.Graph(captured)
        except BaseException:
            keeper.release()
            raise
        return _Recorded(executable, keeper, args, kwargs, result, kernels)


class _Keepers:
    """Keepers of both pools of a factory -- memory and semaphores -- for one graph."""

    def __init__(self, gpu):
        self.pools = (gpu.pool, gpu.semaphores)
        self.keepers = [Keeper(pool) for pool in self.pools]

    def keep(self):
        """Until :meth:`stop_keeping`, this thread's allocations are held for the graph."""
        for pool, keeper in zip(self.pools, self.keepers):
            pool.keep_for(keeper)

    def stop_keeping(self):
        for pool in self.pools:
            pool.stop_keeping()

    def release(self):
        """The graph is gone: everything held goes back to its pool."""
        for keeper in self.keepers:
            keeper.release()


class _Recorded:
    """One recorded graph and what it needs alive: inputs, temporaries, the result."""

    def __init__(self, executable, keeper, args, kwargs, result, kernels):
        self.executable, self.keeper = executable, keeper
        self.inputs = (args, kwargs)  # their memory must outlive the graph
        self.result, self.kernels = result, kernels

    def launch(self, gpu):
        self.executable.launch(stream.current_handle())
        gpu._stats["graphs_launched"] = gpu._stats.get("graphs_launched", 0) + 1
        gpu._stats["kernels_launched"] += self.kernels

    def release(self):
        self.executable = None
        self.keeper.release()


def _key(gpu, values):
    """What a recorded graph depends on among the arguments (raises for unusable ones)."""
    key = []
    for value in values:
        if isinstance(value, Tensor):
            if value.backend is not gpu:
                raise TypeError(f"a captured step takes tensors of its own factory "
                                f"({gpu!r}), not of {value.backend!r}")
            key.append(("tensor", value.ptr, value.shape, value.strides, value.dtype,
                        value.rounding))
        elif isinstance(value, tuple):
            key.append(("tuple", _key(gpu, value)))
        elif value is None or isinstance(value, (numbers.Number, str)):
            key.append((type(value), value))
        else:
            raise TypeError(f"a captured step takes tensors, numbers, strings, None and "
                            f"tuples of those, not {type(value).__name__}")
    return tuple(key)


class ReplayCounter:
    """A device word counting the replays of graphs that draw random numbers.

    Every fused kernel gets its address and mixes the value into its Philox
    key (``ga_key`` in the prelude).  Eager launches leave it alone -- their
    call counters already differ -- so a factory that never replays a
    random graph draws exactly what it drew before graphs existed.

    Parameters
    ----------
    gpu : gpuarray.GPU
        The factory; the word is a permanent 8-byte allocation outside its
        pool (it is not a tensor users can free).
    """

    def __init__(self, gpu):
        self._allocation = gpu._drv.mem_alloc(8)
        self.address = int(self._allocation)
        gpu._drv.memset_d32(self.address, 0, 2)
        self._word = gpu.tensor_class(gpu, _Fixed(self.address), (1,), np.uint64)

    def advance(self):
        """Queue ``word += 1`` (inside a capture: the graph's last node)."""
        self._word[...] = self._word + 1


class _Fixed:
    """A buffer at a fixed address, for a tensor view of memory the pool does not own."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

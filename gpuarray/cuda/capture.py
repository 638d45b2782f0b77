"""Captured steps: a function's device work recorded once as a CUDA graph, replayed per call.

In: a function ``fn(*args)`` that issues device work through one GPU
factory (assignments, products, pooling...).  Out: :class:`CapturedStep`,
callable like ``fn``.  The first call with given arguments records
everything ``fn`` queues on a capture stream, instantiates the graph and
launches it (so that call has ``fn``'s effects, once); later calls with
the same arguments launch the graph again: one driver call, whatever
``fn`` holds.

What a graph holds is fixed when it is recorded: the addresses of the
tensors passed in (replays read and write their current contents), shapes
and strides, and every number the step's code computes or reads on its
own.  A call with other tensors records another graph (``strict=True``
raises instead).  Temporaries allocated inside belong to the graph for its
lifetime.  What cannot be replayed -- host reads and writes,
synchronisation -- raises at recording time.

Python floats passed in are parameters of the graph.  While the step
records, each is a stand-in (:class:`~gpuarray.core.step_numbers.StepNumber`);
where one is only a scalar operand of fused assignments (``w[:] = w - lr *
g``), the dispatcher notes the bytes of the kernel nodes it fills
(:class:`_Tracer`), and a later call with another value sets those nodes'
arguments (``cuGraphExecKernelNodeSetParams``) and launches the same
graph.  A float scaling a product (``c[:] = s * dot(a, b)``, ``ng.dot(...,
alpha=s, beta=t)``) is such an operand too: while the step records, the
product runs alone and a fused kernel after it applies the float
(:mod:`gpuarray.gemm.fuse`), where outside a recording the GEMM's
epilogue does.  A float the step uses on the host in any other way (arithmetic
with other numbers, a comparison, ``float()``, a shape...) is
*escaped*: the step keys its graphs on its value, as it does ints, bools
and strings, so a call with another value records another graph (or
raises, strict).  ``trace_numbers=False`` keys on every float's value.
Where the step raises with the stand-ins (code that insists on a
``float``), it is recorded again with plain floats, all keying the
graphs, and a RuntimeWarning says so.

Random numbers (``rand()``, stochastic rounding) are keyed by the
factory's seed, a call counter the graph freezes, and a
:class:`ReplayCounter` on the device that a graph drawing them increments
as its last node: each replay draws fresh numbers, with no host work.
"""
import numbers
import struct
import threading
import warnings

import numpy as np

from ..core.array import Tensor
from ..core.step_numbers import StepNumber
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
    trace_numbers : bool
        Make the Python floats passed in parameters of the graph (see the
        module's docstring); False keys the graphs on their values.
    """

    def __init__(self, gpu, fn, strict=False, trace_numbers=True):
        self.gpu, self.fn, self.strict = gpu, fn, bool(strict)
        self.trace_numbers = bool(trace_numbers)
        self.graphs = {}
        #: per structure of the arguments, the positions of the floats whose
        #: values key its graphs (those the step used on the host)
        self.escaped = {}
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__name__ = getattr(fn, "__name__", "step")

    def __call__(self, *args, **kwargs):
        if not self.gpu._attached.ready:
            self.gpu._attach()  # the graph calls need the factory's context on this thread
        floats = [] if self.trace_numbers else None
        structure = (_key(self.gpu, args, floats),
                     _key(self.gpu, tuple(sorted(kwargs.items())), floats))
        escaped = self.escaped.get(structure, ())
        recorded = self.graphs.get(_graph_key(structure, escaped, floats))
        if recorded is None:
            if self.graphs and self.strict:
                raise ValueError(f"captured step {self.__name__!r} (strict=True) was called "
                                 "with other tensors or values than it recorded")
            if len(self.graphs) >= MAX_GRAPHS:
                self.graphs.pop(next(iter(self.graphs))).release()
            if len(self.escaped) >= MAX_GRAPHS:
                self.escaped.pop(next(iter(self.escaped)))
            recorded = self._record_traced(args, kwargs, floats or [], escaped)
            self.escaped[structure] = recorded.escaped
            self.graphs[_graph_key(structure, recorded.escaped, floats)] = recorded
        recorded.launch(self.gpu, floats)
        return recorded.result

    def _record_traced(self, args, kwargs, floats, escaped):
        """:meth:`_record` with the floats not ``escaped`` as stand-ins; where
        the step raises with them, recorded again with every float plain
        (its value keying the graph), with a warning saying why where that
        works (else the step's own error is raised)."""
        tracer = _Tracer(floats, escaped)
        try:
            return self._record(args, kwargs, tracer)
        except Exception as err:
            if not tracer.handed_out:
                raise
            first = err
        # outside the handler: an error of the second recording is the step's own
        recorded = self._record(args, kwargs, _Tracer(floats, range(len(floats))))
        warnings.warn(f"captured step {self.__name__!r} raised {type(first).__name__} "
                      f"({first}) with its float arguments as graph parameters; recorded "
                      "again with their values keying its graphs", RuntimeWarning, stacklevel=3)
        return recorded

    def _record(self, args, kwargs, tracer):
        gpu = self.gpu
        capture_stream = gpu._drv.Stream()
        keeper = _Keepers(gpu)
        launched = gpu._kernels_launched()
        if self.trace_numbers:
            names = sorted(kwargs)
            args = tracer.stand_ins(args)
            kwargs = dict(zip(names, tracer.stand_ins(tuple(kwargs[name] for name in names))))
        keeper.keep()
        stream.take_random()
        try:
            with stream.capturing_on(capture_stream, f"step {self.__name__!r}", tracer):
                graph.begin(capture_stream.handle)
                try:
                    result = self.fn(*args, **kwargs)
                    if stream.take_random():
                        gpu._replays.advance()
                except BaseException:
                    graph.abandon(capture_stream.handle)
                    raise
                finally:
                    tracer.active = False
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
        return _Recorded(executable, keeper, (args, kwargs), result, kernels, tracer)


def _graph_key(structure, escaped, floats):
    """A recorded graph's key: the arguments' structure, and the values of
    the floats at the positions ``escaped``."""
    if not escaped:
        return structure
    return structure, tuple([floats[k] for k in escaped])


class _Tracer:
    """A recording's floats: their stand-ins, which of them the step used on
    the host, and the kernel arguments the others fill.

    Parameters
    ----------
    values : list of float
        The floats of the recording call, in :func:`_key`'s order.
    escaped : tuple of int
        Positions of those the step's graphs key on (passed as they are).
    """

    def __init__(self, values, escaped):
        self.values, self.escaped = values, set(escaped)
        #: while True, a stand-in used on the host marks itself escaped
        self.active = True
        self.kernels = []
        #: whether any stand-in was made
        self.handed_out = False
        self._next = 0

    def stand_ins(self, values):
        """``values`` (a tuple) with each float replaced by its stand-in, in
        :func:`_key`'s order (tuples walked in place)."""
        replaced = []
        for value in values:
            if type(value) is float:
                index, self._next = self._next, self._next + 1
                if index not in self.escaped:
                    value, self.handed_out = StepNumber(value, index, self), True
            elif isinstance(value, tuple):
                value = self._tuple(value)
            replaced.append(value)
        return tuple(replaced)

    def _tuple(self, value):
        """:meth:`stand_ins` of a tuple argument, rebuilt as its own type where
        that type can be (a named tuple); the floats of another tuple
        subclass are passed as they are, and key the graphs."""
        first = self._next
        replaced = self.stand_ins(value)
        if type(value) is tuple:
            return replaced
        if hasattr(type(value), "_make"):
            return type(value)._make(replaced)
        self.escaped.update(range(first, self._next))
        return value

    def note_kernel(self, stream_handle, kernel, grid, block, arguments, holes):
        """A kernel just launched on the captured ``stream_handle`` whose
        ``arguments`` (packed bytes) hold stand-ins' values: ``holes``, as
        ``(byte offset, struct format, converter, stand-in)``."""
        node = graph.last_node(stream_handle)
        self.kernels.append(_TracedKernel(node, kernel, grid, block, arguments, holes))


class _TracedKernel:
    """A kernel node of a graph and the arguments the step's floats fill."""

    def __init__(self, node, kernel, grid, block, arguments, holes):
        self.node, self.function, self.grid, self.block = node, kernel.address, grid, block
        self.arguments = bytes(arguments)
        self.holes = [(offset, struct.Struct(fmt).pack_into, convert, number.index)
                      for offset, fmt, convert, number in holes]
        self.indices, self.node_arguments = set(), None

    def forget(self, escaped):
        """Drop the holes of the floats at positions ``escaped``; True when some are left."""
        self.holes = [hole for hole in self.holes if hole[3] not in escaped]
        self.indices = {hole[3] for hole in self.holes}
        return bool(self.holes)

    def bind(self, executable):
        """Address the node in ``executable``, the graph instantiated from its recording."""
        self.node_arguments = executable.kernel_arguments(self.node, self.function, self.grid,
                                                          self.block, self.arguments)

    def update(self, values):
        """Set the node's arguments for the floats ``values``."""
        buffer = self.node_arguments.buffer
        for offset, pack_into, convert, index in self.holes:
            pack_into(buffer, offset, convert(values[index]))
        self.node_arguments.apply()


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
    """One recorded graph and what it needs alive: inputs, temporaries, the
    result; and the kernel nodes the step's floats are arguments of.

    ``escaped``: the positions of the floats the step used on the host
    (sorted), whose values key this graph.
    """

    def __init__(self, executable, keeper, inputs, result, kernels, tracer):
        self.executable, self.keeper = executable, keeper
        self.inputs = inputs  # their memory must outlive the graph
        self.result, self.kernels = result, kernels
        self.escaped = tuple(sorted(tracer.escaped))
        self.traced = [k for k in tracer.kernels if k.forget(tracer.escaped)]
        for kernel in self.traced:
            kernel.bind(executable)
        #: the floats the graph's nodes hold now
        self.values = list(tracer.values)
        # threads calling one step must not set arguments between another's
        # setting and launching
        self.lock = threading.Lock() if self.traced else None

    def launch(self, gpu, values):
        """Launch the graph, its nodes set first for the floats ``values``."""
        if self.lock is None:
            self.executable.launch(stream.current_handle())
        else:
            with self.lock:
                for kernel in self.traced:
                    if any(values[k] != self.values[k] for k in kernel.indices):
                        kernel.update(values)
                self.values = list(values)
                self.executable.launch(stream.current_handle())
        gpu._stats["graphs_launched"] = gpu._stats.get("graphs_launched", 0) + 1
        gpu._stats["kernels_launched"] += self.kernels

    def release(self):
        self.executable = None
        self.keeper.release()

    def __del__(self):
        # a step dropped without release(): its graph's temporaries and
        # semaphore blocks go back to their pools (marked busy on the current
        # stream, where its last replay may still run), not lost to them
        try:
            if self.executable is not None:
                self.release()
        except Exception:  # noqa: BLE001 - a finalizer must never raise
            pass


def _key(gpu, values, floats):
    """What a recorded graph depends on among the arguments (raises for
    unusable ones).  Python floats are appended to the list ``floats`` and
    keyed by their type alone, unless ``floats`` is None."""
    key = []
    for value in values:
        if type(value) is float and floats is not None:
            floats.append(value)
            key.append(float)
        elif isinstance(value, Tensor):
            if value.backend is not gpu:
                raise TypeError(f"a captured step takes tensors of its own factory "
                                f"({gpu!r}), not of {value.backend!r}")
            key.append(("tensor", value.ptr, value.shape, value.strides, value.dtype,
                        value.rounding))
        elif isinstance(value, tuple):
            key.append(("tuple", _key(gpu, value, floats)))
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

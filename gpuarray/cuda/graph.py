"""CUDA graphs through the driver API: stream capture, instantiation, launch.

In: a stream handle whose work is being captured.  Out: :class:`Graph`, an
instantiated executable graph that replays the captured launches with one
``cuGraphLaunch``.  pycuda does not wrap graphs, so these go through
ctypes like the GEMM launches (:mod:`gpuarray.cuda.driver`).

Capture uses the relaxed mode: the first recording of a step compiles
kernels, loads modules and may allocate device memory while the stream
is capturing, which the stricter modes refuse.
"""
import ctypes

from .driver import _check, _libcuda

#: CU_STREAM_CAPTURE_MODE_RELAXED
_RELAXED = 2


def begin(stream_handle):
    """Start capturing the work queued on ``stream_handle``."""
    _check(_libcuda().cuStreamBeginCapture_v2(ctypes.c_void_p(stream_handle), _RELAXED),
           "cuStreamBeginCapture")


def end(stream_handle):
    """Stop capturing; returns the captured ``CUgraph`` handle."""
    graph = ctypes.c_void_p()
    _check(_libcuda().cuStreamEndCapture(ctypes.c_void_p(stream_handle), ctypes.byref(graph)),
           "cuStreamEndCapture")
    return graph


def abandon(stream_handle):
    """End a capture that failed half-way and drop what it recorded."""
    graph = ctypes.c_void_p()
    if _libcuda().cuStreamEndCapture(ctypes.c_void_p(stream_handle), ctypes.byref(graph)) == 0:
        if graph.value:
            _libcuda().cuGraphDestroy(graph)


class Graph:
    """An instantiated graph; :meth:`launch` replays it on a stream."""

    def __init__(self, graph):
        self._graph = graph
        self._exec = ctypes.c_void_p()
        _check(_libcuda().cuGraphInstantiateWithFlags(ctypes.byref(self._exec), graph,
                                                       ctypes.c_ulonglong(0)),
               "cuGraphInstantiate")
        self._launch = _libcuda().cuGraphLaunch

    def launch(self, stream_handle=None):
        """Queue the whole graph on ``stream_handle`` (None: the default stream)."""
        result = self._launch(self._exec, ctypes.c_void_p(stream_handle))
        if result != 0:
            _check(result, "cuGraphLaunch")

    def __del__(self):
        try:
            lib = _libcuda()
            if self._exec.value:
                lib.cuGraphExecDestroy(self._exec)
            if self._graph.value:
                lib.cuGraphDestroy(self._graph)
        except Exception:  # noqa: BLE001 - a finalizer must never raise
            pass

"""CUDA graphs through the driver API: stream capture, instantiation, launch.

In: a stream handle whose work is being captured.  Out: :class:`Graph`, an
instantiated executable graph that replays the captured launches with one
``cuGraphLaunch``, and whose kernel nodes take new arguments
(:meth:`Graph.kernel_arguments`) -- the node of a launch found while it
is captured (:func:`last_node`).  pycuda does not wrap graphs, so these go
through ctypes like the GEMM launches (:mod:`gpuarray.cuda.driver`).

Capture uses the relaxed mode: the first recording of a step compiles
kernels, loads modules and may allocate device memory while the stream
is capturing, which the stricter modes refuse.
"""
import ctypes

from .driver import _check, libcuda, packed_extra

#: CU_STREAM_CAPTURE_MODE_RELAXED
_RELAXED = 2


def begin(stream_handle):
    """Start capturing the work queued on ``stream_handle``."""
    _check(libcuda().cuStreamBeginCapture_v2(ctypes.c_void_p(stream_handle), _RELAXED),
           "cuStreamBeginCapture")


def end(stream_handle):
    """Stop capturing; returns the captured ``CUgraph`` handle."""
    graph = ctypes.c_void_p()
    _check(libcuda().cuStreamEndCapture(ctypes.c_void_p(stream_handle), ctypes.byref(graph)),
           "cuStreamEndCapture")
    return graph


def last_node(stream_handle):
    """The node the last operation queued on ``stream_handle`` (being
    captured) became: after a launch, the stream's one dependency is its
    kernel node."""
    status, graph = ctypes.c_int(), ctypes.c_void_p()
    nodes, count = ctypes.POINTER(ctypes.c_void_p)(), ctypes.c_size_t()
    lib, handle = libcuda(), ctypes.c_void_p(stream_handle)
    if hasattr(lib, "cuStreamGetCaptureInfo_v3"):
        result = lib.cuStreamGetCaptureInfo_v3(handle, ctypes.byref(status), None,
                                               ctypes.byref(graph), ctypes.byref(nodes),
                                               None, ctypes.byref(count))
    else:
        result = lib.cuStreamGetCaptureInfo_v2(handle, ctypes.byref(status), None,
                                               ctypes.byref(graph), ctypes.byref(nodes),
                                               ctypes.byref(count))
    _check(result, "cuStreamGetCaptureInfo")
    if count.value != 1:
        raise RuntimeError(f"the captured stream depends on {count.value} nodes after a "
                           "launch, not on the launch's one")
    return nodes[0]


class _KernelNodeParams(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2, as cuda.h lays it out."""

    _fields_ = [("func", ctypes.c_void_p), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("params", ctypes.c_void_p), ("extra", ctypes.POINTER(ctypes.c_void_p)),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


class KernelArguments:
    """A kernel node's arguments in an executable graph: patch :attr:`buffer`
    (writable, the packed arguments), then :meth:`apply` them.  The driver
    copies them; the graph's next launch uses them.  Built once per node,
    so an update is the patch and one driver call.  The arguments go in
    packed, as the launch that was captured passed them
    (``CU_LAUNCH_PARAM_BUFFER_POINTER`` behind ``extra``)."""

    def __init__(self, executable, node, function, grid, block, arguments):
        self.buffer, self._size, self._extra = packed_extra(arguments)
        self._params = _KernelNodeParams(function, (ctypes.c_uint * 3)(*grid),
                                         (ctypes.c_uint * 3)(*block), 0, None, self._extra,
                                         None, None)
        self._call = (libcuda().cuGraphExecKernelNodeSetParams_v2, executable,
                      ctypes.c_void_p(node), ctypes.byref(self._params))

    def apply(self):
        """Give the node the arguments in :attr:`buffer`."""
        set_params, executable, node, params = self._call
        result = set_params(executable, node, params)
        if result != 0:
            _check(result, "cuGraphExecKernelNodeSetParams")


def abandon(stream_handle):
    """End a capture that failed half-way and drop what it recorded."""
    graph = ctypes.c_void_p()
    if libcuda().cuStreamEndCapture(ctypes.c_void_p(stream_handle), ctypes.byref(graph)) == 0:
        if graph.value:
            libcuda().cuGraphDestroy(graph)


class Graph:
    """An instantiated graph; :meth:`launch` replays it on a stream."""

    def __init__(self, graph):
        self._graph = graph
        self._exec = ctypes.c_void_p()
        _check(libcuda().cuGraphInstantiateWithFlags(ctypes.byref(self._exec), graph,
                                                     ctypes.c_ulonglong(0)),
               "cuGraphInstantiate")
        self._launch = libcuda().cuGraphLaunch

    def launch(self, stream_handle=None):
        """Queue the whole graph on ``stream_handle`` (None: the default stream)."""
        result = self._launch(self._exec, ctypes.c_void_p(stream_handle))
        if result != 0:
            _check(result, "cuGraphLaunch")

    def kernel_arguments(self, node, function, grid, block, arguments):
        """The arguments of the kernel node ``node`` (of the captured graph)
        in this graph, to patch and apply: a :class:`KernelArguments`
        starting from ``arguments`` (packed bytes)."""
        return KernelArguments(self._exec, node, function, grid, block, arguments)

    def __del__(self):
        try:
            lib = libcuda()
            if self._exec.value:
                lib.cuGraphExecDestroy(self._exec)
            if self._graph.value:
                lib.cuGraphDestroy(self._graph)
        except Exception:  # noqa: BLE001 - a finalizer must never raise
            pass

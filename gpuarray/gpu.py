"""The GPU factory: tensors in device memory, op-trees run as fused kernels.

In: user calls (through :class:`gpuarray.core.backend.Backend`) and, for
each assignment, a destination view and an op-tree.  Out: device work
queued on the current CUDA context.  The path of one assignment reads top
to bottom: ``GPU._execute`` (the dispatcher's ``execute``) -> :mod:`gpuarray.fusion.dispatch`
(replays a recorded recipe, or records one:) -> plan
(:mod:`gpuarray.fusion.plan`) -> layout and arguments
(:mod:`gpuarray.fusion.launch`) -> :meth:`GPU._kernel`: from the cache,
else generate (:mod:`gpuarray.fusion.generate`) and compile
(:mod:`gpuarray.cuda.compiler`) -> launch.  Matrix products go to the
hand-written GEMM kernels instead (:mod:`gpuarray.gemm.plan`).

pycuda is imported lazily, so the package imports (and the CPU factory
works) on machines without CUDA.

Every entry point that touches the device (:func:`~gpuarray.cuda.context.device_call`) first
checks, through a thread-local flag, that the calling thread has the
factory's context current; only the first call from a thread takes the
slow path, which pushes the context -- or raises clearly in a child
process forked after CUDA was initialised, or once a kernel has faulted
and left the context unusable.
"""
import types

import numpy as np

from .algorithms.device import DeviceAlgorithms
from .algorithms.functions import AlgorithmFunctions
from .conv.functions import ConvFunctions
from .core.array import Tensor
from .core.backend import Backend
from .conv import bias, bound, convolution, pooling
from .cuda import compiler, driver, interop, library, pinned, stream
from .cuda.capture import CapturedStep, ReplayCounter
from .cuda.context import (FORKED, ContextFunctions, device_call, gpu_available,  # noqa: F401 (re-exported)
                           gpu_unavailable_reason)
from .cuda.mempool import DeviceMemoryPool
from .cuda.semaphores import SemaphorePool
from .cuda.streams import GPUStreamFunctions
from .fft import device as fft_device
from .fft.functions import FFTFunctions
from .fusion import dispatch, generate
from .linalg.device import DeviceLinAlg
from .linalg.functions import LinAlgFunctions
from .gemm import bound as gemm_bound, catalogue, plan as gemm_plan
from .gemm.functions import ProductFunctions
from .rnn import persistent as rnn_persistent
from .rnn.functions import RNNFunctions
from .userkernels.functions import UserKernelFunctions


def _copyable(host):
    """A contiguous host array as pycuda's copies take it: numpy's own dtypes
    export their buffer, ml_dtypes' (bfloat16, the 8-bit floats) do not, so
    their bytes go through a uint8 view (two numpy calls the others skip)."""
    return host if host.dtype.isbuiltin == 1 else host.reshape(-1).view(np.uint8)


class GPUTensor(Tensor):
    """A tensor in device memory; shares it zero-copy via CAI v3 and DLPack."""

    @property
    def ptr(self):
        """Device address of this view's first element."""
        return self.buffer.ptr + self.offset

    @property
    def __cuda_array_interface__(self):
        return interop.cuda_array_interface(self.ptr, self.shape, self.strides, self.dtype)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:  # the array API's: export a copy
            return self.copy().__dlpack__(stream=stream, max_version=max_version)
        self.backend._order_consumer(stream)
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return interop.to_dlpack(self.ptr, self.shape, self.strides, self.dtype,
                                 interop.kDLCUDA, self.backend.device_id, self,
                                 versioned=versioned)

    def __dlpack_device__(self):
        return (interop.kDLCUDA, self.backend.device_id)


def _check_rounding_capturable(c):
    if c.rounding and stream.capturing() is not None:
        # the GEMM epilogue keys its noise on a call counter a graph would freeze
        raise NotImplementedError("stochastic rounding of a product's output inside a captured "
                                  "step would repeat the recorded random bits on every replay; "
                                  "round the product to nearest there (fused assignments may "
                                  "round stochastically)")


class GPU(ContextFunctions, GPUStreamFunctions, AlgorithmFunctions, ConvFunctions, RNNFunctions,
          ProductFunctions, UserKernelFunctions, FFTFunctions, LinAlgFunctions, Backend):
    """Factory of device tensors; assignments compile to fused CUDA kernels.

    Parameters
    ----------
    stochastic_round : bool
        Round float16/bfloat16 results stochastically by default.
    seed : int
        Seed of ``rand()`` and stochastic rounding (Philox4x32-10).
    device_id : int
        Device whose primary context is used when no context is current
        (``import pycuda.autoinit`` before this makes one current).
    """

    tensor_class = GPUTensor
    records_gemm_plans = True
    #: replaced per factory by :meth:`_take_context`; a subclass that skips
    #: it (a test double with the driver stubbed out) needs no context
    _attached = types.SimpleNamespace(ready=True)

    def __init__(self, stochastic_round=False, seed=0, device_id=0):
        super().__init__(seed, stochastic_round)
        reason = gpu_unavailable_reason()
        if reason == FORKED:
            raise RuntimeError(FORKED)
        if reason:
            raise RuntimeError(f"gpuarray.GPU needs pycuda and a CUDA device: {reason}")
        import pycuda.driver as drv
        self._take_context(drv, device_id)
        device = self.context.get_device()
        self.device_id = next(i for i in range(drv.Device.count()) if drv.Device(i) == device)
        major, minor = device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        #: thread-block clusters (and distributed shared memory) exist from sm_90
        self.clusters = major >= 9
        self.sms = device.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        #: the most dynamic shared memory a block may ask for (227 KB on H100)
        self.smem_optin = device.get_attribute(
            drv.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.pool = DeviceMemoryPool()
        #: counters of kernels whose last block does the final work, zero when idle
        self.semaphores = SemaphorePool()
        #: the page-locked block small downloads go through, made on first use
        self._bounce = pinned.Bounce(lambda nbytes: drv.pagelocked_empty(nbytes, np.uint8))
        self._kernels = {}
        self._use_dispatcher()
        #: the hand-written GEMM kernels, loaded on first use
        self.gemm_library = catalogue.Library()
        #: the hand-written convolution and pooling kernels, loaded on first use
        self.conv_library = library.Library(what="convolution and pooling")
        #: the persistent recurrent kernels, loaded on first use
        self.rnn_library = library.Library(what="persistent recurrent")
        #: recorded implicit-GEMM convolution plans (gpuarray.conv.implicit)
        self._conv_plans = {}
        #: recorded pooling passes (gpuarray.conv.pooling)
        self._pool_plans = {}
        #: recorded bias gradients (gpuarray.conv.bias)
        self._bias_plans = {}
        #: replays of graphs drawing random numbers, on the device (cuda.capture)
        self._replays = ReplayCounter(self)
        #: sort, compaction, gathers: CUB and kernels/algorithms_host.cu
        self._algorithms = DeviceAlgorithms(self)
        #: cuFFT plans (gpuarray.fft.device)
        self._fft_plans = fft_device.PlanCache()
        #: cuSOLVER factorisations (gpuarray.linalg.device), its handle made on first use
        self._linalg = DeviceLinAlg(self)

    def __repr__(self):
        return f"gpuarray.GPU(device_id={self.device_id}, seed={self.seed})"

    @property
    def _calls(self):
        """The Philox call counter: each kernel launch takes the next value,
        so its random numbers differ from every other launch's (kept by the
        dispatcher, whose replays advance it)."""
        return self._dispatcher.calls

    @_calls.setter
    def _calls(self, value):
        self._dispatcher.calls = value

    @property
    def last_kernel(self):
        """The kernel launched or compiled last (kept by the dispatcher)."""
        return self._dispatcher.last_kernel

    @last_kernel.setter
    def last_kernel(self, kernel):
        self._dispatcher.last_kernel = kernel

    def _use_dispatcher(self):
        """Send assignments straight to a new dispatcher: its ``execute`` is
        bound as this factory's ``_execute`` (an attribute, not a method
        wrapped by :func:`~gpuarray.cuda.context.device_call`: the hot path saves two calls, and
        the dispatcher makes the device-call checks itself)."""
        self._dispatcher = dispatch.Dispatcher(self)
        self._execute = self._dispatcher.execute

    # -- storage ------------------------------------------------------------
    @device_call
    def _allocate(self, nbytes):
        return self.pool.allocate(nbytes)

    @device_call
    def _upload(self, tensor, host):
        stream.refuse_in_capture("copying host data to the device")
        if host.size:
            self._drv.memcpy_htod(tensor.ptr, _copyable(host))

    @device_call
    def _download(self, tensor):
        ptr = tensor.ptr  # first: a freed buffer raises before any device work
        stream.refuse_in_capture("reading a tensor's values on the host (get, item, float...)")
        nbytes = tensor.nbytes
        queue = stream.current()
        if 0 < nbytes <= pinned.BOUNCE_BYTES:
            handle = stream.launch_handle()
            return self._bounce.download(
                tensor.shape, tensor.dtype, nbytes,
                lambda address: driver.copy_to_host_async(address, ptr, nbytes, handle),
                self.context.synchronize if queue is None else queue.synchronize)
        host = np.empty(tensor.shape, tensor.dtype)
        if not host.size:
            return host
        target = _copyable(host)
        if queue is None:
            self.context.synchronize()
            self._drv.memcpy_dtoh(target, ptr)
        else:
            # on a user stream: wait for that stream's work only (the legacy
            # stream would wait for every blocking stream's)
            self._drv.memcpy_dtoh_async(target, ptr, queue)
            queue.synchronize()
        return host

    def from_dlpack(self, obj, /, *, device=None, copy=None):
        """A tensor sharing the memory of a DLPack producer (torch, CuPy...);
        ``copy=True`` copies it (the array API's keywords; ``device`` may only
        name this factory's)."""
        self._check_device(device)
        if copy:
            return self.from_dlpack(obj).copy()
        # the producer orders its pending work before our current stream
        buf = interop.from_dlpack(obj, stream.current_handle())
        if buf.device_type != interop.kDLCUDA:
            raise ValueError("from_dlpack needs a CUDA tensor; use ng.array() for host data")
        # buf.ptr is the address of element 0, so the view's offset is 0 even
        # with negative strides
        return GPUTensor(self, buf, buf.shape, buf.dtype, buf.strides, 0)

    @device_call
    def synchronize(self):
        """Wait until all queued kernels and copies finished."""
        stream.refuse_in_capture("synchronize()")
        self.context.synchronize()

    def stats(self):
        """Kernel and memory counters (``device_allocations`` from the pool)."""
        counters = dict(self._stats)
        counters["kernels_launched"] = self._kernels_launched()
        counters.update(self.pool.stats())
        return counters

    def _kernels_launched(self):
        """Kernels launched so far: those the factory counts in ``_stats`` and
        the dispatcher's replays (a C counter of its own)."""
        return self._stats["kernels_launched"] + self._dispatcher.launched

    # -- evaluation ---------------------------------------------------------
    @device_call
    def _gemm(self, call):
        for t in (call.a, call.b, call.c, call.bias, call.stats, call.scale_a, call.scale_b,
                  call.scale_c, call.amax):
            if t is not None:
                t.ptr  # noqa: B018 - a freed buffer raises here, before any work is queued
        _check_rounding_capturable(call.c)
        return gemm_plan.run(self, call)

    @device_call
    def _replay_gemm(self, plan, a, b, c, bias, stats, alpha, beta, scaling=(1.0, None)):
        _check_rounding_capturable(c)
        plan.replay(self, a, b, c, bias, stats, alpha, beta, scaling)

    @device_call
    def _conv(self, call):
        convolution.run(self, call)

    @device_call
    def _pool(self, call):
        pooling.run(self, call)

    def _bind_conv(self, call):
        return bound.bind_conv(self, call)

    def _bind_bias(self, E, grad_b, O, alpha, beta, full_path):  # noqa: E741
        return bound.bind_bias(self, E, grad_b, O, alpha, beta, full_path)

    def _bind_product(self, full_path, A, B, C, alpha, beta, relu, bias):
        return gemm_bound.bind_product(self, full_path, A, B, C, alpha, beta, relu, bias)

    @device_call
    def _run_bound(self, launch):
        return launch()

    @device_call
    def _update_bias(self, E, grad_b, O, alpha, beta):  # noqa: E741
        return bias.try_run(self, E, grad_b, O, alpha, beta)

    @device_call
    def _replay_pool(self, kind, pool, *tensors):
        return pooling.replay(self, kind, pool, tensors)

    @device_call
    def _algorithm(self, name, *args):
        return getattr(self._algorithms, name)(*args)

    runs_persistent_rnn = True

    def _persistent_rnn_plans(self, layer):
        return rnn_persistent.plans(layer, self)

    @device_call
    def _run_persistent_rnn(self, direction, layer, *tensors):
        run = rnn_persistent.forward if direction == "fprop" else rnn_persistent.backward
        run(self, layer, *tensors)

    def capture(self, fn, strict=False, trace_numbers=True):
        """``fn`` recorded as a CUDA graph on its first call, replayed by later calls.

        Parameters
        ----------
        fn : callable
            A step issuing device work through this factory; it takes
            tensors, Python numbers, strings, None and tuples of those.
        strict : bool
            Raise ``ValueError`` when a call would record another graph:
            other tensors than the first call's, or another value of a
            number the graph keys on.
        trace_numbers : bool
            Python floats passed in are parameters of the graph: a call
            with other values updates its kernel nodes where the step used
            them only as scalar operands of fused assignments (inside the
            recording they are stand-ins, ``isinstance(x, float)`` False).
            False: every float's value keys the graphs, as ints' do.

        Returns
        -------
        CapturedStep
            Callable like ``fn``; returns what ``fn`` returned when it was
            recorded (its tensors refreshed by each replay).  See
            :mod:`gpuarray.cuda.capture` for what a graph holds and what
            cannot be captured.
        """
        if not callable(fn):
            raise TypeError(f"capture needs a callable, not {type(fn).__name__}")
        return CapturedStep(self, fn, strict, trace_numbers)

    def _kernel(self, program, layout):
        """Compiled kernel for (program, layout), generating it on first use."""
        key = (program, layout)
        kernel = self._kernels.get(key)
        if kernel is None:
            source = generate.generate(program, layout)
            cubin = compiler.compile_source(source.text, self.arch, generate.HEADERS)
            try:
                module = driver.load_module_data(cubin)
            except driver.DriverError as err:
                if err.result != driver.OUT_OF_MEMORY:
                    raise
                # loading takes device memory, which the pool's cache may hold
                self.pool.free_cached()
                module = driver.load_module_data(cubin)
            kernel = driver.Kernel(module, source.name, arg_format=source.arg_format,
                                   source=source.text)
            self._kernels[key] = kernel
            self._stats["kernels_compiled"] += 1
        self.last_kernel = kernel
        return kernel

    def _linalg_engine(self):
        """The factorisations behind ``ng.linalg`` (cuSOLVER)."""
        return self._linalg

    @device_call
    def _fft_raw(self, kind, x, axes, s, forward):
        """The unnormalised transform of ``x`` over ``axes``, by cuFFT (ng.fft)."""
        return fft_device.transform(self, self._fft_plans, kind, x, axes, s, forward)

    @device_call
    def _load_user_kernel(self, cubin, name):
        """Kernel ``name`` of a user's compiled module (RawKernel).

        Raises
        ------
        ValueError
            The module has no such kernel.
        """
        module = self._drv.module_from_buffer(cubin)
        try:
            return module.get_function(name)
        except self._drv.LogicError:
            raise ValueError(f"no kernel named {name!r} in the source (is it declared "
                             'extern "C" __global__?)') from None

    @device_call
    def _launch_user_kernel(self, function, fmt, grid, block, values, shared):
        """Queue a user kernel on the current stream (RawKernel)."""
        function.prepared_async_call(grid, block, stream.current(), *values, shared_size=shared)

    def last_kernel_source(self):
        """CUDA C source of the most recently launched kernel."""
        return self.last_kernel.source

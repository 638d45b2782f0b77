"""The GPU factory: tensors in device memory, op-trees run as fused kernels.

In: user calls (through :class:`gpuarray.core.backend.Backend`) and, for
each assignment, a destination view and an op-tree.  Out: device work
queued on the current CUDA context.  The path of one assignment reads top
to bottom: :meth:`GPU._execute` -> :mod:`gpuarray.fusion.dispatch`
(replays a recorded recipe, or records one:) -> plan
(:mod:`gpuarray.fusion.plan`) -> layout and arguments
(:mod:`gpuarray.fusion.launch`) -> :meth:`GPU._kernel`: from the cache,
else generate (:mod:`gpuarray.fusion.generate`) and compile
(:mod:`gpuarray.cuda.compiler`) -> launch.  Matrix products go to the
hand-written GEMM kernels instead (:mod:`gpuarray.gemm.plan`).

pycuda is imported lazily, so the package imports (and the CPU factory
works) on machines without CUDA.
"""
import atexit

import numpy as np

from .core.array import Tensor
from .core.backend import Backend
from .cuda import compiler, interop
from .cuda.mempool import DeviceMemoryPool
from .fusion import dispatch, generate
from .gemm import catalogue, plan as gemm_plan
from .gemm.functions import ProductFunctions

_UNAVAILABLE = []


def gpu_unavailable_reason():
    """Why no GPU can be used here, or None when one can."""
    if not _UNAVAILABLE:
        try:
            import pycuda.driver as drv
            drv.init()
            if drv.Device.count() == 0:
                raise RuntimeError("no CUDA device found")
            _UNAVAILABLE.append(None)
        except Exception as err:  # ImportError, no driver, no device
            _UNAVAILABLE.append(f"{type(err).__name__}: {err}")
    return _UNAVAILABLE[0]


def gpu_available():
    """True when pycuda imports and a CUDA device is present."""
    return gpu_unavailable_reason() is None


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
        if copy:
            raise BufferError("gpuarray exports DLPack without copying")
        if stream not in (None, -1):
            self.backend.synchronize()  # consumer's stream must see our queued work
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return interop.to_dlpack(self.ptr, self.shape, self.strides, self.dtype,
                                 interop.kDLCUDA, self.backend.device_id, self,
                                 versioned=versioned)

    def __dlpack_device__(self):
        return (interop.kDLCUDA, self.backend.device_id)


class GPU(ProductFunctions, Backend):
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

    def __init__(self, stochastic_round=False, seed=0, device_id=0):
        super().__init__(seed, stochastic_round)
        reason = gpu_unavailable_reason()
        if reason:
            raise RuntimeError(f"gpuarray.GPU needs pycuda and a CUDA device: {reason}")
        import pycuda.driver as drv
        self._drv = drv
        self.context = drv.Context.get_current()
        if self.context is None:
            self.context = drv.Device(device_id).retain_primary_context()
            self.context.push()
            # pycuda aborts at exit if a pushed context is left on the stack
            atexit.register(self.context.pop)
        device = self.context.get_device()
        self.device_id = next(i for i in range(drv.Device.count()) if drv.Device(i) == device)
        major, minor = device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        #: thread-block clusters (and distributed shared memory) exist from sm_90
        self.clusters = major >= 9
        self.sms = device.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        self.pool = DeviceMemoryPool()
        self._kernels = {}
        self._calls = 0
        self._dispatcher = dispatch.Dispatcher(self)
        #: the hand-written GEMM kernels, loaded on first use
        self.gemm_library = catalogue.Library()

    def __repr__(self):
        return f"gpuarray.GPU(device_id={self.device_id}, seed={self.seed})"

    # -- storage ------------------------------------------------------------
    def _allocate(self, nbytes):
        return self.pool.allocate(nbytes)

    def _upload(self, tensor, host):
        if host.size:
            self._drv.memcpy_htod(tensor.ptr, host.reshape(-1).view(np.uint8))

    def _download(self, tensor):
        host = np.empty(tensor.shape, tensor.dtype)
        if host.size:
            self.synchronize()
            self._drv.memcpy_dtoh(host.reshape(-1).view(np.uint8), tensor.ptr)
        return host

    def from_dlpack(self, obj):
        """A tensor sharing the memory of a DLPack producer (torch, CuPy...)."""
        buf = interop.from_dlpack(obj)
        if buf.device_type != interop.kDLCUDA:
            raise ValueError("from_dlpack needs a CUDA tensor; use ng.array() for host data")
        # buf.ptr is the address of element 0, so the view's offset is 0 even
        # with negative strides
        return GPUTensor(self, buf, buf.shape, buf.dtype, buf.strides, 0)

    def synchronize(self):
        """Wait until all queued kernels and copies finished."""
        self.context.synchronize()

    def stats(self):
        """Kernel and memory counters (``device_allocations`` from the pool)."""
        counters = dict(self._stats)
        counters.update(self.pool.stats())
        return counters

    # -- evaluation ---------------------------------------------------------
    def _execute(self, out, tree):
        """Evaluate a checked op-tree into ``out`` with fused kernels."""
        self._dispatcher.execute(out, tree)

    def _gemm(self, call):
        gemm_plan.run(self, call)

    def _kernel(self, program, layout):
        """Compiled kernel for (program, layout), generating it on first use."""
        key = (program, layout)
        kernel = self._kernels.get(key)
        if kernel is None:
            source = generate.generate(program, layout)
            cubin = compiler.compile_source(source.text, self.arch, generate.HEADERS)
            module = self._drv.module_from_buffer(cubin)
            kernel = module.get_function(source.name)
            kernel.prepare(source.arg_format)
            kernel.source = source.text
            self._kernels[key] = kernel
            self._stats["kernels_compiled"] += 1
        self.last_kernel = kernel
        return kernel

    def last_kernel_source(self):
        """CUDA C source of the most recently launched kernel."""
        return self.last_kernel.source

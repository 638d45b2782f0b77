"""The CPU factory: the same API as ``gpuarray.GPU``, evaluated with numpy.

In: op-trees built with :mod:`gpuarray.core.optree` and a destination view;
host DLPack producers (``from_dlpack``).  Out: the destination filled in;
tensors sharing the producers' memory.  It is the oracle the GPU path is tested
against and lets every program run on a machine with no GPU.  It follows
the GPU's numeric model exactly where that differs from plain numpy:
float16/bfloat16/float8 values are computed in float32 and rounded only
when stored (or by an explicit ``astype``), and stochastic rounding uses
the same bit-level algorithm as the generated kernels.
"""
import numpy as np

from .algorithms.functions import AlgorithmFunctions
from .algorithms.host import HostAlgorithms
from .core import dtypes, ops, shapes
from .core.array import Tensor
from .core.backend import Backend
from .core.optree import Scalar, operand_type
from .conv import reference as conv_reference
from .conv.functions import ConvFunctions
from .cuda import interop
from .fft.functions import HostFFTFunctions
from .linalg.functions import HostLinAlgFunctions
from .gemm import reference as gemm_reference
from .gemm.functions import ProductFunctions
from .rnn.functions import RNNFunctions
from .userkernels.functions import UserKernelFunctions


class CPUTensor(Tensor):
    """A tensor in host memory; ``numpy_view()`` shares its memory."""

    def numpy_view(self):
        """numpy array sharing this view's memory (a new empty array for a view
        without elements, whose offset may point past its buffer's end)."""
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        return np.ndarray(self.shape, self.dtype, buffer=self.buffer, offset=self.offset,
                          strides=self.strides)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:  # the array API's: export a copy
            return self.copy().__dlpack__(max_version=max_version)
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return interop.to_dlpack(self.numpy_view().ctypes.data, self.shape, self.strides,
                                 self.dtype, interop.kDLCPU, 0, self, versioned=versioned)

    def __dlpack_device__(self):
        return (interop.kDLCPU, 0)


class CPU(AlgorithmFunctions, ConvFunctions, RNNFunctions, ProductFunctions, UserKernelFunctions,
          HostFFTFunctions, HostLinAlgFunctions, Backend):
    """Factory of host tensors evaluated with numpy.

    Parameters
    ----------
    seed : int
        Seed of ``rand()`` and of stochastic rounding.
    stochastic_round : bool
        Round float16/bfloat16/float8 results stochastically by default.
    """

    tensor_class = CPUTensor

    def __init__(self, seed=0, stochastic_round=False, **unused_gpu_options):
        super().__init__(seed, stochastic_round)
        self._rng = np.random.Generator(np.random.Philox(self.seed))
        self._algorithms = HostAlgorithms(self)

    def __repr__(self):
        return f"gpuarray.CPU(seed={self.seed})"

    def _allocate(self, nbytes):
        try:
            return np.empty(max(nbytes, 1), np.uint8)
        except MemoryError as err:
            raise MemoryError(f"out of host memory allocating {nbytes} bytes") from err

    def _upload(self, tensor, host):
        tensor.numpy_view()[...] = host

    def _download(self, tensor):
        return tensor.numpy_view().copy()

    def from_dlpack(self, obj, /, *, device=None, copy=None):
        """A tensor sharing the memory of a host DLPack producer (a numpy array...).

        Parameters
        ----------
        obj : object with ``__dlpack__``, or a DLPack capsule
            Memory the CPU can read: kDLCPU, or CUDA pinned host memory.
        device : optional
            The array API's: only this factory's device.
        copy : bool, optional
            True: a copy instead of shared memory.

        Raises
        ------
        ValueError
            For device memory (a CUDA tensor): copy it to the host first, or
            import it with ``gpuarray.GPU().from_dlpack``.
        """
        self._check_device(device)
        if copy:
            return self.from_dlpack(obj).copy()
        producer_device = getattr(obj, "__dlpack_device__", None)
        if producer_device is not None:
            _check_host_device(producer_device()[0])  # before the producer hands its memory over
        buf = interop.from_dlpack(obj)
        _check_host_device(buf.device_type)
        lo, hi = shapes.byte_span(buf.shape, buf.strides, buf.dtype.itemsize)
        if hi == lo:  # no elements: nothing to share
            return self.empty(buf.shape, buf.dtype)
        memory = np.asarray(_HostMemory(buf, lo, hi - lo))
        return CPUTensor(self, memory, buf.shape, buf.dtype, buf.strides, -lo)

    def _execute(self, out, tree):
        self._stats["kernels_launched"] += 1
        with np.errstate(all="ignore"):
            value = _Evaluator(self._rng).run(tree, out.shape)
            store(out.numpy_view(), value, out.rounding, self._rng)

    def _gemm(self, call):
        self._stats["kernels_launched"] += 1
        dest = call.c.numpy_view()
        value = gemm_reference.epilogue(call, gemm_reference.product(call), dest)
        with np.errstate(all="ignore"):
            store(dest, value, call.c.rounding, self._rng)
        if call.stats is not None:
            gemm_reference.fill_stats(call.stats.numpy_view(), dest)

    def _conv(self, call):
        self._stats["kernels_launched"] += 1
        run = getattr(conv_reference, f"{call.kind}_conv")
        value = run(call.layer, call.a.numpy_view(), call.b.numpy_view())
        dest = call.out.numpy_view()
        bias = None if call.bias is None else call.bias.numpy_view()
        value = conv_reference.epilogue(value, call.alpha, bias, call.relu, call.beta, dest)
        with np.errstate(all="ignore"):
            store(dest, value, call.out.rounding, self._rng)

    def _pool(self, call):
        self._stats["kernels_launched"] += 1
        inputs = call.inputs.numpy_view()
        if call.kind == "fprop":
            value, index = conv_reference.fprop_pool(call.layer, inputs)
            if call.argmax is not None:
                call.argmax.numpy_view()[...] = index
        else:
            index = None if call.argmax is None else call.argmax.numpy_view()
            value = conv_reference.bprop_pool(call.layer, call.errors.numpy_view(), index, inputs)
        with np.errstate(all="ignore"):
            store(call.out.numpy_view(), value, call.out.rounding, self._rng)


_HOST_DEVICES = (interop.kDLCPU, interop.kDLCUDAHost)


def _check_host_device(device_type):
    if device_type not in _HOST_DEVICES:
        raise ValueError(
            f"CPU.from_dlpack needs host memory, got DLPack device type {device_type} "
            "(a CUDA tensor?); copy it to the host first (e.g. torch's .cpu()), or "
            "import it with gpuarray.GPU().from_dlpack")


class _HostMemory:
    """Bytes of an imported DLPack buffer as numpy sees them; the numpy
    array made from it holds this object, which holds the buffer, so the
    producer's memory lives as long as any tensor viewing it."""

    def __init__(self, buf, lo, nbytes):
        self.buf = buf
        self.__array_interface__ = dict(version=3, shape=(nbytes,), typestr="|u1",
                                        data=(buf.ptr + lo, bool(buf.readonly)))


def compute_dtype(dtype):
    """dtype values of ``dtype`` are held in while computing (fp32 for fp16/bf16/fp8)."""
    return dtypes.numpy_compute_dtype(dtype)


class _Evaluator:
    """Evaluates one tree bottom-up; shared subtrees are computed once."""

    def __init__(self, rng):
        self.rng = rng
        self.memo = {}

    def run(self, tree, shape):
        return self.value(tree, shape)

    def value(self, node, shape):
        if isinstance(node, Scalar):
            return node.value
        if isinstance(node, Tensor):
            return node.numpy_view().astype(compute_dtype(node.dtype), copy=False)
        key = id(node)
        if key not in self.memo:
            self.memo[key] = self.compute(node, shape)
        return self.memo[key]

    def compute(self, node, shape):
        # rand() draws one number per element of the space it is evaluated in:
        # the destination, or the operand of the reduction it sits under.
        if node.op == "rand":
            return self.rng.random(shape, dtype=np.float32)
        if node.is_reduction:
            x = node.args[0]
            return reduce(node, self.value(x, x.shape))
        args = [self.value(a, shape) for a in node.args]
        if node.op == "squeeze":
            return np.reshape(args[0], node.shape)
        if node.op == "astype":
            return cast(args[0], node.dtype)
        if node.op == "where":
            ct = compute_dtype(node.dtype)
            return np.where(np.asarray(args[0]).astype(bool), np.asarray(args[1], ct),
                            np.asarray(args[2], ct))
        loop_in, out_dtype = ops.resolve(node.op, tuple(operand_type(a) for a in node.args))
        # nextafter and spacing step in the dtype's own units, float16, bfloat16 and fp8 too
        exact = node.op in ops.STORAGE_PRECISION
        inputs = [np.asarray(a).astype(dt if exact else compute_dtype(dt), copy=False)
                  for a, dt in zip(args, loop_in)]
        result = ops.OPS[node.op].numpy(*inputs)
        return np.asarray(result).astype(compute_dtype(out_dtype), copy=False)


def cast(value, dtype):
    """Explicit conversion: rounds to ``dtype`` (fp16/bf16/fp8 stay held in fp32)."""
    value = np.asarray(value)
    if dtypes.is_low_precision(dtype):
        return value.astype(dtype).astype(np.float32)
    return value.astype(dtype)


def reduce(node, x):
    """Evaluate a reduction node on the numpy value of its operand."""
    axes = node.attrs
    ct = compute_dtype(node.dtype)
    x = np.asarray(x)
    if node.op in ("argmax", "argmin"):
        func = ops.OPS[node.op].numpy
        if len(axes) == x.ndim and x.ndim != 1:
            return func(x).reshape(node.shape).astype(np.int64)
        return func(x, axis=axes[0], keepdims=True).astype(np.int64)
    if node.op in ("sum", "prod"):
        x = x.astype(ct, copy=False)
    return ops.OPS[node.op].numpy(x, axis=axes, keepdims=True).astype(ct, copy=False)


def store(dest, value, rounding, rng):
    """Write ``value`` into the numpy view ``dest`` with the factory's rounding."""
    value = np.asarray(value)
    if np.may_share_memory(dest, value):
        value = value.copy()  # the source is read as if copied first
    value = np.broadcast_to(value, dest.shape)
    if rounding and dtypes.is_low_precision(dest.dtype):
        value = stochastic_round(value.astype(np.float32), dest.dtype, rounding, rng)
    np.copyto(dest, value, casting="unsafe")


def stochastic_round(x, dtype, nbits, rng):
    """Round float32 ``x`` to ``nbits`` mantissa bits of ``dtype``, stochastically.

    Adds uniform random bits to the float32 bit pattern below the kept
    mantissa bits and truncates: the magnitude rounds up with probability
    equal to the discarded fraction, so the result is unbiased.  The kept
    bit count shrinks for values in ``dtype``'s subnormal range.  Mirrors
    ``ga_stochastic_round`` in the CUDA prelude; the 8-bit floats take
    :func:`stochastic_round8`'s algorithm.
    """
    if dtype in dtypes.FLOAT8:
        noise = rng.integers(0, 2**32, size=np.shape(x), dtype=np.uint64)
        return stochastic_round8(x, noise, nbits, dtypes.finfo(dtype).minexp).astype(dtype)
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    drop = np.full(bits.shape, 23 - nbits, np.int64)
    if dtype == np.float16:
        exponent = ((bits >> 23) & 0xFF).astype(np.int64) - 127
        drop += np.clip(-14 - exponent, 0, nbits)  # keep drop <= 23: never touch the exponent
    finite = ((bits >> 23) & 0xFF) != 0xFF
    noise = rng.integers(0, 2**32, size=bits.shape, dtype=np.uint64) & ((1 << drop.astype(np.uint64)) - 1)
    rounded = ((bits + np.where(finite, noise, 0)) >> drop.astype(np.uint64)) << drop.astype(np.uint64)
    rounded = np.where(finite, rounded, bits).astype(np.uint32).view(np.float32)
    return rounded.astype(dtype)


def stochastic_round8(x, noise, nbits, emin):
    """Float32 ``x`` rounded to ``nbits`` mantissa bits of an 8-bit float whose
    smallest normal value is ``2**emin``, with the random 32-bit words ``noise``.

    ``ga_stochastic_round8`` of the CUDA prelude (``float8.cuh``), bit for
    bit: in the format's normal range the noise is added below the kept
    mantissa bits and the rest truncated; below ``2**emin`` the value is
    counted in units of ``2**(emin - nbits)`` as a 32.32 fixed-point number,
    the noise added to its fraction, so that even values below the smallest
    subnormal round up with their probability (to 2**-32 of a unit).
    Returns float32 values on the kept grid (the caller casts them).
    """
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    noise = np.asarray(noise, np.uint64)
    magnitude = bits & 0x7FFFFFFF
    exponent = (magnitude >> 23).astype(np.int64)
    drop = np.uint64(23 - nbits)
    normal = ((bits + (noise & ((np.uint64(1) << drop) - np.uint64(1)))) >> drop) << drop
    significand = np.where(exponent > 0, (magnitude & 0x7FFFFF) | 0x800000, magnitude)
    shift = emin - nbits + 150 - np.maximum(exponent, 1)  # 21 or more below 2**emin
    left = np.clip(32 - shift, 0, 32).astype(np.uint64)
    right = np.clip(shift - 32, 0, 40).astype(np.uint64)  # past 24 nothing is left anyway
    fixed = np.where(shift <= 32, significand << left, significand >> right)
    units = ((fixed + noise) >> np.uint64(32)).astype(np.float32) * np.float32(2.0 ** (emin - nbits))
    small = units.view(np.uint32).astype(np.uint64) | (bits & 0x80000000)
    rounded = np.where(exponent == 0xFF, bits, np.where(exponent - 127 >= emin, normal, small))
    return rounded.astype(np.uint32).view(np.float32)

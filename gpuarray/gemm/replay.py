"""Recorded GEMM plans: a product planned once per situation, replayed per call.

In: a GEMM request as the user wrote it -- ``ng.dot(A, B, C, ...)`` or
``C[:] = relu(dot(A, B) * alpha + bias) + C * beta`` -- with plain tensors.
Out: :func:`signature`, the request's structure (shapes, strides, dtypes,
alignment, epilogue flags, precision; never pointers or scalar values),
and :class:`GemmPlan`, what :mod:`gpuarray.gemm.plan` decided for it: the
kernels, grids and the packed ``GemmArgs`` with holes for the pointers,
alpha, beta and the call counter.

A cached call skips the checks, the 3-D views, the problem, the tile
choice and the argument packing: the signature can only match a request
whose first occurrence passed every check, and everything those steps
computed depends on nothing the signature leaves out.  The TMA
descriptors embed their operand's address, so each is re-encoded only
when that address changes.
"""
import struct

from ..core.array import Tensor
from ..cuda import driver, stream

_PTRS = struct.Struct("<6Q")
_SCALARS = struct.Struct("<2fI")
_SCALING = struct.Struct("<f4Q")
#: GemmArgs byte offsets: the two descriptors, the pointers, alpha/beta/call,
#: then the host output scale and the FP8 scale and amax pointers
_TMAP_AT = (0, 128)
_PTRS_AT = struct.calcsize("<128s128s")
_SCALARS_AT = struct.calcsize("<128s128s6Q10qQ7i3i")
_SCALING_AT = _SCALARS_AT + _SCALARS.size


def _view_key(t, backend):
    """Structure of one operand: its type, geometry, dtype and 16-byte alignment class."""
    if type(t) is not backend.tensor_class or t.backend is not backend:
        raise LookupError
    return (t.shape, t.strides, t.dtype, t.rounding, t.ptr & 15)


def signature(backend, batched, a, b, c, bias, stats, relu, beta, precision, scaling=None):
    """The cache key of a GEMM request, or None when it cannot be replayed.

    Operands must be plain tensors of ``backend`` in distinct buffers (an
    operand sharing C's memory takes the temporary route, whose launches
    are not recorded).  Alpha and beta are not in the key; whether beta is
    zero is (it switches an epilogue term).  FP8's ``scaling`` (scale_a,
    scale_b, scale_c, amax): whether each is absent, a number (not its
    value) or a tensor (its structure); tensors in buffers of their own.
    """
    operands = (a, b, c) if bias is None else (a, b, c, bias)
    buffers = {id(t.buffer) for t in operands if isinstance(t, Tensor)}
    extra = [stats] if stats is not None else []
    extra += [t for t in scaling or () if isinstance(t, Tensor)]
    for t in extra:
        if not isinstance(t, Tensor):
            return None
        buffers.add(id(t.buffer))
    if len(buffers) != len(operands) + len(extra):
        return None
    try:
        return (batched, _view_key(a, backend), _view_key(b, backend), _view_key(c, backend),
                None if bias is None else _view_key(bias, backend), stats is not None,
                bool(relu), beta != 0, precision,
                None if scaling is None else tuple(_scale_key(t, backend) for t in scaling))
    except LookupError:
        return None


def _scale_key(value, backend):
    if value is None:
        return None
    if isinstance(value, Tensor):
        return _view_key(value, backend)
    if isinstance(value, (bool, complex)) or not isinstance(value, (int, float)):
        raise LookupError  # let the full path raise its error
    return float


class TensorMap:
    """One operand's TMA descriptor: fixed geometry, re-encoded when the address moves."""

    def __init__(self, dtype, dims, strides, box, swizzle, tf32):
        self.geometry = (dtype, dims, strides, box, swizzle, tf32)
        self.ptr, self.bytes = None, None

    def encode(self, ptr, stats):
        if ptr != self.ptr:
            dtype, dims, strides, box, swizzle, tf32 = self.geometry
            self.bytes = driver.encode_tiled(ptr, dtype, dims, strides, box, swizzle, tf32=tf32)
            self.ptr = ptr
            stats["tma_encodes"] = stats.get("tma_encodes", 0) + 1
        return self.bytes


class GemmPlan:
    """Everything one GEMM situation launches, less its pointers and scalars.

    Parameters
    ----------
    name : str
        The main kernel's name (reports and tests read it).
    swapped : bool
        The plan computes C^T = B^T A^T: the kernel's A is the user's B.
    launches : list of (kernel, grid, block, smem)
        The main kernel, then the split-K reduce when ``workspace_bytes``.
    template : bytes
        ``GemmArgs`` with every structural field filled in.
    tensor_maps : tuple of two TensorMap, or None
        The descriptors of the kernel's A and B (TMA kernels only).
    workspace_bytes : int
        Split-K partial sums, taken from the pool per launch (0: none).
    splits, cluster : int
        K-splits reduced by a second kernel, and blocks per cluster (1:
        neither): sharing a tile's K-tiles (GEMM), or adjacent tiles' operand
        loads (the convolution's multicast pairs).
    zeroed : tuple of two int, optional
        (byte offset, 32-bit words) of the workspace zeroed before every
        launch: the stream-K schedule's flags.
    """

    def __init__(self, name, swapped, launches, template, tensor_maps, workspace_bytes, splits,
                 cluster=1, zeroed=None):
        self.name, self.swapped, self.launches = name, swapped, launches
        self.template, self.tensor_maps = template, tensor_maps
        self.workspace_bytes, self.splits, self.cluster = workspace_bytes, splits, cluster
        self.zeroed = zeroed

    def launch(self, gpu, a, b, c, bias, stats, alpha, beta, scaling=None):
        """Queue the plan's kernels on operands given as device addresses (0: absent).

        ``a`` and ``b`` are the kernel's operands (already swapped).
        ``scaling``: FP8's (post_scale, scale_a, scale_b, scale_c, amax), the
        last four device addresses (0: absent), or None.
        """
        if stats:
            gpu._drv.memset_d32_async(stats, 0, 2, stream.current())
        if scaling is not None and scaling[4]:
            gpu._drv.memset_d32_async(scaling[4], 0, 1, stream.current())
        record = self.record(gpu, a, b, c, bias, stats, alpha, beta, scaling)
        # the previous record's workspace goes back to the pool now: work
        # queued after its kernels runs after them anyway.  Freed explicitly,
        # not left to the reference count, so that nothing which happens to
        # hold the record (a debugger's or a sanitizer's frame) keeps it.
        previous, gpu.last_gemm = gpu.last_gemm, record
        if previous is not None and previous.workspace is not None:
            previous.workspace.free()
        replay_counted(gpu, record)  # not gpu.last_gemm: another thread may have replaced it

    def record(self, gpu, a, b, c, bias, stats, alpha, beta, scaling=None):
        """The plan's launches on these operands as a :class:`GemmLaunch`, nothing queued.

        Arguments as :meth:`launch`'s.  The record owns its split-K
        workspace (taken from the pool here) until it is freed; the call
        counter is drawn here, once: replays repeat it.
        """
        args = bytearray(self.template)
        if self.tensor_maps is not None:
            for at, tmap, ptr in zip(_TMAP_AT, self.tensor_maps, (a, b)):
                args[at:at + 128] = tmap.encode(ptr, gpu._stats)
        workspace = gpu.pool.allocate(self.workspace_bytes) if self.workspace_bytes else None
        _PTRS.pack_into(args, _PTRS_AT, a, b, c, bias,
                        workspace.ptr if workspace is not None else 0, stats)
        gpu._calls += 1
        _SCALARS.pack_into(args, _SCALARS_AT, alpha, beta, gpu._calls & 0xFFFFFFFF)
        if scaling is not None:
            _SCALING.pack_into(args, _SCALING_AT, *scaling)
        # launched (and replayed) from `args` itself: nothing changes it after this point
        launches = [(kernel, grid, block, args, smem) for kernel, grid, block, smem in self.launches]
        zero = None
        if self.zeroed is not None:
            zero = (gpu._drv, workspace.ptr + self.zeroed[0], self.zeroed[1])
        return GemmLaunch(self.name, self.splits, launches, workspace, self.cluster, zero)

    def replay(self, gpu, a, b, c, bias, stats, alpha, beta, scaling=(1.0, None)):
        """Run the plan on user tensors of the recorded structure.

        ``scaling``: (post_scale, tensors) of :func:`gpuarray.gemm.call.scale_values`,
        tensors None for a product without FP8 scales.
        """
        if self.swapped:
            a, b = b, a
        self.launch(gpu, a.ptr, b.ptr, c.ptr, bias.ptr if bias is not None else 0,
                    stats.ptr if stats is not None else 0, alpha, beta,
                    scale_pointers(*scaling, self.swapped))


def scale_pointers(post, tensors, swapped):
    """FP8's GemmArgs tail (post_scale, scale_a, scale_b, scale_c, amax) for the
    kernel's operand order, or None without scales."""
    if tensors is None:
        return None
    scale_a, scale_b, scale_c, amax = (t.ptr if t is not None else 0 for t in tensors)
    if swapped:
        scale_a, scale_b = scale_b, scale_a
    return (post, scale_a, scale_b, scale_c, amax)


class GemmLaunch:
    """The kernels one GEMM queued: (kernel, grid, block, argument struct bytes, shared bytes),
    and ``zero``: (driver, address, 32-bit words) of workspace zeroed before them, or None."""

    __slots__ = ("name", "splits", "launches", "workspace", "cluster", "zero")

    def __init__(self, name, splits, launches, workspace=None, cluster=1, zero=None):
        self.name, self.splits, self.launches, self.workspace = name, splits, launches, workspace
        self.cluster, self.zero = cluster, zero

    def replay(self):
        """Queue the same kernels again (same operands, same call counter)."""
        if self.zero is not None:
            drv, ptr, words = self.zero
            drv.memset_d32_async(ptr, 0, words, stream.current())
        for kernel, grid, block, params, smem in self.launches:
            kernel.launch(grid, block, params, smem)


def replay_counted(gpu, record):
    """Queue ``record`` (a :class:`GemmLaunch`) again, counting its launches in
    the factory's statistics: a bound call's run (:mod:`gpuarray.conv.bound`,
    :mod:`gpuarray.gemm.bound`)."""
    record.replay()
    gpu._stats["kernels_launched"] += len(record.launches)

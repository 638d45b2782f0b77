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

import numpy as np

from ..core import dtypes
from ..core.array import Tensor
from ..cuda import stream, tensor_maps
from . import catalogue as gk

_PTRS = struct.Struct("<6Q")
_SCALARS = struct.Struct("<2fI")
_SCALING = struct.Struct("<f4Q")
#: GemmArgs byte offsets: A's and B's descriptors, C's, the pointers,
#: alpha/beta/call, then the host output scale and the FP8 scale and amax pointers
_TMAP_AT = (0, 128)
_TMAP_C_AT = 256
_PTRS_AT = struct.calcsize("<128s128s128s")
_SCALARS_AT = struct.calcsize("<128s128s128s6Q10qQ7i3i")
#: whether the sm90 kernels' 16-bit C goes out through the copy engine where
#: it can (:func:`output_map`); False keeps every store in the threads (for
#: measuring one against the other: plans recorded before a change keep theirs)
STORE_C_BY_COPY_ENGINE = True
#: whether the sm90 kernels (products and convolutions) launch as programmatic
#: dependents of the kernel before them (:func:`sm90_kernel`); False makes each
#: wait for that kernel's end before it launches (for measuring one against
#: the other, as STORE_C_BY_COPY_ENGINE)
DEPENDENT_LAUNCH = True
#: GemmArgs::c_type codes of the 16-bit outputs the copy engine may store
_C16 = {gk.TYPE_CODE[dtype]: dtype for dtype in (np.dtype(np.float16), dtypes.bfloat16)}
#: epilogue flags that keep C's stores in the threads (they read C or finish
#: values one at a time)
_THREAD_STORES = gk.EPI_BETA | gk.EPI_SR | gk.EPI_STATS | gk.EPI_AMAX
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


#: descriptors a TensorMap keeps, one per recent address: ``C = A @ B`` in a
#: loop allocates the new C before the old one is freed, so a result's
#: address alternates between two blocks of the pool
RECENT_ADDRESSES = 4


class TensorMap:
    """One operand's TMA descriptor: fixed geometry, encoded once per recent address."""

    def __init__(self, dtype, dims, strides, box, swizzle, tf32):
        self.geometry = (dtype, dims, strides, box, swizzle, tf32)
        self.encoded = {}

    def encode(self, ptr, stats):
        encoded = self.encoded.get(ptr)
        if encoded is None:
            encoded = self._make(ptr)
            if len(self.encoded) >= RECENT_ADDRESSES:
                del self.encoded[next(iter(self.encoded))]  # the oldest
            self.encoded[ptr] = encoded
            stats["tma_encodes"] = stats.get("tma_encodes", 0) + 1
        return encoded

    def _make(self, ptr):
        dtype, dims, strides, box, swizzle, tf32 = self.geometry
        return tensor_maps.encode_tiled(ptr, dtype, dims, strides, box, swizzle, tf32=tf32)


def output_map(ints, strides, bn, transposed=False):
    """The copy engine's descriptor of a sm90 kernel's C, or None where it cannot store C.

    ``ints`` and ``strides`` are the ``GemmArgs`` fields of
    :func:`gpuarray.gemm.catalogue.pack` (M, N, K, batch, kbatch, splits,
    ..., flags, c_type; ..., ldc, ..., batch_c, ...); ``bn`` the tile's
    width.  A 16-bit C in rows of whole 16-byte pieces, one split and an
    epilogue of at most alpha, bias, relu and an output scale, on tiles of
    a multiple of 64 columns: the kernel stores it from shared memory 64
    rows x 32 columns a copy (``kernels/sm90_epilogue.cuh``,
    ga_epilogue16_tma); ``transposed``, a C stored as C^T (the transposed
    fprop: C[m, n] at n * ldc + m), 32 columns x 64 rows a copy
    (ga_epilogue16t).  The kernel checks the rest (C's address aligned);
    the caller sets ``EPI_TMA_C`` in the flags with the map.
    """
    m, n, _, batch, _, splits, _, flags, c_type, _ = ints
    ldc, batch_c = strides[4], strides[7]
    if (not STORE_C_BY_COPY_ENGINE or c_type not in _C16 or bn % 64 or splits != 1
            or flags & _THREAD_STORES or ldc % 8 or (batch > 1 and (batch_c <= 0 or batch_c % 8))):
        return None
    rows, columns = (n, m) if transposed else (m, n)
    # one batch: the stride is never used, but must still be a multiple of 16
    batch_bytes = 2 * batch_c if batch > 1 else -(-(2 * ldc * rows) // 16) * 16
    box, swizzle = ((64, 32, 1), 128) if transposed else ((32, 64, 1), 64)
    return TensorMap(_C16[c_type], (columns, rows, batch), (2 * ldc, batch_bytes), box, swizzle, False)


def with_output_map(ints, strides, bn, transposed=False):
    """(ints with ``EPI_TMA_C`` set where C has a map, the map or None):
    :func:`output_map` for a planner."""
    c_map = output_map(ints, strides, bn, transposed)
    if c_map is None:
        return ints, None
    return ints[:7] + (ints[7] | gk.EPI_TMA_C,) + ints[8:], c_map


def sm90_kernel(kernel, cluster):
    """An sm90 product's or convolution's ``kernel`` as its plans launch it: in
    clusters of ``cluster`` blocks, a programmatic dependent launch where
    :data:`DEPENDENT_LAUNCH` is on.

    As a dependent, the kernel's launch and set-up (barriers, the cluster's
    sync) overlap the previous kernel's last wave, and it waits for that
    kernel's end itself (``gemm_sm90.cuh``): about the set-up's time off
    every call that follows another kernel.
    """
    if cluster > 1 or DEPENDENT_LAUNCH:
        return kernel.clustered(cluster, DEPENDENT_LAUNCH)
    return kernel


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
    c_map : TensorMap, optional
        C's (:func:`output_map`), encoded for a 16-byte aligned C.
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
                 cluster=1, zeroed=None, c_map=None):
        self.name, self.swapped, self.launches = name, swapped, launches
        self.template, self.tensor_maps, self.c_map = template, tensor_maps, c_map
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
        if self.c_map is not None and c % 16 == 0:
            args[_TMAP_C_AT:_TMAP_C_AT + 128] = self.c_map.encode(c, gpu._stats)
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

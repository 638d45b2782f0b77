# Cython declarations for mempool.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  DeviceMemoryPool becomes an extension type: every
# allocation reads and updates a dozen of its fields (the lock, the cache,
# the returns queue, the counters), which become C slots instead of
# instance-dictionary entries.  So does PooledBuffer, made and finalized for
# every tensor and read by every dispatch (``pointer``, a C call there).  (The sizes stay Python ints: a request may
# name up to 2**64 - 1 bytes, which the driver refuses, not a C conversion.)

from gpuarray.cuda.stream cimport current as current_stream

cdef class PooledBuffer:
    cdef public object address, nbytes, capacity, stream, _raw, _returns
    cdef public bint freed
    cdef object __weakref__

    cpdef pointer(self)

cdef class DeviceMemoryPool:
    cdef public object _alloc, _order, _cache, _returns, _lock, _local
    cdef public object _device_allocations, _device_frees, _oom_recoveries
    cdef public object _bytes_in_use, _blocks_in_use, _bytes_cached, _blocks_cached

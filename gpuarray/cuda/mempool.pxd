# Cython declarations for mempool.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  DeviceMemoryPool becomes an extension type: every
# allocation reads and updates a dozen of its fields (the lock, the cache,
# the returns queue, the counters), which become C slots instead of
# instance-dictionary entries, the counters C integers; the internals it
# calls with the lock held are C methods.

cimport cython
from gpuarray.cuda.stream cimport current as current_stream

cdef class DeviceMemoryPool:
    cdef public object _alloc, _order, _returns, _lock, _local
    cdef public dict _cache
    cdef public Py_ssize_t _device_allocations, _device_frees, _oom_recoveries
    cdef public Py_ssize_t _bytes_in_use, _blocks_in_use, _bytes_cached, _blocks_cached

    @cython.locals(capacity=Py_ssize_t)
    cdef _drain_returns(self)
    @cython.locals(blocks=list)
    cdef _reuse(self, Py_ssize_t capacity, current)

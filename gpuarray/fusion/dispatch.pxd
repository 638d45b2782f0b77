# Cython declarations for dispatch.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  The replay path -- the recipe cache, the slots,
# each recorded launch -- runs on every cached assignment: its classes
# become extension types whose fields are C slots, and the slot filling
# works on typed lists.

from gpuarray.core.array cimport Tensor

cdef class Dispatcher:
    cdef public object gpu
    cdef public dict recipes

cdef class _Launcher:
    cdef public object kernel, grid, block, packed, patched
    cdef public list runs

cdef class _Recipe:
    cdef public list launchers, offsets
    cdef public Py_ssize_t counters, temp_bytes

@cython.locals(out=Tensor, t=Tensor, slots=list, pattern=list, buffers=list, bases=list,
               group=Py_ssize_t)
cpdef tuple _slots(out, tuple leaves)

# Cython declarations for stream.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  A thread's launch state is an extension type
# whose fields compiled callers (the dispatcher) read as C slots, and the
# functions every launch asks are C functions they cimport: no Python call
# per launch.

cdef class LaunchState:
    cdef public object stream, public, handle, capture, tracer
    cdef public bint random

cpdef LaunchState launch_state()
cpdef current()
cpdef launch_handle()
cpdef capturing()

# Cython declarations for dispatch.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  The replay path -- the recipe cache, each
# recorded launch -- runs on every cached assignment: its classes become
# extension types whose fields are C slots; the slots come from slots.pxd's
# C function.

cimport cython
from gpuarray.core.array cimport Tensor
from gpuarray.core.operand cimport Operand
from gpuarray.cuda.launch_entry cimport PatchedLaunch
from gpuarray.cuda.stream cimport LaunchState, launch_state
from gpuarray.fusion.slots cimport slots_of

cdef class _Launcher:
    cdef public object kernel, grid, block, packed
    cdef public PatchedLaunch patched
    cdef public list runs, holes

    cpdef run(self, list slots, stream_handle)

cdef class _Recipe

cdef class Dispatcher:
    cdef public object gpu, calls, last_kernel, attached
    cdef public dict recipes
    cdef public Py_ssize_t launched

    @cython.locals(recipe=_Recipe, slots=list, launching=LaunchState, out=Tensor,
                   operand=Operand)
    cpdef execute(self, out, tree)

cdef class _Recipe:
    cdef public list launchers, offsets
    cdef public Py_ssize_t counters, temp_bytes

    @cython.locals(launcher=_Launcher)
    cpdef replay(self, Dispatcher dispatcher, list slots, handle, note)

# Cython declarations for dispatch.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  The replay path -- the recipe cache, the slots,
# each recorded launch -- runs on every cached assignment: its classes
# become extension types whose fields are C slots, and the slot filling
# works on typed lists.

cimport cython
from gpuarray.core.array cimport Tensor
from gpuarray.core.optree cimport OpTreeNode
from gpuarray.core.scalars cimport Scalar
from gpuarray.cuda.mempool cimport PooledBuffer
from gpuarray.cuda.stream cimport capturing, launch_handle

cdef class _Launcher:
    cdef public object kernel, grid, block, packed, patched
    cdef public list runs

    cpdef run(self, list slots, stream_handle)

cdef class _Recipe

cdef class Dispatcher:
    cdef public object gpu, calls, last_kernel
    cdef public dict recipes, stats

    @cython.locals(recipe=_Recipe, slots=list)
    cpdef execute(self, out, tree)

cdef class _Recipe:
    cdef public list launchers, offsets
    cdef public Py_ssize_t counters, temp_bytes

    @cython.locals(launcher=_Launcher)
    cpdef replay(self, Dispatcher dispatcher, list slots)

@cython.locals(out=Tensor, slots=list, pattern=list, buffers=list, bases=list)
cpdef tuple _slots(out, tree)
cdef Py_ssize_t _NESTING

@cython.locals(arg=object)
cdef _walk(OpTreeNode node, list slots, list pattern, list buffers, list bases, Py_ssize_t depth)
@cython.locals(node=OpTreeNode, pending=list)
cdef _walk_deep(tree, list slots, list pattern, list buffers, list bases)
@cython.locals(t=Tensor, s=Scalar, group=Py_ssize_t)
cdef _leaf(leaf, list slots, list pattern, list buffers, list bases)
@cython.locals(block=PooledBuffer)
cdef _address(buffer)
cdef _shared(Py_ssize_t group, delta, align)

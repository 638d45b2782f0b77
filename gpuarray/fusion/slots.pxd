# Cython declarations for slots.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  The walk over a cached assignment's tree: typed
# lists, C recursion, the tensors' and scalars' fields read as C slots, and
# the pool buffer's pointer read through a C call.

cimport cython
from gpuarray.core.array cimport Tensor
from gpuarray.core.optree cimport OpTreeNode
from gpuarray.core.scalars cimport Scalar
from gpuarray.cuda.mempool cimport PooledBuffer

@cython.locals(out=Tensor, slots=list, pattern=list, met=list)
cpdef tuple slots_of(out, tree)
cdef Py_ssize_t _NESTING

@cython.locals(arg=object)
cdef _walk(OpTreeNode node, list slots, list pattern, list met, Py_ssize_t depth)
cdef _walk_deep(tree, list slots, list pattern, list met)
@cython.locals(t=Tensor, s=Scalar, group=Py_ssize_t)
cdef _leaf(leaf, list slots, list pattern, list met)
@cython.locals(block=PooledBuffer)
cdef _address(buffer)
cdef _shared(Py_ssize_t group, delta, align)

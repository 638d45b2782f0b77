# Cython declarations for array.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  Tensor becomes an extension type whose view
# fields (and Operand's) are C slots: every operator and assignment reads
# them.  The factories' subclasses (GPUTensor, CPUTensor) are Python classes.

cimport cython
from gpuarray.core.operand cimport Operand
from gpuarray.core.optree cimport Expression, OpTreeNode, owned, settled

cdef class Tensor(Expression):
    cdef public object buffer, strides, offset, _rounding, _contiguous

cdef dict _LAYOUTS

@cython.locals(target=Tensor, operand=Operand, node=OpTreeNode)
cpdef assign_owned(target, tree)

@cython.locals(whole=slice)
cdef bint _whole(key)

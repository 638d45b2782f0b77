# Cython declarations for array.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  Tensor becomes an extension type whose view
# fields are C slots: every operator and assignment reads them.  The
# factories' subclasses (GPUTensor, CPUTensor) are Python classes.

from gpuarray.core.optree cimport Expression

cdef class Tensor(Expression):
    cdef public object backend, buffer, shape, dtype, operand_type, strides, offset
    cdef public object _rounding, sig, _contiguous

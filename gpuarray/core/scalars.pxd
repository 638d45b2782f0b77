# Cython declarations for scalars.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  Scalar becomes an extension type: its fields are
# C slots (Operand's and its own), so the scalar leaf of ``A * 2`` is made
# without an instance dictionary.

cimport cython
from gpuarray.core.operand cimport Operand

cdef class Scalar(Operand):
    cdef public object value, weak_type

@cython.locals(s=Scalar)
cpdef Scalar python_scalar(value)

@cython.locals(a=Scalar)
cpdef bint float_loop_ints(tuple args, tuple floats) except -1

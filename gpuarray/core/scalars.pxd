# Cython declarations for scalars.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  Scalar becomes an extension type: its fields are
# C slots, so the scalar leaf of ``A * 2`` is made without an instance
# dictionary.

cdef class Scalar:
    cdef public object value, dtype, weak_type, operand_type, sig

cpdef bint float_loop_ints(tuple args, tuple loop) except -1

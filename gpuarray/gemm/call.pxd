# Cython declarations for call.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  ``ng.dot(A, B)`` without C builds its lazy node
# on every call of an epilogue assignment: the operands' fields are read as
# C slots once they are known tensors.

cimport cython
from gpuarray.core.array cimport Tensor

@cython.locals(a_shape=tuple, b_shape=tuple)
cpdef tuple dot_shape(Tensor a, Tensor b)

# Cython declarations for operand.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  Operand is the extension base of ArrayLike (so of
# Tensor and OpTreeNode) and of Scalar: the fields every operand has are C
# slots at one offset, read directly by code holding an Operand.

cdef class Operand:
    cdef public object backend, shape, dtype, operand_type, sig

# Cython declarations for arraylike.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  ArrayLike is the extension base of Expression
# (and so of Tensor and OpTreeNode); its fields are Operand's.

from gpuarray.core.operand cimport Operand

cdef class ArrayLike(Operand):
    pass

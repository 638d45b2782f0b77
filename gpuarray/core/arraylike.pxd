# Cython declarations for arraylike.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  ArrayLike is the extension base of Expression
# (and so of Tensor and OpTreeNode): it holds no fields.

cdef class ArrayLike:
    pass

# Cython declarations for signatures.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  Every operator's node asks its table here: C
# functions the op-tree cimports, and the pairing of two signatures in C
# integers.

cimport cython

cdef dict _BINARY, _UNARY, _STRUCTURES

cpdef new_structure_sig()
cpdef structure(tuple key)
cpdef keep(dict table, key, value)
cpdef dict binary_table(name)
cpdef dict unary_table(name)
cdef dict _table(dict tables, name)
@cython.locals(high=cython.longlong, low=cython.longlong, mask=cython.longlong, key=cython.longlong)
cpdef pair(a, b)

# Cython declarations for signatures.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  Every operator's node asks its table here: C
# functions the op-tree cimports.

cimport cython

cdef dict _BINARY, _UNARY, _STRUCTURES

cpdef new_structure_sig()
cpdef structure(tuple key)
cpdef keep(dict table, key, value)
cpdef dict binary_table(name)
cpdef dict unary_table(name)
cdef dict _table(dict tables, name)
@cython.locals(partners=dict)
cpdef keep_binary(dict table, first, second, value)

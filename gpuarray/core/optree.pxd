# Cython declarations for optree.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  Expression and OpTreeNode become extension types:
# a node's fields are C slots, so building one -- the cost of every operator
# in an expression -- skips the instance dictionary and descriptor lookups.
# Python subclasses (Tensor) keep their own attributes.

from gpuarray.core.arraylike cimport ArrayLike
from gpuarray.core.scalars cimport float_loop_ints

cdef class Expression(ArrayLike):
    cdef _binary(self, name, other, bint reflected=*)

cdef class OpTreeNode(Expression):
    cdef public object op, args, attrs, shape, dtype, backend, sig, leaves
    cdef public object operand_type, has_gemm, value

cpdef _binary_node(backend, name, tuple args)
cdef _unary_node(backend, name, tuple args)
@cython.locals(child=OpTreeNode)
cdef _fill_binary(OpTreeNode node, backend, op, tuple args, attrs, shape, dtype)

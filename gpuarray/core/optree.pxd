# Cython declarations for optree.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  Expression and OpTreeNode become extension types:
# a node's fields are C slots (its own and Operand's), so building one -- the
# cost of every operator in an expression -- skips the instance dictionary
# and descriptor lookups.  Python subclasses (Tensor) keep their own
# attributes.

cimport cython
from gpuarray.core.arraylike cimport ArrayLike
from gpuarray.core.operand cimport Operand
from gpuarray.core.scalars cimport float_loop_ints, python_scalar

cdef class Expression(ArrayLike):
    @cython.locals(operand=Operand)
    cdef _binary(self, name, other, bint reflected=*)

cdef class OpTreeNode(Expression):
    cdef public object op, args, attrs, leaves, has_gemm, value

cdef dict _LOOPS

cpdef apply(backend, name, tuple args)
@cython.locals(operand=Operand)
cdef bint _owned(backend, value)
cpdef elementwise(backend, name, tuple args)

@cython.locals(x=Operand, y=Operand)
cpdef _binary_node(backend, name, tuple args)
@cython.locals(x=Operand)
cdef _unary_node(backend, name, tuple args)
@cython.locals(child=OpTreeNode, x=Operand, y=Operand, has_gemm=bint)
cdef _fill_binary(OpTreeNode node, backend, op, tuple args, attrs, shape, dtype, bint product)
@cython.locals(child=OpTreeNode, x=Operand)
cdef _fill_unary(OpTreeNode node, backend, op, a, attrs, shape, dtype)

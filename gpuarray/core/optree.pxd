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
from gpuarray.core.signatures cimport (binary_table, keep, keep_binary, new_structure_sig,
                                       structure, unary_table)

# the operators' tables (optree.py says why)
cdef dict _ADD, _SUBTRACT, _MULTIPLY, _DIVIDE, _FLOOR_DIVIDE, _MOD, _POWER, _AND, _OR, _XOR
cdef dict _LSHIFT, _RSHIFT, _EQUAL, _NOT_EQUAL, _LESS, _LESS_EQUAL, _GREATER, _GREATER_EQUAL

cdef class Expression(ArrayLike):
    @cython.locals(operand=Operand)
    cdef _binary(self, name, other, bint reflected=*, dict table=*)

cdef class OpTreeNode(Expression):
    cdef public object op, args, attrs, has_gemm, value


cpdef bint plain_scalar(value)
cpdef apply(backend, name, tuple args, dict table=*)
@cython.locals(operand=Operand)
cpdef bint owned(backend, value)
cdef _operand(backend, value)
cpdef elementwise(backend, name, tuple args)

@cython.locals(operand=Operand, key=list)
cdef _fill(OpTreeNode node, backend, op, tuple args, attrs, tuple shape, dtype)
@cython.locals(node=OpTreeNode)
cpdef OpTreeNode new_node(backend, op, tuple args, attrs, tuple shape, dtype)
@cython.locals(node=OpTreeNode)
cdef bint _holds_product(tuple args) except -1
@cython.locals(node=OpTreeNode)
cdef OpTreeNode _new_node(backend, op, tuple args, shape, dtype, sig, has_gemm)
@cython.locals(node=OpTreeNode)
cpdef bint _unsettled(value)
cpdef settled(value)
cdef tuple _settled(tuple args)

@cython.locals(x=Operand, y=Operand, entry=tuple, floats=tuple, partners=dict)
cpdef _binary_node(backend, name, tuple args, dict table=*)
@cython.locals(x=Operand)
cdef _unary_node(backend, name, tuple args, dict table=*)

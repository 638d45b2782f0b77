"""Lazy op-trees: what arithmetic on tensors builds instead of computing.

In: tensors, Python/numpy scalars and other op-trees, combined through
operators (``A + B * 2``) or factory functions (``ng.mean(A, axis=1)``).
Out: an :class:`OpTreeNode` that knows its shape and dtype.  Every check a
user can get wrong (broadcasting, dtypes numpy would reject, axes, mixing
factories) runs here, when the tree is built, so a bad expression fails at
the line that wrote it, never inside a kernel.

Leaves are tensors (``array.Tensor``) and scalars
(:class:`~gpuarray.core.scalars.Scalar`); ``Rand`` is a leaf-like node
drawing uniform numbers when evaluated.
"""
import itertools

import numpy as np

from . import dtypes, ops, shapes
from .arraylike import ArrayLike
from .operand import Operand
from .scalars import Scalar, check_scalars, float_loop_ints, python_scalar
from .signatures import binary_table, keep, keep_binary, new_structure_sig, structure, unary_table

_rand_serial = itertools.count()
#: nodes run by hand-written kernels, never fused: matrix products and
#: convolutions (implicit GEMMs); a tree holding one has ``has_gemm``
_PRODUCTS = ("dot", "batched_dot", "conv")


def plain_scalar(value):
    """True for a Python ``int``, ``float`` or ``bool`` exactly (no subclass,
    no complex): an operand that becomes a Scalar leaf with no further
    checks.  Three pointer comparisons where compiled."""
    kind = type(value)
    return kind is float or kind is int or kind is bool


def _reduction_method(name):
    """A method running ``ng.<name>`` on its expression (numpy's keepdims=False by default)."""
    def method(self, axis=None, keepdims=False, out=None, **kwargs):
        return getattr(self.backend, name)(self, axis=axis, keepdims=keepdims, out=out, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``ng.{name}`` of this expression (keepdims=False by default, as numpy's)."
    return method


#: each operator's fast-path table (:func:`~gpuarray.core.signatures.binary_table`),
#: a module global the operator passes on: no lookup by the op's name per node
(_ADD, _SUBTRACT, _MULTIPLY, _DIVIDE, _FLOOR_DIVIDE, _MOD, _POWER, _AND, _OR, _XOR,
 _LSHIFT, _RSHIFT, _EQUAL, _NOT_EQUAL, _LESS, _LESS_EQUAL, _GREATER, _GREATER_EQUAL) = (
    binary_table(name) for name in (
        "add", "subtract", "multiply", "divide", "floor_divide", "mod", "power", "bitwise_and",
        "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "equal", "not_equal", "less",
        "less_equal", "greater", "greater_equal"))


class Expression(ArrayLike):
    """Operators shared by tensors and op-tree nodes; each builds a node.

    Subclasses provide ``backend``, ``shape``, ``dtype`` and ``operand_type``
    (what numpy's type resolution sees: the dtype).
    """

    # numpy must not treat expressions as arrays: make it defer to our operators
    __array_ufunc__ = None
    #: True for trees holding a matrix product or a convolution (gpuarray.gemm.fuse)
    has_gemm = False

    def __hash__(self):
        # __eq__ builds an expression, so hashing stays by identity
        return id(self)

    def _binary(self, name, other, reflected=False, table=None):
        # the hot path of expression building: no out=, so straight to the node
        # (an operator passes its op's table, found without a lookup by name)
        backend = self.backend
        if plain_scalar(other):
            other = python_scalar(other)
        elif not isinstance(other, Operand):
            other = backend.operand(other)
        else:
            operand = other
            if operand.backend is not backend:
                other = backend.operand(other)
        return _binary_node(backend, name, (other, self) if reflected else (self, other), table)

    def __add__(self, other): return self._binary("add", other, False, _ADD)
    def __radd__(self, other): return self._binary("add", other, True, _ADD)
    def __sub__(self, other): return self._binary("subtract", other, False, _SUBTRACT)
    def __rsub__(self, other): return self._binary("subtract", other, True, _SUBTRACT)
    def __mul__(self, other): return self._binary("multiply", other, False, _MULTIPLY)
    def __rmul__(self, other): return self._binary("multiply", other, True, _MULTIPLY)
    def __truediv__(self, other): return self._binary("divide", other, False, _DIVIDE)
    def __rtruediv__(self, other): return self._binary("divide", other, True, _DIVIDE)
    def __floordiv__(self, other): return self._binary("floor_divide", other, False, _FLOOR_DIVIDE)
    def __rfloordiv__(self, other): return self._binary("floor_divide", other, True, _FLOOR_DIVIDE)
    def __mod__(self, other): return self._binary("mod", other, False, _MOD)
    def __rmod__(self, other): return self._binary("mod", other, True, _MOD)
    def __pow__(self, other): return self._binary("power", other, False, _POWER)
    def __rpow__(self, other): return self._binary("power", other, True, _POWER)
    def __and__(self, other): return self._binary("bitwise_and", other, False, _AND)
    def __rand__(self, other): return self._binary("bitwise_and", other, True, _AND)
    def __or__(self, other): return self._binary("bitwise_or", other, False, _OR)
    def __ror__(self, other): return self._binary("bitwise_or", other, True, _OR)
    def __xor__(self, other): return self._binary("bitwise_xor", other, False, _XOR)
    def __rxor__(self, other): return self._binary("bitwise_xor", other, True, _XOR)
    def __lshift__(self, other): return self._binary("left_shift", other, False, _LSHIFT)
    def __rlshift__(self, other): return self._binary("left_shift", other, True, _LSHIFT)
    def __rshift__(self, other): return self._binary("right_shift", other, False, _RSHIFT)
    def __rrshift__(self, other): return self._binary("right_shift", other, True, _RSHIFT)

    def __eq__(self, other):
        if other is None:  # numpy: elementwise, never equal; x AND False is that tree
            return self._binary("logical_and", False)
        return self._binary("equal", other, False, _EQUAL)

    def __ne__(self, other):
        if other is None:
            return self._binary("logical_or", True)
        return self._binary("not_equal", other, False, _NOT_EQUAL)

    def __lt__(self, other): return self._binary("less", other, False, _LESS)
    def __le__(self, other): return self._binary("less_equal", other, False, _LESS_EQUAL)
    def __gt__(self, other): return self._binary("greater", other, False, _GREATER)
    def __ge__(self, other): return self._binary("greater_equal", other, False, _GREATER_EQUAL)
    def __divmod__(self, other): return self // other, self % other
    def __rdivmod__(self, other): return self.__rfloordiv__(other), self.__rmod__(other)
    def __matmul__(self, other): return self.backend.matmul(self, other)
    def __rmatmul__(self, other): return self.backend.matmul(other, self)
    def __neg__(self): return self.backend.elementwise("negative", self)

    def __pos__(self):
        if self.dtype.kind == "b":
            raise TypeError("ufunc 'positive' did not contain a loop with signature matching "
                            "types <class 'numpy.dtypes.BoolDType'> -> None")
        return self

    def __abs__(self): return self.backend.elementwise("absolute", self)
    def __invert__(self): return self.backend.elementwise("invert", self)

    def astype(self, dtype, copy=True):
        """This expression cast to ``dtype`` (lazy); ``copy=False`` returns it
        as it is where it has that dtype already."""
        return self.backend.astype(self, dtype, copy=copy)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        """``ng.argsort`` of this expression."""
        return self.backend.argsort(self, axis, kind, order, stable=stable)

    def nonzero(self):
        """``ng.nonzero`` of this expression."""
        return self.backend.nonzero(self)

    def take(self, indices, axis=None, out=None, mode="raise"):
        """``ng.take`` from this expression."""
        return self.backend.take(self, indices, axis, out, mode)

    def searchsorted(self, v, side="left", sorter=None):
        """``ng.searchsorted`` of ``v`` in this 1-D expression."""
        return self.backend.searchsorted(self, v, side, sorter)

    sum = _reduction_method("sum")
    prod = _reduction_method("prod")
    mean = _reduction_method("mean")
    var = _reduction_method("var")
    std = _reduction_method("std")
    max = _reduction_method("max")
    min = _reduction_method("min")
    argmax = _reduction_method("argmax")
    argmin = _reduction_method("argmin")
    any = _reduction_method("any")
    all = _reduction_method("all")
    ptp = _reduction_method("ptp")


class OpTreeNode(Expression):
    """One operation applied to operands, evaluated lazily.

    Attributes
    ----------
    op : str
        Name in the op table (``ops.OPS``), one of the structural ops
        ``astype``, ``where``, ``rand``, ``squeeze``, a matrix product
        ``dot`` / ``batched_dot`` or a convolution ``conv`` (run by the
        hand-written kernels, never fused).
    args : tuple
        Operands: tensors, :class:`Scalar` or other nodes.
    attrs : tuple
        Hashable op parameters: reduced axes, target dtype, target shape.
    shape, dtype
        Result shape and dtype, computed when the node is built.
    value : Tensor or None
        The node as a lazy array: its value once something needed it
        (indexing, printing, ``get()``, a host conversion, a view), then
        kept, so a tree evaluated twice runs once, and a node built on it
        afterwards reads the value instead of running the tree again.
    """

    __slots__ = ("op", "args", "attrs", "shape", "dtype", "backend", "sig",
                 "operand_type", "has_gemm", "value")

    def __init__(self, backend, op, args, attrs, shape, dtype):
        _fill(self, backend, op, args if type(args) is tuple else tuple(args), attrs,
              shape if type(shape) is tuple else tuple(shape), dtype)

    @property
    def is_reduction(self):
        """True for reduction nodes (sum, max, argmax... and users' reductions)."""
        return self.op in ops.REDUCTIONS or self.op in ops.USER_REDUCTIONS

    def describe(self):
        """The tree as text, ``add(multiply(<GPUTensor (3,) float32>, 2), 1)``; evaluates nothing."""
        inner = ", ".join(repr(a) if not isinstance(a, Expression) else _short(a) for a in self.args)
        return f"{self.op}({inner}{', ' if self.attrs and inner else ''}{_attrs(self.attrs)})"

    # -- the lazy array: what needs values evaluates the tree once ---------
    def _evaluated(self):
        """The tree's value: evaluated on first use, then kept."""
        if self.value is None:
            self.value = self.backend.evaluate(self)
        return self.value

    def __repr__(self):
        """The values as the tensor's repr shows them, marked lazy:
        ``GPUTensor([3., 3.], dtype=float32, lazy=True)``."""
        text = repr(self._evaluated())
        return text[:-1] + ", lazy=True)"

    def __str__(self):
        return str(self._evaluated())

    def get(self):
        """The values, copied into a new numpy array."""
        return self._evaluated().get()

    def __getitem__(self, key):
        return self._evaluated()[key]

    def __setitem__(self, key, value):
        self._evaluated()[key] = value

    def transpose(self, *axes):
        """The value's view with permuted axes (``Tensor.transpose``)."""
        return self._evaluated().transpose(*axes)

    def reshape(self, *shape):
        """The value's view with a new shape (``Tensor.reshape``)."""
        return self._evaluated().reshape(*shape)

    def ravel(self):
        """The value, 1-D (``Tensor.ravel``)."""
        return self._evaluated().ravel()

    def copy(self):
        """A new tensor with the values."""
        return self.backend.evaluate(self.value if self.value is not None else self)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Sort the value in place (``Tensor.sort``)."""
        self._evaluated().sort(axis, kind, order, stable=stable)

    def fill(self, value):
        """Set every element of the value; returns self (``Tensor.fill``)."""
        self._evaluated().fill(value)
        return self

    def __dlpack__(self, **kwargs):
        return self._evaluated().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._evaluated().__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        return self._evaluated().__cuda_array_interface__


def _fill(node, backend, op, args, attrs, shape, dtype):
    """``OpTreeNode.__init__``: the fields of any node."""
    for a in args:
        if _unsettled(a):
            args = _settled(args)
            break
    node.backend, node.op, node.attrs, node.dtype = backend, op, attrs, dtype
    node.operand_type, node.value, node.args, node.shape = dtype, None, args, shape
    node.has_gemm = op in _PRODUCTS or _holds_product(args)
    key = [op, attrs if op != "rand" else (), dtype]
    for a in args:
        operand = a
        key.append(operand.sig)
    node.sig = structure(tuple(key))


def new_node(backend, op, args, attrs, shape, dtype):
    """``OpTreeNode(backend, op, args, attrs, shape, dtype)`` for ``args``
    and ``shape`` that are tuples already, without the class call's
    argument handling (a product's node is built on every call)."""
    node = OpTreeNode.__new__(OpTreeNode)
    _fill(node, backend, op, args, attrs, shape, dtype)
    return node


def _holds_product(args):
    """True when one of the operands ``args`` is a tree holding a matrix
    product or a convolution."""
    for a in args:
        if type(a) is OpTreeNode:
            node = a
            if node.has_gemm:
                return True
    return False


def _new_node(backend, op, args, shape, dtype, sig, has_gemm):
    """A node of the fast paths (:func:`_binary_node`, :func:`_unary_node`):
    no attributes, its operands settled already."""
    node = OpTreeNode.__new__(OpTreeNode)
    node.backend, node.op, node.attrs, node.dtype, node.operand_type = backend, op, (), dtype, dtype
    node.args, node.shape, node.sig, node.value, node.has_gemm = args, shape, sig, None, has_gemm
    return node


def _settled(args):
    """Operands with each evaluated lazy array replaced by its kept value."""
    return tuple([settled(a) for a in args])


def settled(value):
    """An operand as a tree reads it: an evaluated lazy array's kept value, else itself."""
    return value.value if _unsettled(value) else value


def _unsettled(value):
    """True for an evaluated lazy array (a tree reads its kept value instead)."""
    if type(value) is OpTreeNode:
        node = value
        return node.value is not None
    return False


def _short(arg):
    if isinstance(arg, OpTreeNode):
        return arg.describe()
    return f"<{type(arg).__name__} {shapes.shape_str(arg.shape)} {arg.dtype}>"


def _attrs(attrs):
    return ", ".join(map(str, attrs)) if attrs else ""


def operand_type(arg):
    """Dtype (or weak Python type) that type resolution sees for an operand."""
    return arg.operand_type


def apply(backend, name, args, table=None):
    """:func:`elementwise` of a factory function's operands (``ng.sqrt(A)``,
    ``ng.maximum(A, 0)``): this factory's tensors and trees pass as they
    are, Python numbers become scalars, anything else goes through
    ``backend.operand`` (numpy scalars; other factories' arrays refused).
    ``table``: the op's signature table, where the caller has it."""
    if len(args) == 2:  # the common case, without the generic tuple rebuilding
        a, b = args
        if not owned(backend, a) or not owned(backend, b):
            args = (_operand(backend, a), _operand(backend, b))
        return _binary_node(backend, name, args, table)
    for v in args:
        if not owned(backend, v):
            args = tuple([_operand(backend, v) for v in args])
            break
    if len(args) == 1 and type(args[0]) is not Scalar:
        return _unary_node(backend, name, args, table)
    return elementwise(backend, name, args)


def owned(backend, value):
    """True for a tensor or tree of ``backend`` (a C field read where compiled)."""
    if isinstance(value, Operand):
        operand = value
        return operand.backend is backend
    return False


def _operand(backend, value):
    """``value`` as an operand of ``backend``'s trees (see :func:`apply`)."""
    if owned(backend, value):
        return value
    if plain_scalar(value):
        return python_scalar(value)
    return backend.operand(value)


def elementwise(backend, name, args):
    """Build an elementwise node, checking shapes and dtypes numpy's way."""
    if len(args) == 2:
        return _binary_node(backend, name, args)
    if len(args) == 1 and type(args[0]) is not Scalar:
        return _unary_node(backend, name, args)
    shape = args[0].shape if len(args) == 1 else _common_shape(args)
    if name == "where":
        dtype = ops.result_type(*[a.operand_type for a in args[1:]])
        # numpy's where wraps a Python int that its result dtype cannot hold
        # (np.where(c, int8, 300) stores 44); we raise NEP 50's OverflowError
        for a in args[1:]:
            if type(a) is Scalar and a.weak_type is int and dtype.kind in "iu":
                dtypes.check_weak_int(a.value, dtype)
    else:
        loop, dtype = ops.resolve(name, tuple([a.operand_type for a in args]))
        if Scalar in map(type, args):
            exact = check_scalars(name, args, loop)
            if exact is not None:
                return elementwise(backend, *exact)
    return OpTreeNode(backend, name, args, (), shape, dtype)


def _binary_node(backend, name, args, table=None):
    """:func:`elementwise` of two operands, the hot path of expression
    building: two dictionary probes by the operands' signatures (the
    first's, then the second's) give the node's id, shape and dtype;
    broadcasting and type resolution run once per structure
    (:func:`_binary_entry`).  ``table``: the op's
    :func:`~gpuarray.core.signatures.binary_table`, where the caller has it."""
    if _unsettled(args[0]) or _unsettled(args[1]):
        args = _settled(args)
    x, y = args
    entry = None
    if table is None:
        table = binary_table(name)
    partners = table.get(x.sig)
    if partners is not None:
        entry = partners.get(y.sig)
    if entry is None:
        entry = _binary_entry(name, x, y, table)
    sig, shape, dtype, loop, floats, has_gemm = entry
    # NEP 50's rules concern Python ints and powers only: float scalars skip them
    if floats is not None and (name == "power" or not float_loop_ints(args, floats)):
        exact = check_scalars(name, args, loop)
        if exact is not None:
            return elementwise(backend, *exact)
    return _new_node(backend, name, args, shape, dtype, sig, has_gemm)


def _binary_entry(name, x, y, table):
    """What :func:`_binary_node` keeps in ``table`` for two operands'
    structure: ``(sig, shape, dtype, loop, floats, has_gemm)``.  ``floats``
    is None where NEP 50's scalar rules have nothing to check (no Python int
    or power beside a scalar), else whether each loop dtype is a float or
    complex one (:func:`float_loop_ints`).  Raises numpy's errors (shapes
    that do not broadcast, types with no loop); those are not kept."""
    shape = _common_shape((x, y))
    a_type, b_type = x.operand_type, y.operand_type
    loop, dtype = ops.resolve(name, (a_type, b_type))
    floats = None
    if (type(x) is Scalar or type(y) is Scalar) and (
            name == "power" or a_type is int or b_type is int):
        floats = tuple([t.kind in "fc" for t in loop])
    entry = (new_structure_sig(), shape, dtype, loop, floats, _holds_product((x, y)))
    keep_binary(table, x.sig, y.sig, entry)
    return entry


def _unary_node(backend, name, args, table=None):
    """:func:`elementwise` of one tensor or tree operand (no broadcasting,
    no scalar for NEP 50's rules): one probe as :func:`_binary_node`'s, in
    ``table`` where the caller has the op's."""
    x = settled(args[0])
    if table is None:
        table = unary_table(name)
    entry = table.get(x.sig)
    if entry is None:
        entry = (new_structure_sig(), ops.resolve(name, (x.operand_type,))[1],
                 _holds_product((x,)))
        keep(table, x.sig, entry)
    return _new_node(backend, name, (x,), x.shape, entry[1], entry[0], entry[2])


def _common_shape(args):
    """Broadcast shape of the operands; scalars and equal shapes take a shortcut."""
    shape = None
    for a in args:
        if a.shape == () and type(a) is Scalar:
            continue
        if shape is None:
            shape = a.shape
        elif a.shape != shape:
            return shapes.broadcast_shapes(*(a.shape for a in args))
    return () if shape is None else shape


def reduction(backend, name, arg, axes):
    """Build a reduction node over ``axes`` (keepdims shape)."""
    if 0 in arg.shape and name not in ("sum", "prod", "any", "all"):
        if any(arg.shape[a] == 0 for a in axes):
            what = {"max": "maximum", "min": "minimum"}.get(name)
            if what:
                raise ValueError(f"zero-size array to reduction operation {what} which has no identity")
            raise ValueError(f"attempt to get {name} of an empty sequence")
    shape = tuple(1 if i in axes else d for i, d in enumerate(arg.shape))
    dtype = ops.reduction_dtype(name, arg.dtype)
    return OpTreeNode(backend, name, (arg,), tuple(axes), shape, dtype)


def astype(backend, arg, dtype):
    """Build a cast node (complex to real keeps the real part, with numpy's warning)."""
    if arg.dtype.kind == "c" and dtype.kind != "c":
        dtypes.warn_complex_cast()
    return OpTreeNode(backend, "astype", (arg,), (dtype,), arg.shape, dtype)


def squeeze(backend, arg, shape):
    """View a keepdims reduction result with its reduced axes dropped."""
    return OpTreeNode(backend, "squeeze", (arg,), (tuple(shape),), shape, arg.dtype)


def rand(backend):
    """A uniform [0, 1) float32 draw, broadcast over whatever it meets."""
    return OpTreeNode(backend, "rand", (), (next(_rand_serial),), (), np.dtype(np.float32))


def leaves(tree):
    """The tensors and scalars of a tree (a leaf: itself), in the order
    dispatch meets them: depth first, operands left to right."""
    found, pending = [], [tree]
    while pending:
        node = pending.pop()
        if type(node) is OpTreeNode:
            pending.extend(reversed(node.args))
        else:
            found.append(node)
    return found


def walk(node, seen=None):
    """Yield every node and leaf of a tree once, children before parents."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    for arg in getattr(node, "args", ()):
        yield from walk(arg, seen)
    yield node

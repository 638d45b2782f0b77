"""What every operand of an op-tree has: the fields that type resolution,
broadcasting and dispatch read.

In: nothing; tensors and op-tree nodes (through
:class:`~gpuarray.core.arraylike.ArrayLike`) and scalars
(:class:`~gpuarray.core.scalars.Scalar`) derive from :class:`Operand` and
set its fields.  Out: the base class.

Why a base of its own: building ``A + B * 2`` reads each operand's shape,
the dtype numpy's type resolution sees and its signature, whatever kind of
operand it is.  Compiled (``gpuarray/compiled.py``), the fields are C slots
at one place in every operand's struct, so that code reads them without an
attribute lookup once it knows it holds an Operand.
"""


class Operand:
    """Base of tensors, op-tree nodes and scalars.

    Attributes
    ----------
    backend : factory or None
        The factory owning the operand; None for a scalar.
    shape : tuple of int
        () for a scalar.
    dtype : numpy.dtype
    operand_type : numpy.dtype or type
        What numpy's type resolution sees: the dtype, or a weakly typed
        scalar's Python type (``int``, ``float``, ``complex``).
    sig : int
        Structural signature: what the operand contributes to an
        assignment's recipe key (:mod:`gpuarray.fusion.dispatch`); layout
        and dtype, never an address or a scalar's value.  An int naming a
        tensor's layout, a scalar's type or a node's structure
        (:mod:`~gpuarray.core.signatures`); a tree holding a matrix product
        or a convolution has one too (its node's ``has_gemm`` says so).
    """

    __slots__ = ()

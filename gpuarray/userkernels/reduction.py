"""``ng.ReductionKernel``: a CuPy-style reduction that fuses.

In: CuPy's arguments -- input and output parameter strings (one output),
``map_expr`` (the value each element contributes, an expression of the
inputs), ``reduce_expr`` (two values ``a`` and ``b`` combined; it must be
associative and commutative, as CuPy requires, since the order of the
combination is the GPU's), ``post_map_expr`` (the output from the reduced
value ``a``), ``identity`` (a C expression) and ``reduce_type`` (the type
of ``a`` and ``b``; default the output's) -- and at each call the operands,
``axis``, ``keepdims`` and ``out``.  Out: a lazy op-tree -- the map, the
user's reduction and the post-map, three nodes the fusion compiler turns
into one kernel with the rest of the expression (a long reduction splits
into partials as the built-in ones do) -- or ``out`` evaluated.

A kernel with ``raw`` parameters, or whose map or post map uses CuPy's
indices (``_i``, ``_j``, ``_J``, ``_in_ind``, ``_out_ind``), runs as a
kernel of its own at the call, with CuPy's rules
(:mod:`.indexed_reduction`); on the CPU factory every call runs at once,
as C++ compiled for the host (:mod:`gpuarray.userkernels.host`).

The combiner is registered in the op table's user reductions
(:data:`gpuarray.core.ops.USER_REDUCTIONS`) under a name made from its code
and types.  Code is compiled at the first call with new dtypes, so errors
are raised there with the line within the user's expression.
"""
import hashlib
from dataclasses import dataclass

from ..core import dtypes, ops, optree, shapes
from . import host, indexed_reduction
from . import params as parsing
from .elementwise import GENERATED_LINE, ElementwiseKernel, UserFunction, check_source


@dataclass(frozen=True)
class UserReduction:
    """A user's combiner at one type: ``a`` and ``b`` -> ``reduce_expr``."""

    name: str
    reduce_expr: str
    identity: str
    ctype: str
    typedefs: tuple

    @property
    def op(self):
        """The op-tree name of this reduction: the kernel's, made unique by code and types."""
        return f"ureduce_{self.name}_{hashlib.sha1(repr(self).encode()).hexdigest()[:10]}"

    @property
    def c_name(self):
        """The device function combining two values."""
        return "ga_" + self.op

    @property
    def identity_c(self):
        """The identity as a C expression of the reduce type."""
        return f"(({self.ctype})({self.identity}))"

    def definition(self):
        """The combiner's CUDA C; ``#line`` numbers the user's expression from 1."""
        typedefs = "".join(f"typedef {c} {p}; " for p, c in self.typedefs)
        return (f"__device__ __forceinline__ {self.ctype} {self.c_name}({self.ctype} a, "
                f"{self.ctype} b) {{\n  {typedefs}typedef {self.ctype} _type_reduce;\n"
                f'#line 1 "{self.name}"\nreturn ({self.reduce_expr});\n}}\n{GENERATED_LINE}\n')

    def __repr__(self):
        return f"UserReduction({self.name!r}, {self.reduce_expr!r}, {self.identity!r}, {self.ctype})"


class ReductionKernel(ElementwiseKernel):
    """A reduction in CuPy's syntax, bound to a factory (see the module's doc).

    Raises
    ------
    ValueError
        Malformed parameters or name, not exactly one output, or a missing
        expression or identity.
    """

    def __init__(self, backend, in_params, out_params, map_expr, reduce_expr, post_map_expr,
                 identity, name="reduce_kernel", reduce_type=None):
        super().__init__(backend, in_params, out_params, "", name)
        for what, text in (("map_expr", map_expr), ("reduce_expr", reduce_expr),
                           ("post_map_expr", post_map_expr), ("identity", identity)):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"ReductionKernel {name}: {what} must be a non-empty string")
        self.map_expr, self.reduce_expr = map_expr, reduce_expr
        self.post_map_expr, self.identity = post_map_expr, identity
        self.reduce_type = None if reduce_type is None else dtypes.as_dtype(reduce_type)
        #: runs unfused (:mod:`.indexed_reduction`): raw parameters, or CuPy's indices in the code
        self.indexed = (any(p.raw for p in self.in_params + (self.out_param,))
                        or indexed_reduction.uses_index(map_expr, post_map_expr))

    def __repr__(self):
        return f"<ReductionKernel {self.name}>"

    def __call__(self, *args, axis=None, keepdims=False, out=None):
        """The reduction of ``args`` over ``axis`` (lazy, fusing), or into ``out``;
        an indexed kernel, or any on the CPU factory, runs at once and
        returns a tensor.

        Raises
        ------
        TypeError
            A wrong number of arguments, operands that do not fit the
            parameters' types, or a scalar given to a ``raw`` parameter.
        ValueError
            Operands that do not broadcast, an ``out`` of the wrong shape;
            CuPy's: no non-raw array to decide the loop (indexed), a raw
            output without ``out``.
        NotImplementedError
            CuPy's "Illegal conditions": ``raw`` inputs with reduced axes
            that are not the leading ones.
        numpy.exceptions.AxisError
            An axis out of range.
        gpuarray.cuda.compiler.CompileError
            Code that does not compile (the compiler's message), or no
            host C++ compiler on the CPU factory.
        """
        operands, out = self._operands(args, out)
        if self.host or self.indexed:
            call = indexed_reduction.plan(self, operands, axis, keepdims, out)
            return host.run_reduction(call) if self.host else indexed_reduction.run(call)
        resolved, bound = parsing.bind(self.in_params, [a.operand_type for a in operands])
        out_dtype = parsing.output_dtype(self.out_param, bound)
        reduce_dtype = self.reduce_type or out_dtype
        shape = shapes.broadcast_shapes(*(a.shape for a in operands))
        axes = shapes.reduction_axes(axis, len(shape))
        typedefs = tuple(sorted((p, dtypes.compute_type(dt)) for p, dt in bound.items()))
        mapped = self._mapped(operands, resolved, reduce_dtype, typedefs, shape)
        node = self._reduced(mapped, axes, reduce_dtype, typedefs)
        node = self._post_mapped(node, reduce_dtype, out_dtype, typedefs)
        return self.backend._finish(self.backend._keepdims(node, mapped, axis, keepdims), out,
                                    "unsafe")

    def _mapped(self, operands, resolved, reduce_dtype, typedefs, shape):
        """The map node: each element's contribution, in the reduce type."""
        cast = tuple(a if not isinstance(a, optree.Expression) or a.dtype == dt
                     else self.backend.astype(a, dt) for a, dt in zip(operands, resolved))
        ctype = dtypes.compute_type(reduce_dtype)
        fn = UserFunction(f"{self.name}_map", f"_ga_mapped = ({self.map_expr});",
                          tuple(p.name for p in self.in_params),
                          tuple(dtypes.compute_type(dt) for dt in resolved), "_ga_mapped", ctype,
                          typedefs + (("_type_reduce", ctype),))
        self._check(fn)
        return optree.OpTreeNode(self.backend, "user", cast, (fn,), shape, reduce_dtype)

    def combiner(self, reduce_dtype, typedefs):
        """The :class:`UserReduction` of this kernel at ``reduce_dtype``."""
        return UserReduction(self.name, self.reduce_expr, self.identity,
                             dtypes.compute_type(reduce_dtype), typedefs)

    def _reduced(self, mapped, axes, reduce_dtype, typedefs):
        """The user's reduction of the mapped values over ``axes`` (keepdims shape)."""
        combiner = self.combiner(reduce_dtype, typedefs)
        ops.USER_REDUCTIONS.setdefault(combiner.op, combiner)
        kept = tuple(1 if i in axes else d for i, d in enumerate(mapped.shape))
        if not axes:  # numpy's reduction over no axes: each value on its own
            return mapped
        self._check(combiner)
        return optree.OpTreeNode(self.backend, combiner.op, (mapped,), axes, kept, reduce_dtype)

    def _post_mapped(self, node, reduce_dtype, out_dtype, typedefs):
        """The output from each reduced value ``a``."""
        fn = UserFunction(f"{self.name}_post", self.post_map_expr, ("a",),
                          (dtypes.compute_type(reduce_dtype),), self.out_param.name,
                          dtypes.compute_type(out_dtype),
                          typedefs + (("_type_reduce", dtypes.compute_type(reduce_dtype)),))
        self._check(fn)
        return optree.OpTreeNode(self.backend, "user", (node,), (fn,), node.shape, out_dtype)

    def _check(self, fn):
        """Compile ``fn`` alone at the first call that brings it."""
        if fn not in self._checked:
            check_source(fn, self.backend.arch)
            self._checked.add(fn)

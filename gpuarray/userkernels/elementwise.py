"""``ng.ElementwiseKernel``: a CuPy-style elementwise kernel that fuses.

In: CuPy's arguments -- input and output parameter strings
(:mod:`.params`), the C code of one element (``z = (x - y) * (x - y)``)
and a name -- and, at each call, the operands (tensors, op-trees, Python
or numpy scalars), optionally ``out`` and CuPy's ``size``.  Out: a lazy
op-tree node of op ``user`` whose attribute is a :class:`UserFunction`, so
the call fuses with the operations around it into one generated kernel
(the fusion compiler emits the function beside its own,
``gpuarray.fusion``), or ``out`` evaluated.

Operands broadcast as numpy's; each is converted to its parameter's dtype
(numpy's "same_kind" rule); a placeholder (``T``) takes the dtype of the
arrays bound to it; Python scalars take their parameter's type.  float16,
bfloat16 and float8 parameters are ``float`` in the code, as everywhere in
the fused kernels, and the output is rounded when stored.  The output
parameter is write-only (it starts undefined).  The code is compiled when
a call first meets a new set of dtypes, so a syntax error is raised at the
call with the compiler's message, its line numbered within the code.

A kernel whose code uses CuPy's loop index ``i`` or ``_ind.size()``, or
which has ``raw`` parameters, cannot fuse: its element depends on the
whole loop.  Such a kernel -- and any kernel called with ``size=`` -- runs
as a kernel of its own, at the call, with CuPy's semantics
(:mod:`.indexed`); its result is a tensor, an operand like any other.

On the CPU factory every call runs at once, the same code compiled as C++
for the host (:mod:`gpuarray.userkernels.host`), with the same rules and values.
"""
import hashlib
import re
from dataclasses import dataclass

from ..core import dtypes, optree, shapes
from ..core.optree import Expression
from ..cuda import compiler
from ..fusion import generate
from . import host, indexed
from . import params as parsing
from .indexed_source import GENERATED_LINE

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class UserFunction:
    """One elementwise user operation at one set of dtypes, as a device function.

    Part of the fused kernels' cache key: the code and the C types are
    structure, so equal functions share compiled kernels.
    """

    name: str
    operation: str
    in_names: tuple
    in_ctypes: tuple
    out_name: str
    out_ctype: str
    typedefs: tuple

    @property
    def c_name(self):
        """The device function's name: the kernel's, made unique by its code and types."""
        digest = hashlib.sha1(repr(self).encode()).hexdigest()[:10]
        return f"ga_user_{self.name}_{digest}"

    def definition(self):
        """The device function's CUDA C; ``#line`` numbers the user's code from 1."""
        typedefs = "".join(f"typedef {c} {p}; " for p, c in self.typedefs)
        args = ", ".join(f"{c} {n}" for c, n in zip(self.in_ctypes, self.in_names))
        return (f"__device__ __forceinline__ {self.out_ctype} {self.c_name}({args}) {{\n"
                f"  {typedefs}{self.out_ctype} {self.out_name};\n"
                f'#line 1 "{self.name}"\n{self.operation}\n;\n'
                f"  return {self.out_name};\n}}\n{GENERATED_LINE}\n")

    def __repr__(self):
        return f"user:{self.name}"


class ElementwiseKernel:
    """An elementwise kernel in CuPy's syntax, bound to a factory.

    Parameters
    ----------
    backend : gpuarray.GPU or gpuarray.CPU
        The factory whose tensors it runs on.
    in_params, out_params : str
        ``"float32 x, T y"``: ``[type] [name]`` items; one output.
    operation : str
        C code computing the output parameter from the inputs, per element;
        it may use CuPy's ``i`` and ``_ind.size()`` and index ``raw``
        parameters (the kernel then runs unfused, see the module's doc).
    name : str
        A C identifier naming the kernel.

    Raises
    ------
    ValueError
        Malformed parameters or name, not exactly one output, or a
        parameter named ``i`` (CuPy's reserved index).
    """

    def __init__(self, backend, in_params, out_params, operation, name="kernel"):
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ValueError(f"kernel name must be a C identifier, not {name!r}")
        if not isinstance(operation, str):
            raise TypeError(f"operation must be a string, not {type(operation).__name__}")
        self.backend, self.name, self.operation = backend, name, operation
        self.in_params = parsing.parse(in_params, "in_params")
        outs = parsing.parse(out_params, "out_params")
        if len(outs) != 1:
            raise ValueError(f"ElementwiseKernel {name}: exactly one output parameter is "
                             f"supported, not {len(outs)}")
        if outs[0].name in {p.name for p in self.in_params}:
            raise ValueError(f"Duplicate parameter name: {outs[0].name}")
        if "i" in {p.name for p in self.in_params + outs}:
            raise ValueError("Can not use 'i' as a parameter name")
        self.out_param = outs[0]
        #: runs unfused (indexed): raw parameters, or code using i or _ind
        self.indexed = any(p.raw for p in self.in_params + outs) or indexed.uses_index(operation)
        #: the CPU factory's kernel: C++ compiled for the host (:mod:`gpuarray.userkernels.host`)
        self.host = getattr(backend, "arch", None) is None
        self._checked = set()
        self._indexed = {}  # spec -> compiled kernel (GPU: and its argument format)

    def __repr__(self):
        return f"<ElementwiseKernel {self.name}>"

    def __call__(self, *args, out=None, size=None):
        """The kernel over ``args`` (lazy, fusing), or evaluated into ``out``.

        ``out`` may also be passed as the last positional argument, as CuPy's.
        An indexed kernel (``raw`` parameters, ``i``, ``_ind``), or any
        kernel called with ``size``, runs at once and returns a tensor.

        Parameters
        ----------
        *args
            The operands, then optionally ``out``.
        out : Tensor, optional
        size : int, optional
            CuPy's: the number of elements of the loop (``_ind.size()``),
            for calls whose arrays are all ``raw``.

        Raises
        ------
        TypeError
            A wrong number of arguments, operands that do not fit the
            parameters' types, or a scalar given to a ``raw`` parameter.
        ValueError
            Operands that do not broadcast, an ``out`` of another shape,
            ``size`` given with a non-raw array, or no ``size`` where only
            raw arrays (and scalars) are given (CuPy's "Loop size is
            undecided.").
        gpuarray.cuda.compiler.CompileError
            Code that does not compile (the compiler's message), or no
            host C++ compiler on the CPU factory.
        """
        operands, out = self._operands(args, out)
        if self.host:
            return host.run_elementwise(self, operands, out, size)
        if self.indexed or size is not None:
            return indexed.run(self, operands, out, size)
        fn, cast, out_dtype = self._function(operands)
        shape = shapes.broadcast_shapes(*(a.shape for a in cast))
        node = optree.OpTreeNode(self.backend, "user", cast, (fn,), shape, out_dtype)
        return self.backend._finish(node, out)

    def _operands(self, args, out):
        """A call's operands, and ``out``, which CuPy also takes as the last
        positional argument (TypeError for a wrong count, CuPy's message)."""
        n = len(self.in_params)
        if len(args) == n + 1 and out is None:
            args, out = args[:n], args[n]
        if len(args) != n:
            raise TypeError(f"Wrong number of arguments for {self.name!r}. "
                            f"It must be either {n} or {n + 1} (with outputs), but given {len(args)}.")
        return self.backend.operands(args), out

    def _function(self, operands):
        """The UserFunction for these operands' dtypes, the operands cast to
        them, and the output dtype."""
        types = [a.operand_type for a in operands]
        resolved, bound = parsing.bind(self.in_params, types)
        out_dtype = parsing.output_dtype(self.out_param, bound)
        cast = tuple(a if not isinstance(a, Expression) or a.dtype == dt
                     else self.backend.astype(a, dt) for a, dt in zip(operands, resolved))
        fn = UserFunction(
            self.name, self.operation, tuple(p.name for p in self.in_params),
            tuple(dtypes.compute_type(dt) for dt in resolved), self.out_param.name,
            dtypes.compute_type(out_dtype),
            tuple(sorted((p, dtypes.compute_type(dt)) for p, dt in bound.items())))
        if fn not in self._checked:
            check_source(fn, self.backend.arch)
            self._checked.add(fn)
        return fn, cast, out_dtype


def check_source(fn, arch):
    """Compile a user function (or combiner) alone, so that bad code raises at
    the call that brought it rather than when its tree is evaluated."""
    compiler.compile_source('#include "prelude.cuh"\n' + fn.definition(), arch, generate.HEADERS)

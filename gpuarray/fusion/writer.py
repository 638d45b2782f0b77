"""What every fused-kernel writer shares: signature, values, offsets, stores.

In: a :class:`gpuarray.fusion.plan.Program` and a
:class:`gpuarray.fusion.layout.Layout`.  Out: a :class:`KernelWriter`
holding the kernel's parameter list (and the matching pycuda argument
format) and the helpers the mode writers use to emit C lines: the value
of each instruction, element offsets over collapsed dimensions, and the
final rounded store.  Nothing here depends on sizes, pointers or scalar
values: those are kernel arguments, so one source serves every shape of
the same layout class.

Kernel arguments, in order: out pointer, leaf pointers, outer sizes, inner
sizes, the strides (in elements) of out then of each leaf over the outer
and inner dimensions, scalars, the replay counter's address, seed, call
counter, rounding bits, and threads per row.
"""
from ..core import dtypes, ops

_IDENTITY = {
    "sum": "0", "prod": "1", "any": "false", "all": "true",
}
#: suffix of the prelude's functions working in a storage format's own
#: units (nextafter, spacing, the rounding of an explicit astype)
_STORAGE_SUFFIX = {"float16": "_half", "bfloat16": "_bf16", "float8_e4m3fn": "_fp8e4m3",
                   "float8_e5m2": "_fp8e5m2"}
#: exponent of the smallest normal value of the 8-bit floats, which their
#: stochastic rounding (ga_stochastic_round8) takes
_FLOAT8_EMIN = {"float8_e4m3fn": -6, "float8_e5m2": -14}
#: pycuda format of each scalar argument type; a complex scalar is one C
#: parameter (a ga_complex128, aligned as a double) packed as two doubles
_FORMAT = {"double": "d", "unsigned long long": "Q", "long long": "q", "bool": "q",
           "ga_complex128": "dd"}


class KernelWriter:
    """Kernel signature, values, offsets and stores of one (program, layout).

    The mode writers (:mod:`~gpuarray.fusion.elementwise`,
    :mod:`~gpuarray.fusion.reduce`) append the body to ``lines`` using
    these helpers.
    """

    def __init__(self, program, layout):
        self.p, self.lay = program, layout
        self.nleaves = len(program.leaf_types)
        self.lines = []
        self.vector_scope = False
        self.stochastic = False

    # -- signature --------------------------------------------------------
    def params(self):
        """Kernel parameter declarations and the matching pycuda format."""
        p, lay = self.p, self.lay
        out = [f"{p.out_type}* __restrict__ out"]
        out += [f"const {t}* __restrict__ p{k}" for k, t in enumerate(p.leaf_types)]
        dims = [f"n_o{d}" for d in range(lay.n_outer)] + [f"n_i{d}" for d in range(lay.n_inner)]
        for name in ["out"] + [f"{k}" for k in range(self.nleaves)]:
            dims += [f"so{name}_{d}" for d in range(lay.n_outer)]
            dims += [f"si{name}_{d}" for d in range(lay.n_inner)]
        out += [f"ga_idx {d}" for d in dims]
        out += [f"{t} s{k}" if t != "bool" else f"long long s{k}"
                for k, t in enumerate(p.scalar_types)]
        out += ["const unsigned long long* __restrict__ replays", "unsigned long long seed",
                "unsigned long long call", "long long nbits", "long long tpr"]
        fmt = "P" * (1 + self.nleaves) + ("q" if lay.wide else "i") * len(dims)
        fmt += "".join(_FORMAT[t] for t in p.scalar_types) + "PQQqq"
        return out, fmt

    # -- values -------------------------------------------------------------
    def value(self, i, index):
        """C expression computing instruction ``i`` from earlier variables."""
        ins = self.p.instrs[i]
        if ins.op == "load" and ins.level == "elem" and self.lay.cache:
            return f"x{ins.arg}[c]"
        if ins.op == "load":
            return f"ga_value<{ins.ctype}>({self.element(ins.arg, ins.level)})"
        if ins.op == "scalar":
            return f"s{ins.arg}"
        if ins.op == "rand":
            return f"ga_uniform(ga_key(seed, replays), {index}, {ins.arg}u, (unsigned)call)"
        args = [f"({t})v{a}" for t, a in zip(ins.in_ctypes, ins.args)]
        if ins.op == "astype":
            return _cast(args[0], ins.dtype, ins.ctype)
        if ins.op == "where":
            return f"({args[0]} ? {args[1]} : {args[2]})"
        if ins.op == "user":
            return f"({ins.ctype}){ins.arg.c_name}({', '.join(args)})"
        if ins.op in ops.STORAGE_PRECISION and ins.dtype in _STORAGE_SUFFIX:
            return f"({ins.ctype})ga_{ins.op}{_STORAGE_SUFFIX[ins.dtype]}({', '.join(args)})"
        return f"({ins.ctype})ga_{ins.op}({', '.join(args)})"

    def element(self, leaf, level):
        """The stored element of ``leaf`` at the current position."""
        if self.vector_scope:
            return f"p{leaf}[0]" if leaf in self.lay.bcast_leaves else f"w{leaf}.v[j]"
        return f"p{leaf}[o{leaf}]" if level == "row" else f"p{leaf}[o{leaf} + i{leaf}]"

    def emit(self, indices, index, indent):
        """Declare and compute the instructions ``indices`` in order."""
        for i in indices:
            ins = self.p.instrs[i]
            self.lines.append(f"{indent}{ins.ctype} v{i} = {self.value(i, index)};")

    def needed_elem(self, roots):
        """Elementwise-level instructions the ``roots`` depend on, in order."""
        need, stack = set(), list(roots)
        while stack:
            i = stack.pop()
            ins = self.p.instrs[i]
            if ins.level == "row" or i in need:
                continue
            need.add(i)
            stack.extend(ins.args)
        return sorted(need)

    # -- offsets --------------------------------------------------------------
    def decompose(self, var, kind, ndim, operands, indent):
        """Offsets of ``operands`` at linear index ``var`` over outer/inner dims."""
        lines = [f"{indent}ga_idx r_{kind} = {var};"]
        for name in operands:
            lines.append(f"{indent}ga_idx {kind}{name} = 0;")
        for d in reversed(range(ndim)):
            idx = f"r_{kind}" if d == 0 else f"(r_{kind} % n_{kind}{d})"
            lines.append(f"{indent}{{ ga_idx x = {idx};")
            for name in operands:
                lines.append(f"{indent}  {kind}{name} += x * s{kind}{name}_{d};")
            if d:
                lines.append(f"{indent}  r_{kind} /= n_{kind}{d}; }}")
            else:
                lines.append(f"{indent}}}")
        return lines

    def store(self, index, indent, target):
        """Assign the root value to the lvalue ``target``, rounding as asked."""
        conv = f"ga_conv<{self.p.out_type}>::to"
        value = f"({_compute(self.p.out_dtype)})v{self.p.root}"
        if self.stochastic:
            noise = f"ga_philox(ga_key(seed, replays), {index}, 0xFFFFFFFFu, (unsigned)call).x"
            if self.p.out_dtype in _FLOAT8_EMIN:
                emin = _FLOAT8_EMIN[self.p.out_dtype]
                value = f"ga_stochastic_round8((float){value}, {noise}, (int)nbits, {emin})"
            else:
                half = "true" if self.p.out_dtype == "float16" else "false"
                value = f"ga_stochastic_round((float){value}, {noise}, (int)nbits, {half})"
        self.lines.append(f"{indent}{target} = {conv}({value});")

    def rounding_variants(self, emit_stores):
        """Emit the storing code once, or, for float16/bfloat16/fp8 outputs, twice:
        with stochastic rounding under ``if (nbits)`` and with round-to-nearest
        otherwise.  A branch per element would keep Philox's registers live
        through the whole unrolled loop."""
        if not dtypes.is_low_precision(self.p.out_dtype):
            emit_stores()
            return
        self.lines.append("  if (nbits) {")
        self.stochastic = True
        emit_stores()
        self.lines.append("  } else {")
        self.stochastic = False
        emit_stores()
        self.lines.append("  }")


def _compute(dtype_name):
    return dtypes.compute_type(dtypes.from_name(dtype_name))


def _cast(arg, dtype, ctype):
    if dtype in _STORAGE_SUFFIX:  # rounded to the format, held in float
        return f"ga_round{_STORAGE_SUFFIX[dtype]}((float){arg})"
    if dtype == "bool":  # nonzero, complex values included
        return f"((bool){arg})"
    return f"({ctype}){arg}"


def identity(op, ctype):
    """Identity element of a reduction in C."""
    if op in ops.USER_REDUCTIONS:
        return f"({ctype}){ops.USER_REDUCTIONS[op].identity_c}"
    if op in _IDENTITY:
        return f"({ctype}){_IDENTITY[op]}"
    want_max = op in ("max", "argmax")
    return f"ga_lowest<{ctype}>()" if want_max else f"ga_highest<{ctype}>()"

"""Code generation: a kernel program and its layout class -> CUDA C source.

In: a :class:`gpuarray.plan.Program` and a :class:`Layout` (how many
collapsed outer/inner dimensions, vector width, cluster split).  Out: a
:class:`Source` with the CUDA C text, the kernel name and the pycuda
argument format.  Nothing here depends on sizes, pointers or scalar
values: those are kernel arguments, so one source serves every shape of
the same layout class.

Kernel arguments, in order: out pointer, leaf pointers, outer sizes, inner
sizes, the strides (in elements) of out then of each leaf over the outer
and inner dimensions, scalars, seed, call counter, rounding bits, and
threads per row.  The generated kernel for the reduction modes gives each
row (one point of the non-reduced axes) a group of ``tpr`` threads, or a
whole thread-block cluster when rows are few and long.
"""
from dataclasses import dataclass

from . import dtypes

_IDENTITY = {
    "sum": "0", "prod": "1", "any": "false", "all": "true",
}
_FORMAT = {"double": "d", "unsigned long long": "Q", "long long": "q", "bool": "q"}
CLUSTER = 8
#: threads of an elementwise block, and the most of a reduction block
EW_THREADS = 256
MAX_THREADS = 256
#: blocks per multiprocessor the register allocation must allow (2: at
#: most 128 registers a thread), so that the rows of one block stream in
#: while another reduces
MIN_BLOCKS = 2


@dataclass(frozen=True)
class Layout:
    """The layout class of a launch: part of the kernel cache key.

    ``n_outer``/``n_inner``: collapsed dimensions over the kept and the
    reduced axes; ``vec``: elements per vector access (0 = strided path);
    ``bcast_leaves``: leaves read as a single element in the vector path;
    ``cluster``: rows split across the blocks of a cluster; ``cache``: row
    elements each thread keeps in registers across reduction passes (0:
    none, the passes re-read memory); ``wide``: 64-bit index arithmetic,
    needed only when an index or offset can reach 2**31; ``columns``: 32
    neighbouring rows a block, for reductions along a strided axis.
    """

    n_outer: int
    n_inner: int
    vec: int = 0
    bcast_leaves: tuple = ()
    cluster: bool = False
    cache: int = 0
    wide: bool = False
    columns: bool = False


@dataclass(frozen=True)
class Source:
    """Generated kernel: CUDA C text, entry name and pycuda argument format."""

    text: str
    name: str
    arg_format: str


def generate(program, layout):
    """Generate the CUDA C source of ``program`` for ``layout``."""
    return _Generator(program, layout).source()


class _Generator:
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
        out += ["unsigned long long seed", "unsigned long long call", "long long nbits",
                "long long tpr"]
        fmt = "P" * (1 + self.nleaves) + ("q" if lay.wide else "i") * len(dims)
        fmt += "".join(_FORMAT[t] for t in p.scalar_types) + "QQqq"
        return out, fmt

    def source(self):
        """The whole kernel source."""
        params, fmt = self.params()
        name = "ga_kernel"
        body = self.ew_body() if self.p.mode == "ew" else self.reduction_body()
        bounds = f"__cluster_dims__({CLUSTER}, 1, 1) " if self.lay.cluster else ""
        threads = MAX_THREADS if self.p.mode != "ew" else EW_THREADS
        bounds += f"__launch_bounds__({threads}, {MIN_BLOCKS})"
        text = "\n".join([
            '#include "prelude.cuh"',
            f"typedef {'long long' if self.lay.wide else 'int'} ga_idx;",
            f'extern "C" __global__ void {bounds} {name}(',
            "    " + ",\n    ".join(params) + ") {",
            *body, "}", ""])
        return Source(text, name, fmt)

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
            return f"ga_uniform(seed, {index}, {ins.arg}u, (unsigned)call)"
        args = [f"({t})v{a}" for t, a in zip(ins.in_ctypes, ins.args)]
        if ins.op == "astype":
            return _cast(args[0], ins.dtype, ins.ctype)
        if ins.op == "where":
            return f"({args[0]} ? {args[1]} : {args[2]})"
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
            half = "true" if self.p.out_dtype == "float16" else "false"
            noise = f"ga_philox(seed, {index}, 0xFFFFFFFFu, (unsigned)call).x"
            value = f"ga_stochastic_round((float){value}, {noise}, (int)nbits, {half})"
        self.lines.append(f"{indent}{target} = {conv}({value});")

    def rounding_variants(self, emit_stores):
        """Emit the storing code once, or, for float16/bfloat16 outputs, twice:
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

    # -- elementwise kernels ----------------------------------------------------
    def ew_body(self):
        """Body of an elementwise kernel: a grid-stride loop over elements."""
        row_level = [i for i, ins in enumerate(self.p.instrs) if ins.level == "row"]
        self.emit(row_level, "0", "  ")
        self.lines += [
            "  const ga_idx nthreads = (ga_idx)gridDim.x * blockDim.x;",
            "  const ga_idx tid = (ga_idx)blockIdx.x * blockDim.x + threadIdx.x;",
            "  ga_idx n = 1;"]
        self.lines += [f"  n *= n_o{d};" for d in range(self.lay.n_outer)]
        self.rounding_variants(self.ew_loops)
        return self.lines

    def ew_loops(self):
        """The vector loop (where the layout allows), then the element loop."""
        if self.lay.vec:
            self.vector_loop()
            start = "(n / %d) * %d + tid" % (self.lay.vec, self.lay.vec)
        else:
            start = "tid"
        self.lines.append(f"  for (ga_idx e = {start}; e < n; e += nthreads) {{")
        operands = ["out"] + [str(k) for k in range(self.nleaves)]
        self.lines += self.decompose("e", "o", self.lay.n_outer, operands, "    ")
        self.lines += [f"    const ga_idx i{k} = 0;" for k in range(self.nleaves)]
        self.emit(self.needed_elem([self.p.root]), "e", "    ")
        self.store("e", "    ", "out[oout]")
        self.lines.append("  }")

    def vector_loop(self):
        """Loop over ``vec`` contiguous elements a thread, 16-byte accesses."""
        vec = self.lay.vec
        out_t = self.p.out_type
        self.lines += [f"  const ga_idx nv = n / {vec};",
                       "  for (ga_idx q = tid; q < nv; q += nthreads) {",
                       f"    const ga_idx e0 = q * {vec};"]
        for k, t in enumerate(self.p.leaf_types):
            if k in self.lay.bcast_leaves:
                continue
            self.lines.append(
                f"    const ga_vec<{t}, {vec}> w{k} = *(const ga_vec<{t}, {vec}>*)(p{k} + e0);")
        if self.nleaves == 0:
            self.lines.append("    (void)e0;")
        self.lines += [f"    ga_vec<{out_t}, {vec}> wout;",
                       "    #pragma unroll", f"    for (int j = 0; j < {vec}; ++j) {{",
                       "      const ga_idx e = e0 + j;"]
        self.vector_scope = True
        self.emit(self.needed_elem([self.p.root]), "e", "      ")
        self.vector_scope = False
        self.store("e", "      ", "wout.v[j]")
        self.lines += ["    }", f"    *(ga_vec<{out_t}, {vec}>*)(out + e0) = wout;", "  }"]

    # -- reduction kernels ---------------------------------------------------------
    def reduction_body(self):
        """Body of a reduce/bcast/partial kernel (see codegen_reduce)."""
        from .codegen_reduce import ReductionWriter
        return ReductionWriter(self).body()


def _compute(dtype_name):
    return dtypes.compute_type(dtype_name if dtype_name != "bfloat16" else dtypes.bfloat16)


def _cast(arg, dtype, ctype):
    if dtype == "float16":
        return f"ga_round_half((float){arg})"
    if dtype == "bfloat16":
        return f"ga_round_bf16((float){arg})"
    if dtype == "bool":
        return f"({arg} != 0)"
    return f"({ctype}){arg}"


def identity(op, ctype):
    """Identity element of a reduction in C."""
    if op in _IDENTITY:
        return f"({ctype}){_IDENTITY[op]}"
    want_max = op in ("max", "argmax")
    return f"ga_lowest<{ctype}>()" if want_max else f"ga_highest<{ctype}>()"

"""CUDA C of an indexed elementwise kernel: one that runs on its own, not fused.

In: an :class:`IndexedSpec` -- the user's code, and for each parameter
how the kernel reaches it (``raw``: the whole array, indexed by the code;
``flat``: one element per index, contiguous in the loop's order;
``strided``: one element per index through strides, broadcast dimensions
of stride 0; ``scalar``: a value passed by value) with its C types.  Out:
a :class:`~gpuarray.fusion.generate.Source` (text, kernel name, pycuda
argument format).  Nothing here knows sizes or addresses: the spec is
structure and C types only, so it is the compiled kernels' cache key.

In the code, ``i`` is the flat C-order index of the element in the loop
(``long long``) and ``_ind.size()`` the number of elements.  A raw
parameter ``x`` is a C-contiguous array: ``x[k]`` its element at flat
index ``k`` (a reference, as CuPy's; float16/bfloat16/float8 elements read as
``float`` and round to nearest when written) and ``x.size()`` its length.
"""
from dataclasses import dataclass

from ..fusion.generate import Source

#: after a user's code, the compiler's line numbers name the generated code again
GENERATED_LINE = '#line 1 "gpuarray generated"'
#: pycuda format of each C type a launch argument takes
FORMATS = {"double": "d", "long long": "q", "unsigned long long": "Q"}
#: storage types read and written through a float proxy, not a reference
PROXIED = ("ga_half", "ga_bf16", "ga_fp8e4m3", "ga_fp8e5m2")

#: device helpers of the indexed kernels (the prelude holds the conversions)
HELPERS = r"""
// One float16/bfloat16/float8 element of a raw array: reads as C, stores rounded.
template <class S, class C> struct ga_raw_ref {
    S* p;
    GA_D operator C() const { return ga_value<C>(*p); }
    GA_D ga_raw_ref& operator=(C v) { *p = ga_conv<S>::to(v); return *this; }
    GA_D ga_raw_ref& operator=(const ga_raw_ref& o) { return *this = (C)o; }
    GA_D ga_raw_ref& operator+=(C v) { return *this = (C)*this + v; }
    GA_D ga_raw_ref& operator-=(C v) { return *this = (C)*this - v; }
    GA_D ga_raw_ref& operator*=(C v) { return *this = (C)*this * v; }
    GA_D ga_raw_ref& operator/=(C v) { return *this = (C)*this / v; }
};
// A raw parameter: a C-contiguous array indexed by a flat C-order index.
template <class S, class C> struct ga_raw {
    S* data_;
    long long size_;
    GA_D ga_raw_ref<S, C> operator[](long long k) const { ga_raw_ref<S, C> r = {data_ + k}; return r; }
    GA_D long long size() const { return size_; }
};
template <class S> struct ga_raw<S, S> {
    S* data_;
    long long size_;
    GA_D S& operator[](long long k) const { return data_[k]; }
    GA_D long long size() const { return size_; }
};
// _ind: the loop, as CuPy's code sees it (_ind.size()).
struct ga_loop { long long size_; GA_D long long size() const { return size_; } };
template <int D> struct ga_dims { long long v[D]; };
"""


@dataclass(frozen=True)
class Slot:
    """How the kernel reaches one parameter.

    ``storage`` is the C type in memory (for a scalar: the C type it is
    passed as), ``ctype`` the C type the code sees.
    """

    name: str
    role: str
    storage: str
    ctype: str


@dataclass(frozen=True)
class IndexedSpec:
    """An indexed kernel at one set of types and operand layouts.

    ``ndim`` is the number of (collapsed) loop dimensions the strided
    operands are walked over, 0 when there are none.
    """

    name: str
    operation: str
    inputs: tuple
    output: Slot
    ndim: int
    typedefs: tuple


def raw_type(slot):
    """The C type of a raw parameter: its accessor over its storage."""
    view = slot.ctype if slot.storage in PROXIED else slot.storage
    return f"ga_raw<{slot.storage}, {view}>"


def generate(spec):
    """The CUDA C source of ``spec``, its kernel name and argument format."""
    params, fmt = _params(spec)
    name = f"ga_indexed_{spec.name}"
    typedefs = "".join(f"typedef {c} {p}; " for p, c in spec.typedefs)
    text = "\n".join([
        '#include "prelude.cuh"', HELPERS,
        f'extern "C" __global__ void __launch_bounds__(256) {name}(',
        "    " + ",\n    ".join(params) + ") {",
        f"  {typedefs}",
        "  const ga_loop _ind = {_ga_n};",
        "  for (long long _ga_k = blockIdx.x * (long long)blockDim.x + threadIdx.x; _ga_k < _ga_n;",
        "       _ga_k += (long long)gridDim.x * blockDim.x) {",
        "    const long long i = _ga_k;",
        "    (void)i; (void)_ind;  // code need not use them",
        *_offsets(spec), *_locals(spec),
        # the code in a block of its own: it may declare names of ours (even i)
        f'    {{\n#line 1 "{spec.name}"\n{spec.operation}\n;\n    }}\n{GENERATED_LINE}',
        *_store(spec.output),
        "  }", "}", ""])
    return Source(text, name, fmt)


def value_param(s):
    """(declaration, pycuda format) of a raw or scalar parameter ``s``; None for an array."""
    if s.role == "raw":
        return f"{raw_type(s)} {s.name}", "Pq"
    if s.role == "scalar":
        return f"{s.storage} _ga_s_{s.name}", FORMATS[s.storage]
    return None


def _params(spec):
    """Kernel parameter declarations and the matching pycuda format."""
    params, fmt = ["long long _ga_n"], "q"
    dims = f"ga_dims<{spec.ndim}>"
    if spec.ndim:
        params.append(f"{dims} _ga_shape")
        fmt += "q" * spec.ndim
    for s in spec.inputs + (spec.output,):
        value = value_param(s)
        if value is not None:
            params.append(value[0])
            fmt += value[1]
        elif s is spec.output:
            params.append(f"{s.storage}* __restrict__ _ga_out")
            fmt += "P"
        else:
            params.append(f"const {s.storage}* __restrict__ _ga_p_{s.name}")
            fmt += "P"
            if s.role == "strided":
                params.append(f"{dims} _ga_st_{s.name}")
                fmt += "q" * spec.ndim
    return params, fmt


def _offsets(spec):
    """Each strided operand's element offset, from the loop index unravelled in C order."""
    strided = [s.name for s in spec.inputs if s.role == "strided"]
    if not strided:
        return []
    steps = "".join(f" _ga_o_{n} += _ga_c * _ga_st_{n}.v[_ga_d];" for n in strided)
    return [f"    long long {', '.join(f'_ga_o_{n} = 0' for n in strided)};",
            "    long long _ga_r = _ga_k;",
            "    #pragma unroll",
            f"    for (int _ga_d = {spec.ndim - 1}; _ga_d >= 0; --_ga_d) {{",
            "      const long long _ga_c = _ga_r % _ga_shape.v[_ga_d];",
            f"      _ga_r /= _ga_shape.v[_ga_d];{steps}",
            "    }"]


def _locals(spec):
    """The element parameters as the code's variables; the output starts undefined."""
    lines = []
    for s in spec.inputs:
        if s.role == "scalar":
            lines.append(f"    {s.ctype} {s.name} = ({s.ctype})_ga_s_{s.name};")
        elif s.role != "raw":
            at = "_ga_k" if s.role == "flat" else f"_ga_o_{s.name}"
            lines.append(f"    {s.ctype} {s.name} = ga_value<{s.ctype}>(_ga_p_{s.name}[{at}]);")
    if spec.output.role != "raw":
        lines.append(f"    {spec.output.ctype} {spec.output.name};")
    return lines


def _store(out):
    """The output element's store (a raw output is written by the code itself)."""
    if out.role == "raw":
        return []
    return [f"    _ga_out[_ga_k] = ga_conv<{out.storage}>::to({out.name});"]

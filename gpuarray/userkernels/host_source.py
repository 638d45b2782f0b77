"""C++ of the user kernels the CPU factory runs: a loop around the user's code.

In: a :class:`HostElementwise` or :class:`HostReduction` spec -- the
user's code, and for each parameter how the loop reaches it (``raw``: the
whole C-contiguous array; ``strided``: one element per index through byte
strides, broadcast dimensions of stride 0; ``scalar``: a value) with its C
types.  Out: C++ text defining ``extern "C" void ga_host_kernel(const long
long* meta, void* const* pointers)``.  Specs hold structure and C types
only -- the number of dimensions, the sizes and the strides are read from
``meta`` at run time -- so one compiled library serves every shape.

``meta`` of an elementwise kernel: the number of elements, the number of
dimensions ``nd``, each raw parameter's size, the loop's shape (``nd``),
then each strided operand's byte strides (``nd`` each).  Of a reduction:
the numbers of output and of reduced elements, the numbers of kept and of
reduced dimensions, each raw parameter's size, the kept shape, the
reduced shape, then each strided operand's kept and reduced strides.
``pointers``: each input's data (a scalar's value), then the output's.

The code sees what it sees on the GPU (:mod:`.indexed_source`,
:mod:`.reduction_source`): ``i``, ``_ind.size()``, ``x[k]``, ``x.size()``;
a reduction's ``_i``, ``_j``, ``_J``, ``_in_ind.size()``,
``_out_ind.size()``; parameters in their compute types (``float`` for
float16, bfloat16 and the 8-bit floats, which the caller converts); and
:data:`PRELUDE`'s host names for CUDA's math (``sqrt``, ``expf``,
``min``, ``max``, ``rsqrtf``, ``__expf``, ``__float_as_int``...).
"""
from dataclasses import dataclass

from .indexed_source import GENERATED_LINE

#: what user code may name, as in CUDA device code
PRELUDE = r"""// gpuarray host prelude: CUDA's names for what a user kernel's code calls
#include <cmath>
#include <math.h>
#include <cstdio>
#include <cstring>
#include <type_traits>
#define __device__
#define __host__
#define __forceinline__ inline
#define GA_D inline
using std::abs; using std::fabs; using std::fmod; using std::remainder; using std::fma;
using std::fmax; using std::fmin; using std::fdim; using std::exp; using std::exp2;
using std::expm1; using std::log; using std::log2; using std::log10; using std::log1p;
using std::pow; using std::sqrt; using std::cbrt; using std::hypot; using std::sin;
using std::cos; using std::tan; using std::asin; using std::acos; using std::atan;
using std::atan2; using std::sinh; using std::cosh; using std::tanh; using std::asinh;
using std::acosh; using std::atanh; using std::erf; using std::erfc; using std::tgamma;
using std::lgamma; using std::ceil; using std::floor; using std::trunc; using std::round;
using std::rint; using std::nearbyint; using std::lround; using std::llround;
using std::copysign; using std::nextafter; using std::ldexp; using std::frexp;
using std::isnan; using std::isinf; using std::isfinite; using std::signbit;
// CUDA's min and max: any two arithmetic types, fmin/fmax for floating point
template <class A, class B> inline typename std::common_type<A, B>::type min(A a, B b) {
    typedef typename std::common_type<A, B>::type C;
    if constexpr (std::is_floating_point<C>::value) return std::fmin((C)a, (C)b);
    else return (C)b < (C)a ? (C)b : (C)a;
}
template <class A, class B> inline typename std::common_type<A, B>::type max(A a, B b) {
    typedef typename std::common_type<A, B>::type C;
    if constexpr (std::is_floating_point<C>::value) return std::fmax((C)a, (C)b);
    else return (C)a < (C)b ? (C)b : (C)a;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float ga_saturatef(float x) { return x != x ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f); }
template <class To, class From> inline To ga_bits(From v) { To t; std::memcpy(&t, &v, sizeof t); return t; }
template <class T> inline T ga_ldg(const T* p) { return *p; }
// CUDA's fast intrinsics, exact here; macros, since glibc declares some of these names
#define __expf expf
#define __exp10f(x) powf(10.0f, (x))
#define __logf logf
#define __log2f log2f
#define __log10f log10f
#define __sinf sinf
#define __cosf cosf
#define __tanf tanf
#define __powf powf
#define __fdividef(a, b) ((float)(a) / (float)(b))
#define __saturatef ga_saturatef
#define __float_as_int(x) ga_bits<int>((float)(x))
#define __float_as_uint(x) ga_bits<unsigned>((float)(x))
#define __int_as_float(x) ga_bits<float>((int)(x))
#define __uint_as_float(x) ga_bits<float>((unsigned)(x))
#define __double_as_longlong(x) ga_bits<long long>((double)(x))
#define __longlong_as_double(x) ga_bits<double>((long long)(x))
#define __popc(x) __builtin_popcount((unsigned)(x))
#define __popcll(x) __builtin_popcountll((unsigned long long)(x))
#define __clz(x) ((unsigned)(x) ? __builtin_clz((unsigned)(x)) : 32)
#define __clzll(x) ((unsigned long long)(x) ? __builtin_clzll((unsigned long long)(x)) : 64)
#define __ffs(x) __builtin_ffs((int)(x))
#define __ffsll(x) __builtin_ffsll((long long)(x))
#define __ldg ga_ldg
// A raw parameter: a C-contiguous array indexed by a flat C-order index.
template <class S> struct ga_raw {
    S* data_;
    long long size_;
    S& operator[](long long k) const { return data_[k]; }
    long long size() const { return size_; }
};
// _ind, _in_ind, _out_ind: a loop, as CuPy's code sees it (.size())
struct ga_loop { long long size_; long long size() const { return size_; } };
"""


@dataclass(frozen=True)
class HostElementwise:
    """An elementwise kernel on the host at one set of types and roles."""

    name: str
    operation: str
    inputs: tuple
    output: object
    typedefs: tuple


@dataclass(frozen=True)
class HostReduction:
    """A reduction on the host; ``combiner`` is its
    :class:`~gpuarray.userkernels.reduction.UserReduction`."""

    name: str
    map_expr: str
    post_map_expr: str
    combiner: object
    inputs: tuple
    output: object
    typedefs: tuple


def generate(spec):
    """The C++ source of ``spec``."""
    if isinstance(spec, HostReduction):
        return _reduction(spec)
    head = _head(spec, ["const long long _ga_n = _ga_m[0];",
                        "const int _ga_nd = (int)_ga_m[1];"], 2, "_ga_nd")
    out = spec.output
    return "\n".join([
        PRELUDE, 'extern "C" void ga_host_kernel(const long long* _ga_m, void* const* _ga_p) {',
        *head, "  const ga_loop _ind = {_ga_n};",
        "  const long long _ga_in = _ga_shape[_ga_nd - 1];",
        "  for (long long _ga_k0 = 0; _ga_k0 < _ga_n; _ga_k0 += _ga_in) {",
        *_walk(spec, "_ga_shape", "_ga_st_", "_ga_p_", "_ga_b_", "_ga_k0 / _ga_in", "_ga_nd - 2"),
        "    for (long long _ga_e = 0; _ga_e < _ga_in; ++_ga_e) {",
        "      const long long i = _ga_k0 + _ga_e;",
        "      (void)i; (void)_ind;  // code need not use them",
        *_locals(spec, "_ga_st_", "_ga_nd", "", True),
        *([] if out.role == "raw" else [f"      {out.ctype} {out.name};"]),
        # the code in a block of its own: it may declare names of ours (even i)
        f'      {{\n#line 1 "{spec.name}"\n{spec.operation}\n;\n      }}\n{GENERATED_LINE}',
        *([] if out.role == "raw" else [f"      _ga_out[i] = ({out.storage}){out.name};"]),
        "    }", "  }", "}", ""])


def _reduction(spec):
    head = _head(spec, ["const long long _ga_nout = _ga_m[0], _ga_nred = _ga_m[1];",
                        "const int _ga_ndo = (int)_ga_m[2], _ga_ndr = (int)_ga_m[3];"], 4,
                 "_ga_ndo + _ga_ndr")
    out = spec.output
    post = f'    {{\n#line 1 "{spec.name}_post"\n{spec.post_map_expr}\n;\n    }}\n{GENERATED_LINE}'
    return "\n".join([
        PRELUDE, spec.combiner.definition(),
        'extern "C" void ga_host_kernel(const long long* _ga_m, void* const* _ga_p) {',
        *head, f"  typedef {spec.combiner.ctype} _type_reduce;",
        # scalars are the whole kernel's, as CuPy's: the identity may name one
        *(f"  const {s.ctype} {s.name} = ({s.ctype})_ga_s_{s.name};"
          for s in spec.inputs if s.role == "scalar"),
        "  const long long* const _ga_rshape = _ga_shape + _ga_ndo;",
        *(f"  const long long* const _ga_sr_{s.name} = _ga_st_{s.name} + _ga_ndo;"
          for s in spec.inputs if s.role == "strided"),
        "  const ga_loop _in_ind = {_ga_nout * _ga_nred}, _out_ind = {_ga_nout};",
        "  (void)_in_ind; (void)_out_ind;",
        "  const long long _ga_rin = _ga_rshape[_ga_ndr - 1];",
        "  for (long long _i = 0; _i < _ga_nout; ++_i) {",
        *_walk(spec, "_ga_shape", "_ga_st_", "_ga_p_", "_ga_o_", "_i", "_ga_ndo - 1"),
        f"    _type_reduce _ga_acc = {spec.combiner.identity_c};",
        "    for (long long _ga_q = 0; _ga_q < _ga_nred; _ga_q += _ga_rin) {",
        *_walk(spec, "_ga_rshape", "_ga_sr_", "_ga_o_", "_ga_b_", "_ga_q / _ga_rin",
               "_ga_ndr - 2", "  "),
        "      for (long long _ga_e = 0; _ga_e < _ga_rin; ++_ga_e) {",
        "        const long long _J = _ga_q + _ga_e, _j = _J * _ga_nout + _i;",
        "        (void)_j;",
        *_locals(spec, "_ga_sr_", "_ga_ndr", "  ", False),
        f'        const _type_reduce _ga_a = (_type_reduce)(\n#line 1 "{spec.name}_map"\n'
        f"{spec.map_expr}\n);\n{GENERATED_LINE}",
        f"        _ga_acc = {spec.combiner.c_name}(_ga_acc, _ga_a);",
        "      }", "    }",
        "    _type_reduce a = _ga_acc;",
        *([post] if out.role == "raw" else
          [f"    {out.ctype} {out.name};", post, f"    _ga_out[_i] = ({out.storage}){out.name};"]),
        "  }", "}", ""])


def _head(spec, sizes, fixed, per_operand):
    """The kernel's first lines: sizes, typedefs, the parameters' pointers,
    strides and sizes (raw sizes follow the ``fixed`` leading values of
    ``meta``; each strided operand has ``per_operand`` strides)."""
    typedefs = "".join(f"typedef {c} {p}; " for p, c in spec.typedefs)
    raws = [s for s in spec.inputs + (spec.output,) if s.role == "raw"]
    lines = [*(f"  {line}" for line in sizes), f"  {typedefs}",
             f"  const long long* const _ga_shape = _ga_m + {fixed + len(raws)};"]
    strided = 0
    for k, s in enumerate(spec.inputs + (spec.output,)):
        if s.role == "raw":
            lines.append(f"  const ga_raw<{s.storage}> {s.name} = "
                         f"{{({s.storage}*)_ga_p[{k}], _ga_m[{fixed + raws.index(s)}]}};")
        elif s.role == "scalar":
            lines.append(f"  const {s.storage} _ga_s_{s.name} = *(const {s.storage}*)_ga_p[{k}];")
        elif s is spec.output:
            lines.append(f"  {s.storage}* const _ga_out = ({s.storage}*)_ga_p[{k}];")
        else:
            strided += 1
            lines += [f"  const char* const _ga_p_{s.name} = (const char*)_ga_p[{k}];",
                      f"  const long long* const _ga_st_{s.name} = "
                      f"_ga_shape + ({per_operand}) * {strided};"]
    return lines


def _walk(spec, shape, strides, base, var, index, top, indent=""):
    """Each strided operand's address at ``index`` unravelled in C order over
    dimensions ``top`` down to 0 of ``shape``, from the addresses ``base``."""
    names = [s.name for s in spec.inputs if s.role == "strided"]
    if not names:
        return []
    steps = "".join(f" {var}{n} += _ga_c * {strides}{n}[_ga_d];" for n in names)
    pad = "    " + indent
    return [f"{pad}const char {', '.join(f'*{var}{n} = {base}{n}' for n in names)};",
            f"{pad}long long _ga_r = {index};",
            f"{pad}for (int _ga_d = {top}; _ga_d >= 0; --_ga_d) {{",
            f"{pad}  const long long _ga_c = _ga_r % {shape}[_ga_d];",
            f"{pad}  _ga_r /= {shape}[_ga_d];{steps}",
            f"{pad}}}"]


def _locals(spec, strides, ndim, indent, scalars):
    """The element parameters as the code's variables (the last dimension
    walked here), and the ``scalars`` too, or not."""
    pad = "      " + indent
    lines = []
    for s in spec.inputs:
        if s.role == "scalar" and scalars:
            lines.append(f"{pad}{s.ctype} {s.name} = ({s.ctype})_ga_s_{s.name};")
        elif s.role == "strided":
            at = f"_ga_b_{s.name} + _ga_e * {strides}{s.name}[{ndim} - 1]"
            lines.append(f"{pad}{s.ctype} {s.name} = ({s.ctype})*(const {s.storage}*)({at});")
    return lines

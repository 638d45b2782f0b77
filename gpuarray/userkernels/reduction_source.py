"""CUDA C of an indexed reduction: a ReductionKernel that runs on its own, not fused.

In: a :class:`ReductionSpec` -- the user's expressions, the combiner, and
for each input how the kernel reaches it (``raw``: the whole array;
``strided``: one element per index through strides over the kept and the
reduced dimensions, broadcast ones of stride 0; ``scalar``: by value) with
its C types.  Out: a :class:`~gpuarray.fusion.generate.Source`.  The spec
is structure and C types only, never sizes or addresses: it is the
compiled kernels' cache key.

The kernel: each output element ``_i`` is reduced by a group of
``2**lanes`` threads of a block (a launch argument: few reduced elements,
many outputs a block).  Each thread folds the mapped values of the reduced
elements ``_J`` it strides over into its partial, starting from the
identity; the group's partials are combined in shared memory, and the
group's first thread applies ``post_map_expr``.  The order of the
combination is the GPU's, as for the fused reductions.
"""
from dataclasses import dataclass

from ..fusion.generate import Source
from .indexed_source import GENERATED_LINE, HELPERS, value_param

#: threads per block
BLOCK = 256


@dataclass(frozen=True)
class ReductionSpec:
    """An indexed reduction at one set of types and operand layouts.

    ``combiner`` is the :class:`~gpuarray.userkernels.reduction.UserReduction`
    of the reduce expression, identity and reduce type; ``ndo`` and
    ``ndr`` are the numbers of (collapsed) kept and reduced dimensions.
    """

    name: str
    map_expr: str
    post_map_expr: str
    combiner: object
    inputs: tuple
    output: object
    ndo: int
    ndr: int
    typedefs: tuple


def generate(spec):
    """The CUDA C source of ``spec``, its kernel name and argument format."""
    params, fmt = _params(spec)
    name = f"ga_ireduce_{spec.name}"
    combine = spec.combiner.c_name
    typedefs = "".join(f"typedef {c} {p}; " for p, c in spec.typedefs)
    text = "\n".join([
        '#include "prelude.cuh"', HELPERS, spec.combiner.definition(),
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}(',
        "    " + ",\n    ".join(params) + ") {",
        f"  {typedefs}typedef {spec.combiner.ctype} _type_reduce;",
        # scalars are the whole kernel's, as CuPy's: the identity may name one
        *(f"  const {s.ctype} {s.name} = ({s.ctype})_ga_s_{s.name};"
          for s in spec.inputs if s.role == "scalar"),
        f"  __shared__ __align__(16) unsigned char _ga_smem[{BLOCK} * sizeof(_type_reduce)];",
        "  _type_reduce* const _ga_part = reinterpret_cast<_type_reduce*>(_ga_smem);",
        "  const ga_loop _in_ind = {_ga_nout * _ga_nred}, _out_ind = {_ga_nout};",
        "  (void)_in_ind; (void)_out_ind;  // code need not use them",
        "  const int _ga_lanes = 1 << _ga_log2, _ga_lane = threadIdx.x & (_ga_lanes - 1);",
        "  const long long _ga_per_block = blockDim.x >> _ga_log2;",
        "  for (long long _ga_base = blockIdx.x * _ga_per_block; _ga_base < _ga_nout;",
        "       _ga_base += gridDim.x * _ga_per_block) {",
        "    const long long _i = _ga_base + (threadIdx.x >> _ga_log2);",
        f"    _type_reduce _ga_acc = {spec.combiner.identity_c};",
        "    if (_i < _ga_nout) {",
        *_offsets(spec, "oshape", "so", "_i", "long long ", "0", "      "),
        "      for (long long _J = _ga_lane; _J < _ga_nred; _J += _ga_lanes) {",
        "        const long long _j = _J * _ga_nout + _i;",
        "        (void)_j;",
        *_offsets(spec, "rshape", "sr", "_J", "long long ", "_ga_oo_{}", "        "),
        *_locals(spec),
        # the map in a scope of its own, as an expression of the reduce type
        f'        const _type_reduce _ga_a = (_type_reduce)(\n#line 1 "{spec.name}_map"\n'
        f"{spec.map_expr}\n);\n{GENERATED_LINE}",
        f"        _ga_acc = {combine}(_ga_acc, _ga_a);",
        "      }",
        "    }",
        "    _ga_part[threadIdx.x] = _ga_acc;",
        "    __syncthreads();",
        "    for (int _ga_w = _ga_lanes >> 1; _ga_w > 0; _ga_w >>= 1) {",
        "      if (_ga_lane < _ga_w)",
        f"        _ga_part[threadIdx.x] = {combine}(_ga_part[threadIdx.x], "
        "_ga_part[threadIdx.x + _ga_w]);",
        "      __syncthreads();",
        "    }",
        "    if (_ga_lane == 0 && _i < _ga_nout) {",
        "      _type_reduce a = _ga_part[threadIdx.x];",
        *_post(spec),
        "    }",
        "    __syncthreads();  // the partials are written again by the next outputs",
        "  }", "}", ""])
    return Source(text, name, fmt)


def _params(spec):
    """Kernel parameter declarations and the matching pycuda format."""
    kept, reduced = f"ga_dims<{spec.ndo}>", f"ga_dims<{spec.ndr}>"
    params = ["long long _ga_nout", "long long _ga_nred", "long long _ga_log2",
              f"{kept} _ga_oshape", f"{reduced} _ga_rshape"]
    fmt = "qqq" + "q" * (spec.ndo + spec.ndr)
    for s in spec.inputs:
        value = value_param(s)
        if value is not None:
            params.append(value[0])
            fmt += value[1]
        else:
            params += [f"const {s.storage}* __restrict__ _ga_p_{s.name}",
                       f"{kept} _ga_so_{s.name}", f"{reduced} _ga_sr_{s.name}"]
            fmt += "P" + "q" * (spec.ndo + spec.ndr)
    if spec.output.role == "raw":
        declaration, code = value_param(spec.output)
        params.append(declaration)
        fmt += code
    else:
        params.append(f"{spec.output.storage}* __restrict__ _ga_out")
        fmt += "P"
    return params, fmt


def _offsets(spec, shape, stride, index, decl, start, indent):
    """Each strided operand's element offset over one group of dimensions,
    from ``index`` unravelled in C order, starting at ``start``."""
    names = [s.name for s in spec.inputs if s.role == "strided"]
    if not names:
        return []
    var = "_ga_oo_" if stride == "so" else "_ga_o_"
    ndim = spec.ndo if stride == "so" else spec.ndr
    steps = "".join(f" {var}{n} += _ga_c * _ga_{stride}_{n}.v[_ga_d];" for n in names)
    return [f"{indent}{decl}{', '.join(f'{var}{n} = {start.format(n)}' for n in names)};",
            f"{indent}long long _ga_r = {index};",
            f"{indent}#pragma unroll",
            f"{indent}for (int _ga_d = {ndim - 1}; _ga_d >= 0; --_ga_d) {{",
            f"{indent}  const long long _ga_c = _ga_r % _ga_{shape}.v[_ga_d];",
            f"{indent}  _ga_r /= _ga_{shape}.v[_ga_d];{steps}",
            f"{indent}}}"]


def _locals(spec):
    """The array elements as the map's variables."""
    return [f"        const {s.ctype} {s.name} = ga_value<{s.ctype}>(_ga_p_{s.name}[_ga_o_{s.name}]);"
            for s in spec.inputs if s.role == "strided"]


def _post(spec):
    """``post_map_expr`` in a scope of its own; a non-raw output is then stored."""
    out = spec.output
    code = f'      {{\n#line 1 "{spec.name}_post"\n{spec.post_map_expr}\n;\n      }}\n{GENERATED_LINE}'
    if out.role == "raw":
        return [code]
    return [f"      {out.ctype} {out.name};", code,
            f"      _ga_out[_i] = ga_conv<{out.storage}>::to({out.name});"]

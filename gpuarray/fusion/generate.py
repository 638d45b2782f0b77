"""Code generation: a kernel program and its layout class -> CUDA C source.

In: a :class:`gpuarray.fusion.plan.Program` and a
:class:`gpuarray.fusion.layout.Layout` (how many collapsed outer/inner
dimensions, vector width, cluster split).  Out: a :class:`Source` with
the CUDA C text, the kernel name and the pycuda argument format.

The kernel's signature and value helpers come from
:mod:`~gpuarray.fusion.writer`; its body from the writer of the program's
mode: :mod:`~gpuarray.fusion.elementwise` for ``ew``,
:mod:`~gpuarray.fusion.reduce` for ``reduce``, ``bcast`` and ``partial``.
Every kernel includes the prelude (``prelude.cuh`` beside this module,
and the ``float8.cuh`` it includes): the device functions of the op table.
"""
from dataclasses import dataclass
from pathlib import Path

from ..core import ops
from .elementwise import ElementwiseWriter
from .layout import CLUSTER, EW_THREADS, MAX_THREADS, MIN_BLOCKS, PARTIAL_BLOCKS, LastBlock
from .reduce import ReductionWriter
from .writer import KernelWriter

#: the prelude every generated kernel includes, as ``#include "prelude.cuh"``
PRELUDE_PATH = Path(__file__).with_name("prelude.cuh")
PRELUDE = PRELUDE_PATH.read_text()
#: headers to hand the compiler with each generated source: the prelude and
#: the header it includes (the 8-bit floats)
HEADERS = {"prelude.cuh": PRELUDE,
           "float8.cuh": PRELUDE_PATH.with_name("float8.cuh").read_text()}


@dataclass(frozen=True)
class Source:
    """Generated kernel: CUDA C text, entry name and pycuda argument format."""

    text: str
    name: str
    arg_format: str


#: the entry point of every generated kernel
_NAME = "ga_kernel"

#: ops that pass a NaN on with its sign bit (moves, not arithmetic)
_MOVES = frozenset({"load", "scalar", "astype", "where", "negative", "absolute", "real", "imag",
                    "conjugate"})


def keeps_nan_sign(program):
    """Whether the kernel must keep a float16/bfloat16 NaN's sign through its
    loads and stores: when its result can show it -- a copy, cast or
    selection of stored values, or copysign (which ``signbit`` uses).
    Arithmetic on NaN gives the canonical NaN on the GPU anyway, and the
    sign-keeping conversions cost fp16 kernels up to 1.7x."""
    ops_used = {ins.op for ins in program.instrs}
    return "copysign" in ops_used or ops_used <= _MOVES


def generate(program, layout):
    """Generate the CUDA C source of ``program`` for ``layout``."""
    if isinstance(layout, LastBlock):
        return _generate_last_block(program, layout)
    gen = KernelWriter(program, layout)
    params, fmt = gen.params()
    writer = ElementwiseWriter if program.mode == "ew" else ReductionWriter
    body = writer(gen).body()
    bounds = f"__cluster_dims__({CLUSTER}, 1, 1) " if layout.cluster else ""
    threads = EW_THREADS if program.mode == "ew" else MAX_THREADS
    blocks = PARTIAL_BLOCKS if program.mode == "partial" else MIN_BLOCKS
    bounds += f"__launch_bounds__({threads}, {blocks})"
    text = "\n".join([
        *_preamble([program], layout.wide),
        f'extern "C" __global__ void {bounds} {_NAME}(',
        "    " + ",\n    ".join(params) + ") {",
        *body, "}", ""])
    return Source(text, _NAME, fmt)


def _generate_last_block(program, layout):
    """A partial kernel (``program``) whose last block to finish runs the
    finishing program ``layout.program`` as that program's one block would.

    The finishing body becomes a device function in which ``blockIdx`` and
    ``gridDim`` are shadowed by block 0 of a grid of one; its arguments
    follow the partial kernel's, then the address of the block counter,
    which reads zero at the start (``gpuarray.cuda.semaphores``) and which
    the last block resets.  The finishing pointers carry no ``__restrict__``:
    one of them aliases the partial kernel's ``out``.
    """
    partial = KernelWriter(program, layout.partial)
    params, fmt = partial.params()
    params[0] = params[0].replace(" __restrict__", "")
    finish = KernelWriter(layout.program, layout.finish)
    finish_params, finish_fmt = finish.params()
    finish_params = [p.replace(" __restrict__", "") for p in finish_params]
    names = [p.split()[-1] for p in finish_params]
    kernel_params = params + [f"{p.rsplit(' ', 1)[0]} f_{n}" for p, n in zip(finish_params, names)]
    kernel_params.append("unsigned int* __restrict__ ga_blocks_done")
    text = "\n".join([
        *_preamble([program, layout.program], layout.partial.wide),
        "__device__ __forceinline__ void ga_finish(",
        "    " + ",\n    ".join(finish_params) + ") {",
        "  const uint3 blockIdx = make_uint3(0, 0, 0);",
        "  const dim3 gridDim(1, 1, 1);",
        *ReductionWriter(finish).body(), "}",
        f'extern "C" __global__ void __launch_bounds__({MAX_THREADS}, {PARTIAL_BLOCKS}) {_NAME}(',
        "    " + ",\n    ".join(kernel_params) + ") {",
        *ReductionWriter(partial).body(),
        # every thread's partial stores ordered before the block counts itself done
        "  __shared__ bool ga_last;",
        "  __threadfence();",
        "  __syncthreads();",
        "  if (threadIdx.x == 0) {",
        "    ga_last = atomicAdd(ga_blocks_done, 1u) == gridDim.x - 1;",
        "  }",
        "  __syncthreads();",
        "  if (!ga_last) return;",
        "  __threadfence();",
        "  ga_finish(" + ", ".join(f"f_{n}" for n in names) + ");",
        "  if (threadIdx.x == 0) *ga_blocks_done = 0;",
        "}", ""])
    return Source(text, _NAME, fmt + finish_fmt + "P")


def _preamble(programs, wide):
    """The lines before the kernel: the NaN-sign switch, the prelude, the
    users' functions (``ng.ElementwiseKernel``, ``ng.ReductionKernel``), each
    defined once, and the index type."""
    users = dict.fromkeys(ins.arg if ins.op == "user" else ops.USER_REDUCTIONS[ins.op]
                          for program in programs for ins in program.instrs
                          if ins.op == "user" or ins.op in ops.USER_REDUCTIONS)
    return [*(["#define GA_KEEP_NAN_SIGN"] if any(map(keeps_nan_sign, programs)) else []),
            '#include "prelude.cuh"',
            *(fn.definition() for fn in users),
            f"typedef {'long long' if wide else 'int'} ga_idx;"]

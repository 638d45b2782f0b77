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
from .layout import CLUSTER, EW_THREADS, MAX_THREADS, MIN_BLOCKS, PARTIAL_BLOCKS
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
    gen = KernelWriter(program, layout)
    params, fmt = gen.params()
    name = "ga_kernel"
    writer = ElementwiseWriter if program.mode == "ew" else ReductionWriter
    body = writer(gen).body()
    bounds = f"__cluster_dims__({CLUSTER}, 1, 1) " if layout.cluster else ""
    threads = EW_THREADS if program.mode == "ew" else MAX_THREADS
    blocks = PARTIAL_BLOCKS if program.mode == "partial" else MIN_BLOCKS
    bounds += f"__launch_bounds__({threads}, {blocks})"
    # user functions (ng.ElementwiseKernel, ng.ReductionKernel), each defined once
    users = dict.fromkeys(ins.arg if ins.op == "user" else ops.USER_REDUCTIONS[ins.op]
                          for ins in program.instrs
                          if ins.op == "user" or ins.op in ops.USER_REDUCTIONS)
    text = "\n".join([
        *(["#define GA_KEEP_NAN_SIGN"] if keeps_nan_sign(program) else []),
        '#include "prelude.cuh"',
        *(fn.definition() for fn in users),
        f"typedef {'long long' if layout.wide else 'int'} ga_idx;",
        f'extern "C" __global__ void {bounds} {name}(',
        "    " + ",\n    ".join(params) + ") {",
        *body, "}", ""])
    return Source(text, name, fmt)

"""The layout class of a fused kernel, and the launch shape it is built for.

In: nothing; this module only defines what the launch planner
(:mod:`gpuarray.fusion.launch`) decides and the code generators
(:mod:`gpuarray.fusion.generate` and the writers) read.  Out:
:class:`Layout`, part of every kernel's cache key, and the thread and
cluster constants both sides must agree on.
"""
from dataclasses import dataclass

#: blocks of a thread-block cluster that share one long row (sm_90+)
CLUSTER = 8
#: threads of an elementwise block, and the most of a reduction block
EW_THREADS = 256
MAX_THREADS = 256
#: blocks per multiprocessor the register allocation must allow (2: at
#: most 128 registers a thread), so that the rows of one block stream in
#: while another reduces
MIN_BLOCKS = 2
#: blocks per multiprocessor of a partial kernel (the first of a split long
#: reduction, gpuarray.fusion.split), in its launch bounds and its grid: one
#: full wave of 2048 threads a multiprocessor, each thread within 32
#: registers.  A partial thread walks thousands of elements one dependent
#: loop at a time, so warps in flight are what hides the memory latency: on
#: an H100, sum(exp(-x*x) * sin(3*x) + 0.5*x) over 1e8 float32 took
#: 0.45 ms at 4 blocks, 0.32 ms at 8 (torch.compile: 0.31 ms); 8 requested
#: without the bounds left two waves when fewer fit (0.45-0.53 ms).  Heavy
#: trees spill a few bytes to L1 under the cap: a 20-op tree of three 1e7
#: inputs ran in 0.19 ms either way
PARTIAL_BLOCKS = 8


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
class LastBlock:
    """The layout class of a partial kernel whose last block to finish runs
    a finishing program (``plan.Step.finish``): part of the kernel cache key.

    ``partial``: the partial kernel's layout; ``program``: the finishing
    step's program; ``finish``: its layout (a plain row loop).
    """

    partial: Layout
    program: object
    finish: Layout

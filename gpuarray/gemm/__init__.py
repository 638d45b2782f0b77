"""Matrix products on the hand-written GEMM kernels.

functions (``ng.dot`` / ``ng.batched_dot``, mixed into both factories)
-> call (argument checks, the :class:`~gpuarray.gemm.call.GemmCall`) and
fuse (an op-tree's epilogue folded into the kernel) -> plan (layouts,
batches, split-K, launches) -> tiles (family and tile by a cost model) ->
catalogue (the kernels in ``gpuarray/kernels/`` and their argument block).
Imports :mod:`gpuarray.core` and :mod:`gpuarray.cuda`.
"""

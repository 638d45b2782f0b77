"""The fusion compiler: an assignment's op-tree -> generated CUDA kernels.

The path of ``out[:] = expr`` reads in module order: dispatch (replay a
recorded launch, with the slots its holes take from the tree, or record
one) -> plan (kernels and their modes; split
for very long rows) -> launch (layout class, grid, arguments) -> generate
(CUDA C: writer, with the elementwise and reduce mode writers, and the
prelude every kernel includes) -> :mod:`gpuarray.cuda.compiler`.
Imports :mod:`gpuarray.core` and :mod:`gpuarray.cuda`.
"""

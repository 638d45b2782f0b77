"""Data-dependent algorithms: sorting, searching, set functions, gathers.

The factory API is :class:`~gpuarray.algorithms.functions.AlgorithmFunctions`
(mixed into both factories); each factory runs its primitives on an engine,
:mod:`~gpuarray.algorithms.host` (numpy) or :mod:`~gpuarray.algorithms.device`
(CUB and the kernels of ``kernels/algorithms_host.cu``).
"""

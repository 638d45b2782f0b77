"""Linear algebra: ``ng.linalg``, numpy's ``numpy.linalg`` and the array API's
``linalg`` extension, on cuSOLVER (GPU) or numpy (CPU).

:mod:`~gpuarray.linalg.namespace` holds the functions and their arguments,
:mod:`~gpuarray.linalg.device` the GPU factorisations (the general
eigensolver in :mod:`~gpuarray.linalg.geev`),
:mod:`~gpuarray.linalg.functions` the factories' ``linalg`` attribute and
the CPU factorisations.
"""

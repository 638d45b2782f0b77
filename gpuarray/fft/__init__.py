"""Discrete Fourier transforms: ``ng.fft``, numpy's ``numpy.fft`` and the
array API's ``fft`` extension, on cuFFT (GPU) or numpy (CPU).

:mod:`~gpuarray.fft.namespace` holds the functions and their arguments,
:mod:`~gpuarray.fft.device` the GPU transforms, :mod:`~gpuarray.fft.functions`
the factories' ``fft`` attribute and the CPU transforms.
"""

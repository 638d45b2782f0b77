"""The CUDA runtime, knowing nothing of op-trees.

driver (the driver-API calls pycuda lacks: tensor maps, launches with
kernel parameters), mempool (the caching device-memory pool), compiler
(NVRTC or nvcc, and the on-disk cubin cache) and interop (CUDA array
interface and DLPack).  Imports only :mod:`gpuarray.core`.
"""

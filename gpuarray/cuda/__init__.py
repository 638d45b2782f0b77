"""The CUDA runtime, knowing nothing of op-trees.

driver (the driver-API calls pycuda lacks: modules, launches with
kernel parameters), tensor_maps (the copy engine's descriptors), context
(whether a GPU can be used, the context made current in each calling
thread, the errors after a fork or a kernel fault), mempool (the caching
device-memory pool), compiler (NVRTC or nvcc, and the on-disk cubin
cache) and interop (CUDA array interface and DLPack).  Imports only
:mod:`gpuarray.core`.
"""

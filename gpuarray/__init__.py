"""gpuarray: numpy semantics on NVIDIA GPUs, with lazy fusion.

Arithmetic on tensors builds op-trees; assigning one (``out[:] = expr``)
compiles the whole tree -- elementwise ops, reductions and broadcasts of
reduced values -- into one CUDA kernel.  ``gpuarray.CPU`` evaluates the
same trees with numpy.

>>> import numpy as np, gpuarray
>>> ng = gpuarray.CPU(seed=0)
>>> A = ng.array(np.arange(6, dtype=np.float32).reshape(2, 3))
>>> (A - ng.mean(A, axis=1, keepdims=True)).get()
array([[-1.,  0.,  1.],
       [-1.,  0.,  1.]], dtype=float32)
"""
from . import compiled

compiled.install()  # first: it chooses how the hot-path modules load
from .cpu import CPU, CPUTensor  # noqa: E402 - after the hook
from .core.dtypes import bfloat16, float8_e4m3fn, float8_e5m2  # noqa: E402
from .gpu import GPU, GPUTensor, gpu_available, gpu_unavailable_reason  # noqa: E402
from .numpy import get_array_module  # noqa: E402

__version__ = "0.1.0"

__all__ = ["GPU", "CPU", "GPUTensor", "CPUTensor", "bfloat16", "float8_e4m3fn", "float8_e5m2",
           "get_array_module", "gpu_available", "gpu_unavailable_reason", "__version__"]

"""User kernels in CuPy's syntax: ``ng.ElementwiseKernel`` (fused into the
op-trees around it) and ``ng.RawKernel`` (a whole CUDA C kernel, launched
as written).  The factories get them through
:class:`~gpuarray.userkernels.functions.UserKernelFunctions`."""

"""User kernels in CuPy's syntax: ``ng.ElementwiseKernel`` and
``ng.ReductionKernel`` (fused into the op-trees around them, or -- with
``raw`` parameters or CuPy's indices -- run as kernels of their own; on
the CPU factory, C++ compiled for the host) and ``ng.RawKernel`` (a whole
CUDA C kernel, launched as written; GPU factory only).  The factories get
them through :class:`~gpuarray.userkernels.functions.UserKernelFunctions`."""

"""User kernels in CuPy's syntax: ``ng.ElementwiseKernel`` (fused into the
op-trees around it, or -- with ``raw`` parameters, ``i`` or ``_ind`` -- run
as a kernel of its own), ``ng.ReductionKernel`` and ``ng.RawKernel`` (a
whole CUDA C kernel, launched as written).  The factories get them through
:class:`~gpuarray.userkernels.functions.UserKernelFunctions`."""

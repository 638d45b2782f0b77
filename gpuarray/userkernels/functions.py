"""The factories' user-kernel constructors: ``ng.ElementwiseKernel`` and ``ng.RawKernel``.

In: CuPy's arguments.  Out: kernel objects bound to the factory
(:class:`~gpuarray.userkernels.elementwise.ElementwiseKernel`,
:class:`~gpuarray.userkernels.raw.RawKernel`).  They run CUDA C, so the
CPU factory raises NotImplementedError for both.
"""
from .elementwise import ElementwiseKernel
from .raw import RawKernel


class UserKernelFunctions:
    """Mixin: user kernels in CuPy's syntax (GPU factory only)."""

    def ElementwiseKernel(self, in_params, out_params, operation, name="kernel"):  # noqa: N802
        """An elementwise kernel of C code per element that fuses into op-trees.

        Parameters
        ----------
        in_params, out_params : str
            CuPy's parameter lists (``"T x, float32 y"``, ``"T z"``).
        operation : str
            C code assigning the output parameter.
        name : str
            A C identifier.

        Examples
        --------
        >>> sq = ng.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "sqdiff")
        >>> out[:] = ng.sqrt(sq(a, b) + 1)        # one kernel
        """
        self._check_cuda("ElementwiseKernel")
        return ElementwiseKernel(self, in_params, out_params, operation, name)

    def RawKernel(self, code, name):  # noqa: N802
        """A CUDA C kernel launched as written: ``k(grid, block, args, shared_mem=0)``."""
        self._check_cuda("RawKernel")
        return RawKernel(self, code, name)

    def _check_cuda(self, what):
        if getattr(self, "arch", None) is None:
            raise NotImplementedError(f"{what} runs CUDA C: it needs the GPU factory, "
                                      f"not {type(self).__name__}")

"""The factories' user-kernel constructors: ``ng.ElementwiseKernel``,
``ng.ReductionKernel`` and ``ng.RawKernel``.

In: CuPy's arguments.  Out: kernel objects bound to the factory
(:class:`~gpuarray.userkernels.elementwise.ElementwiseKernel`,
:class:`~gpuarray.userkernels.reduction.ReductionKernel`,
:class:`~gpuarray.userkernels.raw.RawKernel`).  On the CPU factory the
elementwise and reduction kernels run the same code as C++ compiled for
the host (:mod:`~gpuarray.userkernels.host`); a RawKernel, a CUDA kernel
with a launch grid, needs the GPU factory.
"""
from .elementwise import ElementwiseKernel
from .raw import RawKernel
from .reduction import ReductionKernel


class UserKernelFunctions:
    """Mixin: user kernels in CuPy's syntax."""

    def ElementwiseKernel(self, in_params, out_params, operation, name="kernel"):  # noqa: N802
        """An elementwise kernel of C code per element that fuses into op-trees.

        Code using CuPy's index ``i`` or ``_ind.size()``, or ``raw``
        parameters (whole arrays the code indexes), runs as a kernel of its
        own at the call instead (:mod:`gpuarray.userkernels.indexed`).  On
        the CPU factory every call runs at once, as C++ compiled for the host.

        Parameters
        ----------
        in_params, out_params : str
            CuPy's parameter lists (``"T x, float32 y"``, ``"raw T w"``, ``"T z"``).
        operation : str
            C code assigning the output parameter.
        name : str
            A C identifier.

        Examples
        --------
        >>> sq = ng.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "sqdiff")
        >>> out[:] = ng.sqrt(sq(a, b) + 1)        # one kernel
        >>> rev = ng.ElementwiseKernel("raw T x", "T y", "y = x[_ind.size() - i - 1]", "rev")
        >>> rev(x, size=x.size)                   # x reversed, flattened
        """
        return ElementwiseKernel(self, in_params, out_params, operation, name)

    def ReductionKernel(self, in_params, out_params, map_expr, reduce_expr,  # noqa: N802
                        post_map_expr, identity, name="reduce_kernel", reduce_type=None):
        """A reduction of C expressions that fuses into op-trees: ``k(x, axis=, keepdims=, out=)``.

        With ``raw`` parameters, or CuPy's indices (``_i``, ``_j``, ``_J``,
        ``_in_ind.size()``, ``_out_ind.size()``) in its code, it runs as a
        kernel of its own at the call (:mod:`gpuarray.userkernels.indexed_reduction`);
        on the CPU factory every call does, as C++ compiled for the host.

        Parameters
        ----------
        in_params, out_params : str
            CuPy's parameter lists; one output.
        map_expr : str
            Each element's contribution (``"x * x"``).
        reduce_expr : str
            ``a`` and ``b`` combined (``"a + b"``): associative and commutative.
        post_map_expr : str
            The output from the reduced ``a`` (``"y = sqrt(a)"``).
        identity : str
            The combination's identity (``"0"``).
        name : str
        reduce_type : numpy.dtype, optional
            The type of ``a`` and ``b`` (default: the output's).
        """
        return ReductionKernel(self, in_params, out_params, map_expr, reduce_expr, post_map_expr,
                               identity, name, reduce_type)

    def RawKernel(self, code, name):  # noqa: N802
        """A CUDA C kernel launched as written: ``k(grid, block, args, shared_mem=0)``.

        Raises
        ------
        NotImplementedError
            On the CPU factory: a CUDA kernel with a launch grid has no host equivalent.
        """
        if getattr(self, "arch", None) is None:
            raise NotImplementedError(
                f"RawKernel is a CUDA C kernel launched on a grid of GPU threads: it needs the "
                f"GPU factory (gpuarray.GPU()), not {type(self).__name__}; an ElementwiseKernel "
                "or ReductionKernel runs on both factories")
        return RawKernel(self, code, name)

"""``ng.RawKernel``: a whole CUDA C kernel, compiled and launched as written.

In: the source (one or more ``extern "C" __global__`` functions) and the
name of one, then at each call CuPy's arguments: the grid and the block
(an int or a tuple of up to three), a tuple of kernel arguments -- tensors
of the factory (passed as device pointers), numpy scalars (passed as
their C type), Python ints (``long long``), floats (``double``) and bools
-- and ``shared_mem`` bytes of dynamic shared memory.  Out: nothing; the
launch is queued on the factory's current stream.

The source is compiled (NVRTC, the disk cache as for generated kernels)
when the kernel is made, so a syntax error or a missing name raises there.
"""
import numpy as np

from ..core.array import Tensor
from ..cuda import compiler

#: struct format of each C type an argument can take
_FORMATS = {np.dtype(np.bool_): "?", np.dtype(np.int8): "b", np.dtype(np.uint8): "B",
            np.dtype(np.int16): "h", np.dtype(np.uint16): "H", np.dtype(np.int32): "i",
            np.dtype(np.uint32): "I", np.dtype(np.int64): "q", np.dtype(np.uint64): "Q",
            np.dtype(np.float32): "f", np.dtype(np.float64): "d"}
_PYTHON = {bool: ("?", bool), int: ("q", int), float: ("d", float)}


class RawKernel:
    """A CUDA C kernel of the user's, bound to a factory (CuPy's ``RawKernel``).

    Parameters
    ----------
    backend : gpuarray.GPU
    code : str
        CUDA C source.
    name : str
        The ``extern "C"`` kernel to launch.

    Raises
    ------
    gpuarray.cuda.compiler.CompileError
        The source does not compile (the compiler's message).
    ValueError
        No kernel of that name in the compiled source.
    """

    def __init__(self, backend, code, name):
        if not isinstance(code, str) or not isinstance(name, str):
            raise TypeError("RawKernel takes the source and the kernel's name as strings")
        self.backend, self.code, self.name = backend, code, name
        self._function = backend._load_user_kernel(compiler.compile_source(code, backend.arch),
                                                   name)
        self._prepared = set()

    def __repr__(self):
        return f"<RawKernel {self.name}>"

    def __call__(self, grid, block, args, *, shared_mem=0):
        """Launch on ``grid`` blocks of ``block`` threads with ``args``.

        Raises
        ------
        ValueError
            A grid or block dimension that is not a positive int, more than
            1024 threads a block, or negative ``shared_mem``.
        TypeError
            ``args`` not a tuple or list, or an argument of another kind
            (another factory's tensor, a host array, a complex number...).
        """
        grid, block = _dims(grid, "grid"), _dims(block, "block")
        if block[0] * block[1] * block[2] > 1024:
            raise ValueError(f"block {block} has more than 1024 threads")
        if not isinstance(shared_mem, (int, np.integer)) or shared_mem < 0:
            raise ValueError(f"shared_mem must be a non-negative int, not {shared_mem!r}")
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"args must be a tuple, not {type(args).__name__}")
        fmt, values = zip(*(self._argument(k, a) for k, a in enumerate(args))) if args else ((), ())
        fmt = "".join(fmt)
        if fmt not in self._prepared:
            self._function.prepare(fmt)
            self._prepared.add(fmt)
        self.backend._launch_user_kernel(self._function, fmt, grid, block, values, int(shared_mem))

    def _argument(self, k, a):
        """(struct format, value) of argument ``k``."""
        if isinstance(a, Tensor):
            if a.backend is not self.backend:
                raise TypeError(f"argument {k}: a tensor of another factory")
            return "P", a.ptr
        if isinstance(a, np.generic) and a.dtype in _FORMATS:
            return _FORMATS[a.dtype], a.item()
        if type(a) in _PYTHON:
            fmt, kind = _PYTHON[type(a)]
            return fmt, kind(a)
        raise TypeError(f"argument {k}: unsupported type {type(a).__name__} (tensors of this "
                        "factory, numpy scalars and Python bools, ints and floats)")


def _dims(value, what):
    """A grid or block as three positive ints."""
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    positive = all(isinstance(d, (int, np.integer)) and d > 0 for d in dims)
    if not 1 <= len(dims) <= 3 or not positive:
        raise ValueError(f"{what} must be 1 to 3 positive ints, not {value!r}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))

"""Hand-written kernel modules, loaded on first use.

In: the stem of a binary that ``make kernels`` builds into
``gpuarray/kernels/`` (``<stem>.cubin`` for Hopper-only code, else
``<stem>.fatbin``) and the name of one of its kernels.  Out: a
:class:`gpuarray.cuda.driver.Kernel` ready to launch, or
:class:`KernelsMissing` naming the file and the command that builds it.
"""
from pathlib import Path

from . import driver

#: where ``make kernels`` puts the binaries
KERNEL_DIR = Path(__file__).parent.parent / "kernels"


class KernelsMissing(RuntimeError):
    """A hand-written kernel's binary is not built (or lacks the kernel)."""


class Library:
    """Loads the modules of one family of kernels and hands out their functions.

    Parameters
    ----------
    directory : pathlib.Path
        Where the binaries are.
    what : str
        The family's name in error messages ("GEMM", "pooling").
    """

    def __init__(self, directory=KERNEL_DIR, what="hand-written"):
        self.directory, self.what = Path(directory), what
        self._modules = {}
        self._kernels = {}

    def _module(self, stem):
        module = self._modules.get(stem)
        if module is None:
            for suffix in (".cubin", ".fatbin"):
                path = self.directory / (stem + suffix)
                if path.exists():
                    module = driver.load_module(path)
                    break
            else:
                raise KernelsMissing(
                    f"{self.what} kernels are not built: {self.directory / stem}.cubin (or "
                    ".fatbin) is missing; run `make kernels` (needs nvcc)")
            self._modules[stem] = module
        return module

    def function(self, stem, name, smem=0):
        """The kernel ``name`` of module ``stem``, allowed ``smem`` bytes of shared memory."""
        key = (stem, name)
        kernel = self._kernels.get(key)
        if kernel is None:
            try:
                kernel = driver.Kernel(self._module(stem), name, smem)
            except driver.DriverError as err:
                raise KernelsMissing(f"{stem} has no usable kernel {name} ({err}); "
                                     "rebuild with `make kernels`") from None
            self._kernels[key] = kernel
        elif smem > kernel.smem:
            kernel.allow_smem(smem)
        return kernel

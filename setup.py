"""Packaging for gpuarray.

The modules listed in ``gpuarray/compiled.py`` are also compiled by Cython
into extension modules beside their sources (the host path of every call:
op-trees, dispatch), and so is the kernel launch entry
``gpuarray/cuda/launch_entry.pyx``.  They are optional: without Cython or a C compiler,
or with ``GPUARRAY_PURE_PYTHON=1`` set at build time, the package installs
and runs from the Python sources alone.
"""
import os
import runpy

from setuptools import Extension, find_packages, setup


def compiled_extensions():
    """Extension modules for the hot path, or [] where they cannot be built."""
    hot = runpy.run_path(os.path.join("gpuarray", "compiled.py"))
    if hot["pure_python_requested"]():
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    modules = [Extension(name, [name.replace(".", "/") + ".py"], optional=True)
               for name in hot["MODULES"]]
    # the kernel launch entry: C calling cuLaunchKernel (no Python source;
    # gpuarray.cuda.driver launches through ctypes where it is not built)
    modules.append(Extension("gpuarray.cuda.launch_entry", ["gpuarray/cuda/launch_entry.pyx"],
                             optional=True))
    # binding: compiled functions keep Python's introspection (signatures,
    # docstrings for Sphinx, functools.wraps); the generated C stays out of
    # the source tree
    return cythonize(modules, build_dir=os.path.join("build", "cython"), quiet=True,
                     compiler_directives={"language_level": 3, "binding": True})


with open("README.rst", encoding="utf-8") as f:
    long_description = f.read()

setup(
    name="gpuarray",
    version="0.1.0",
    description=(
        "numpy-like arrays on NVIDIA GPUs: lazy op-trees fused into one "
        "generated CUDA kernel per assignment"
    ),
    long_description=long_description,
    long_description_content_type="text/x-rst",
    license="BSD-3-Clause",
    packages=find_packages(include=["gpuarray", "gpuarray.*"]),
    package_data={"gpuarray": ["fusion/*.cuh", "kernels/*.cubin", "kernels/*.fatbin",
                              "kernels/*.so"]},
    include_package_data=True,
    ext_modules=compiled_extensions(),
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.26",
        "ml_dtypes>=0.4",
    ],
    extras_require={
        "gpu": ["pycuda>=2024.1", "cuda-bindings>=12.0", "nvidia-cufft", "nvidia-cusolver",
                "nvidia-cublas"],
        "dev": ["pytest>=8", "hypothesis>=6.151", "ndindex", "sphinx>=7", "matplotlib",
                "scikit-learn"],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Operating System :: POSIX :: Linux",
        "Environment :: GPU :: NVIDIA CUDA",
        "Topic :: Scientific/Engineering",
    ],
)

"""Packaging for gpuarray."""

from setuptools import find_packages, setup

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
    package_data={"gpuarray": ["fusion/*.cuh", "kernels/*.cubin", "kernels/*.fatbin"]},
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.26",
        "ml_dtypes>=0.4",
    ],
    extras_require={
        "gpu": ["pycuda>=2024.1", "cuda-bindings>=12.0"],
        "dev": ["pytest>=8", "hypothesis", "sphinx>=7", "matplotlib", "scikit-learn"],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Operating System :: POSIX :: Linux",
        "Environment :: GPU :: NVIDIA CUDA",
        "Topic :: Scientific/Engineering",
    ],
)

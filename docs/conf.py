"""Sphinx configuration for the gpuarray documentation."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))
# pictures of the package drawn from its code
sys.path.insert(0, os.path.abspath("_ext"))

project = "gpuarray"
author = "the gpuarray developers"
copyright = "2026, the gpuarray developers"
release = "0.1.0"
version = "0.1"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "package_graph",
]

# numpy-style docstrings
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

# The docs build on machines without a GPU or CUDA Python packages.
autodoc_mock_imports = ["pycuda", "cuda"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"

nitpicky = False

exclude_patterns = ["_build"]
templates_path = []

html_theme = "alabaster"
html_title = "gpuarray"

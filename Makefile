# gpuarray build, test and documentation targets.

PYTHON ?= python3
NVCC ?= nvcc
NVCCFLAGS ?= -gencode=arch=compute_90a,code=sm_90a -O3

KERNEL_SRCS := $(wildcard kernels/*.cu)
KERNEL_BINS := $(patsubst kernels/%.cu,gpuarray/kernels/%.cubin,$(KERNEL_SRCS))
HAVE_NVCC := $(shell command -v $(NVCC) 2>/dev/null)

.PHONY: all install kernels python test bench doc clean

all: python kernels

install:
	$(PYTHON) -m pip install -e '.[dev]'
	$(MAKE) kernels

ifeq ($(strip $(KERNEL_SRCS)),)
kernels:
	@echo "kernels: no CUDA sources in kernels/, nothing to build"
else ifeq ($(strip $(HAVE_NVCC)),)
kernels:
	@echo "kernels: $(NVCC) not found; skipping the build of $(words $(KERNEL_SRCS)) kernel(s)"
else
kernels: $(KERNEL_BINS)

gpuarray/kernels/%.cubin: kernels/%.cu
	@mkdir -p $(@D)
	$(NVCC) -cubin $(NVCCFLAGS) -o $@ $<
endif

python:
	$(PYTHON) -m pip install -e .

test:
	$(PYTHON) -m pytest -q tests

bench:
	$(PYTHON) benchmarks/bench_elementwise.py

doc:
	sphinx-build -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf build dist *.egg-info docs/_build .pytest_cache
	rm -f gpuarray/kernels/*.cubin
	find . -path ./.git -prune -o -type d -name __pycache__ -exec rm -rf {} +

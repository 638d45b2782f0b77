# gpuarray build, test and documentation targets.

PYTHON ?= python3
NVCC ?= nvcc
NVCCFLAGS ?= -O3 -std=c++17
# Hopper-only kernels (wgmma, setmaxnreg) need the sm_90a target
SM90_ARCH := -gencode=arch=compute_90a,code=sm_90a
# the others run on Ampere, Ada and Hopper: one fatbin holding sm_80 and sm_90 code
PORTABLE_ARCH := -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90

KERNEL_SRCS := $(wildcard kernels/*.cu)
SM90_SRCS := $(wildcard kernels/*_sm90.cu)
# host entry points around CUB's device algorithms: a shared library
HOST_SRCS := $(wildcard kernels/*_host.cu)
PORTABLE_SRCS := $(filter-out $(SM90_SRCS) $(HOST_SRCS),$(KERNEL_SRCS))
KERNEL_BINS := $(patsubst kernels/%.cu,gpuarray/kernels/%.cubin,$(SM90_SRCS)) \
               $(patsubst kernels/%.cu,gpuarray/kernels/%.fatbin,$(PORTABLE_SRCS)) \
               $(patsubst kernels/%.cu,gpuarray/kernels/%.so,$(HOST_SRCS))
KERNEL_DEPS := $(wildcard kernels/*.cuh) $(wildcard gpuarray/fusion/*.cuh)
HAVE_NVCC := $(shell command -v $(NVCC) 2>/dev/null)

.PHONY: all install kernels python test test-pure conformance bench stress sanitize doc clean

all: python kernels

install:
	$(PYTHON) -m pip install -e '.[dev]'
	$(MAKE) -j4 kernels

ifeq ($(strip $(KERNEL_SRCS)),)
kernels:
	@echo "kernels: no CUDA sources in kernels/, nothing to build"
else ifeq ($(strip $(HAVE_NVCC)),)
kernels:
	@echo "kernels: $(NVCC) not found; skipping the build of $(words $(KERNEL_SRCS)) kernel(s)"
else
kernels: $(KERNEL_BINS)

# ptxas's resource report (registers, spills) is kept beside each binary as
# <binary>.log; tests/test_kernels_build.py reads it
gpuarray/kernels/%.cubin: kernels/%.cu $(KERNEL_DEPS)
	@mkdir -p $(@D)
	$(NVCC) -cubin $(SM90_ARCH) $(NVCCFLAGS) -Xptxas -v -o $@ $< > $@.log 2>&1 || { cat $@.log; rm -f $@; exit 1; }

gpuarray/kernels/%.fatbin: kernels/%.cu $(KERNEL_DEPS)
	@mkdir -p $(@D)
	$(NVCC) -fatbin $(PORTABLE_ARCH) $(NVCCFLAGS) -Xptxas -v -o $@ $< > $@.log 2>&1 || { cat $@.log; rm -f $@; exit 1; }

# the CUDA runtime is linked statically (nvcc's default), so the library
# needs only libcuda at run time; it runs in the caller's current context
gpuarray/kernels/%_host.so: kernels/%_host.cu $(KERNEL_DEPS)
	@mkdir -p $(@D)
	$(NVCC) -shared -Xcompiler -fPIC $(PORTABLE_ARCH) $(NVCCFLAGS) -Xptxas -v -o $@ $< > $@.log 2>&1 || { cat $@.log; rm -f $@; exit 1; }
endif

python:
	$(PYTHON) -m pip install -e .

# the suite twice: over the compiled hot-path modules, then over their
# Python sources (the fallback where they are not built)
test:
	$(PYTHON) -m pytest -q tests
	$(MAKE) test-pure
	$(MAKE) conformance

test-pure:
	GPUARRAY_PURE_PYTHON=1 $(PYTHON) -m pytest -q tests

# the array API conformance suite (data-apis/array-api-tests, not part of
# this repository: ARRAY_API_TESTS_DIR, else ../shared/array-api-tests) over
# the CPU factory, one Hypothesis example per test, a fixed seed; fails on
# any failure tests/array_api_expected_failures.txt does not expect
conformance:
	$(PYTHON) benchmarks/conformance.py --device cpu --max-examples 1 --seed 0 \
		--expect tests/array_api_expected_failures.txt

bench:
	$(PYTHON) benchmarks/bench_elementwise.py
	$(PYTHON) benchmarks/validate_gemm.py
	$(PYTHON) benchmarks/bench_gemm.py

stress:
	$(PYTHON) benchmarks/stress.py

# compute-sanitizer over the GPU cases of the suite, one tool after another;
# the CPU cases (-k "not cpu") and the tests that fault a kernel on purpose
# (-m "not no_sanitizer") are left out.  Narrow it with SANITIZE_TESTS=tests/test_x.py.
# SANITIZE_JOBS sanitizer processes run side by side, each over every N-th
# test (pytest --shard, tests/conftest.py): the tools are slow, and separate
# processes each keep their own log where xdist's workers lose theirs.
# Reports go to one log per process under SANITIZE_LOGS (pytest captures a
# test's output, so reports written to stdout would vanish with passing
# tests); each shard's pytest output goes beside them, one line a test, so a
# shard stopped by SANITIZE_TIMEOUT (seconds; 0: none) names the test it was in.
SANITIZE_TOOLS ?= memcheck racecheck synccheck
SANITIZE_TESTS ?= tests
SANITIZE_LOGS ?= sanitize-logs
SANITIZE_JOBS ?= 1
SANITIZE_TIMEOUT ?= 0
SANITIZE_PYTEST ?= -v -p no:cacheprovider -k "not cpu" -m "not no_sanitizer"
sanitize:
	@mkdir -p $(SANITIZE_LOGS); status=0; \
	for tool in $(SANITIZE_TOOLS); do \
	  echo "== compute-sanitizer --tool $$tool, $(SANITIZE_JOBS) process(es)"; pids=""; \
	  rm -f $(SANITIZE_LOGS)/$$tool.*; \
	  for shard in $$(seq 0 $$(($(SANITIZE_JOBS) - 1))); do \
	    timeout -s INT -k 30 $(SANITIZE_TIMEOUT) compute-sanitizer --tool $$tool --error-exitcode 99 --report-api-errors no \
	      --target-processes all --log-file $(SANITIZE_LOGS)/$$tool.$$shard.%p.log \
	      $(PYTHON) -m pytest $(SANITIZE_PYTEST) --shard=$$shard/$(SANITIZE_JOBS) $(SANITIZE_TESTS) \
	      > $(SANITIZE_LOGS)/$$tool.$$shard.pytest 2>&1 & pids="$$pids $$!"; \
	  done; \
	  for pid in $$pids; do wait $$pid || status=1; done; \
	  tail -qn1 $(SANITIZE_LOGS)/$$tool.*.pytest; \
	  unfinished=$$(grep -LE "(ERROR|RACECHECK) SUMMARY" $(SANITIZE_LOGS)/$$tool.*.log); \
	  if grep -lE "(ERROR|RACECHECK) SUMMARY: [1-9]" $(SANITIZE_LOGS)/$$tool.*.log; then status=1; \
	  elif [ -n "$$unfinished" ]; then \
	    echo "$$tool: no summary (a process stopped early) in" $$unfinished; status=1; \
	  else echo "$$tool: no errors in $$(ls $(SANITIZE_LOGS)/$$tool.*.log | wc -l) process logs"; fi; \
	done; exit $$status

doc:
	sphinx-build -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf build dist *.egg-info docs/_build .pytest_cache
	rm -f gpuarray/kernels/*.cubin gpuarray/kernels/*.fatbin gpuarray/kernels/*.log
	find gpuarray -name '*.so' -delete
	find . -path ./.git -prune -o -type d -name __pycache__ -exec rm -rf {} +

"""Generated CUDA source compiles for sm_90, on machines without a GPU.

Plans are made with the CPU factory (planning needs no device), every
layout class a launch can pick is generated, and all kernels go through
one nvcc run (each renamed, so one translation unit holds them all).
"""
import re
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import gpuarray
from gpuarray.core import ops
from gpuarray.cuda import compiler
from gpuarray.fusion import generate, launch, plan
from gpuarray.fusion.layout import LastBlock, Layout

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

DTYPES = [np.float16, gpuarray.bfloat16, gpuarray.float8_e4m3fn, gpuarray.float8_e5m2, np.float32,
          np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.bool_]
FLOAT_UNARY = [n for n in ops.ELEMENTWISE if ops.OPS[n].arity == 1
               and n not in ("invert", "logical_not", "negative")]


def _assignments(ng):
    """(out, expression) pairs covering every dtype, op family and mode."""
    rng = np.random.default_rng(0)
    cases = []
    for dt in DTYPES:
        a = ng.array(rng.random((6, 40)) * 4, dtype=dt)
        b = ng.array(rng.random((40,)) * 4, dtype=dt)
        ew = ng.where(a > b, ng.maximum(a, b), ng.minimum(a, b))
        cases.append((ng.empty((6, 40), dt), ew))
        cases.append((ng.empty((40, 6), np.float32), a.T.astype(np.float32) * 2 + ng.rand()))
        for red in ("sum", "max", "argmin", "any"):
            cases.append((ng.empty((6, 1), ops.reduction_dtype(red, a.dtype)),
                          getattr(ng, red)(a, axis=1, keepdims=True)))
    x = ng.array(rng.random((8, 64)), dtype=np.float32)
    cases += [(ng.empty((8, 64), np.float32), getattr(ng, name)(x)) for name in FLOAT_UNARY]
    cases += _complex_assignments(ng, rng)
    i = ng.array(rng.integers(0, 9, (8, 64)), dtype=np.int32)
    for name in ("floor_divide", "mod", "power", "left_shift", "right_shift", "bitwise_xor", "gcd", "lcm"):
        cases.append((ng.empty((8, 64), np.int32), getattr(ng, name)(i, 3)))
    for dt in (gpuarray.float8_e4m3fn, gpuarray.float8_e5m2):  # their own units, casts
        f = ng.array(rng.random((8, 64)), dtype=dt)
        cases.append((ng.empty((8, 64), dt), ng.nextafter(f, 0) + ng.spacing(f)))
        cases.append((ng.empty((8, 64), np.float16), ng.astype(x, dt) * ng.astype(f, np.float64)))
    eps = 1e-5
    cases.append((ng.empty((8, 64), np.float16),
                  ng.reciprocal(ng.sqrt(ng.var(x, axis=1, keepdims=True) + eps))
                  * (x - ng.mean(x, axis=1, keepdims=True))))
    e = ng.exp(x - ng.max(x, axis=1, keepdims=True))
    cases.append((ng.empty((8, 64), np.float32), e / ng.sum(e, axis=1, keepdims=True)))
    long = ng.empty((2, 1 << 18), np.float16)  # few long rows: partial kernels
    cases.append((ng.empty((2, 1), np.float16), ng.var(long, axis=1, keepdims=True)))
    # one long row: the partial kernel's last block finishes (a second program inside)
    cases.append((ng.empty((), np.float32), ng.mean(ng.exp(-long[0] * long[0]) + 0.5)))
    tall = ng.empty((1 << 16, 64), np.float32)  # columns: rows neighbour in memory
    cases.append((ng.empty((1, 64), np.int64), ng.argmax(tall, axis=0, keepdims=True)))
    cases.append((ng.empty((1, 64), np.float32), ng.var(tall, axis=0, keepdims=True)))
    cases.append((ng.empty((1 << 16, 64), np.float32), tall - ng.max(tall, axis=0, keepdims=True)))
    return cases


def _complex_unary(dtype):
    """Unary ops with a complex loop, and their result dtypes."""
    found = []
    for name in ops.ELEMENTWISE:
        if ops.OPS[name].arity == 1:
            try:
                found.append((name, ops.resolve(name, (np.dtype(dtype),))[1]))
            except TypeError:
                pass
    return found


def _complex_assignments(ng, rng):
    """complex64/complex128: arithmetic with complex scalars, every complex
    unary op, reductions (the cluster variant holds two words) and casts."""
    cases = []
    for dt in (np.complex64, np.complex128):
        z = ng.array((rng.random((6, 40)) + 1j * rng.random((6, 40))).astype(dt))
        w = ng.array((rng.random(40) - 1j).astype(dt))
        expr = ng.where(z > w, ng.maximum(z, w), ng.minimum(z, w)) / w + 2j * z ** 3 - z ** w
        cases.append((ng.empty((6, 40), dt), expr + ng.absolute(z) + (z == w) + ng.isnan(z)))
        for red in ("sum", "prod", "max", "argmin", "any"):
            cases.append((ng.empty((6, 1), ops.reduction_dtype(red, z.dtype)),
                          getattr(ng, red)(z, axis=1, keepdims=True)))
        cases += [(ng.empty((6, 40), result), ng.elementwise(name, z))
                  for name, result in _complex_unary(dt)]
        with warnings.catch_warnings():  # numpy's ComplexWarning for the real targets
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            for target in (np.float16, np.bool_, np.int32, np.complex64):
                cases.append((ng.empty((6, 40), target), ng.astype(z, target)))
    return cases


def _sources():
    ng = gpuarray.CPU(seed=0)
    texts = set()
    for out, expr in _assignments(ng):
        steps, _ = plan.plan(ng, out, expr)
        for step in steps:
            layout = launch.prepare(step, 132, 0, 1).layout
            variants = {layout}
            if step.program.mode != "ew" and not isinstance(layout, LastBlock):
                variants |= {Layout(layout.n_outer, layout.n_inner, cluster=True, cache=8),
                             Layout(layout.n_outer, layout.n_inner, cache=0)}
            texts |= {generate.generate(step.program, v).text for v in variants}
    return sorted(texts)


def test_generated_kernels_compile_for_sm90(tmp_path):
    sources = _sources()
    assert len(sources) > 60
    units = []
    for n, text in enumerate(sources):
        body = text.replace('#include "prelude.cuh"\n', "")
        # each kernel picks its index type: give every one its own
        body = body.replace("ga_idx", f"ga_idx_{n}")
        body = body.replace("ga_finish(", f"ga_finish_{n}(")
        units.append(body.replace(" ga_kernel(", f" ga_kernel_{n}("))
    unit = tmp_path / "all.cu"
    unit.write_text('#include "prelude.cuh"\n' + "\n".join(units))
    result = subprocess.run(
        ["nvcc", "-cubin", "-arch=sm_90", "-std=c++17", "-I", str(generate.PRELUDE_PATH.parent),
         "-Xptxas", "-v", "-o", str(tmp_path / "all.cubin"), str(unit)],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    spills = re.findall(r"(\d+) bytes spill stores", result.stderr)
    assert spills and all(s == "0" for s in spills), "a generated kernel spills registers"


def test_compile_error_names_saved_source(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUARRAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_nvrtc", lambda: None)
    with pytest.raises(compiler.CompileError) as err:
        compiler.compile_source('extern "C" __global__ void k() { undefined_thing(); }')
    saved = re.search(r"source saved at (\S+)", str(err.value)).group(1)
    assert open(saved).read().startswith('extern "C"')


def test_disk_cache_returns_same_cubin(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUARRAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_nvrtc", lambda: None)
    text = '#include "prelude.cuh"\nextern "C" __global__ void k(float* p) { p[0] = ga_sqrt(2.0f); }\n'
    first = compiler.compile_source(text, headers=generate.HEADERS)
    monkeypatch.setattr(compiler, "_compile", lambda *a: pytest.fail("recompiled"))
    assert compiler.compile_source(text, headers=generate.HEADERS) == first


def test_cache_key_ignores_sizes_and_constants():
    ng = gpuarray.CPU(seed=0)

    def program(shape, constant):
        a = ng.ones(shape)
        steps, _ = plan.plan(ng, ng.empty(shape), a * constant + 1)
        return steps[0].program

    assert program((4, 8), 2.0) == program((40, 80), 3.5)
    assert hash(program((4, 8), 2.0)) == hash(program((40, 80), 3.5))

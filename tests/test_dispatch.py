"""The GPU path up to the driver call, on machines without a GPU.

A GPU factory whose driver is replaced by a recorder: memory comes from a
counter, kernels are generated but not compiled, launches are captured with
their packed arguments.  The arguments a recorded recipe replays must equal
those a fresh plan computes for the new tensors and scalars.
"""
import itertools
import struct
import types

import numpy as np
import pytest

from gpuarray import gpu
from gpuarray.core import array, backend, optree, signatures
from gpuarray.core.scalars import Scalar, python_scalar
from gpuarray.cuda import mempool
from gpuarray.fusion import dispatch, generate, launch, plan, slots


class _Raw(int):
    def free(self):
        pass


class _Kernel:
    def __init__(self, source, log):
        self.arg_format, self.log = source.arg_format, log

    def launch_packed(self, grid, block, buf, shared=0):
        self.log.append((grid, block, struct.unpack(self.arg_format, buf)))

    def patched_launch(self, grid, block, template, holes, smem=0):
        return None  # the dispatcher patches and calls launch_packed


class RecordingGPU(gpu.GPU):
    """gpuarray.GPU with the CUDA driver replaced by a recorder."""

    def __init__(self, seed=0):
        backend.Backend.__init__(self, seed, False)
        addresses = itertools.count(1 << 32, 1 << 28)  # 256 MiB apart: no accidental overlap
        self.pool = mempool.DeviceMemoryPool(alloc=lambda n: _Raw(next(addresses)))
        self.semaphores = mempool.DeviceMemoryPool(alloc=lambda n: _Raw(next(addresses)))
        self.sms, self.arch, self.clusters, self.device_id = 132, "sm_90", True, 0
        self._replays = types.SimpleNamespace(address=0)  # no device word: nothing launches
        self._kernels, self._conv_plans, self._pool_plans, self._bias_plans = {}, {}, {}, {}
        self._use_dispatcher()
        self.launches = []

    def _kernel(self, program, layout):
        key = (program, layout)
        if key not in self._kernels:
            self._kernels[key] = _Kernel(generate.generate(program, layout), self.launches)
            self._stats["kernels_compiled"] += 1
        return self._kernels[key]

    def _upload(self, tensor, host):
        pass

    def synchronize(self):
        pass


def _fresh_args(ng, out, tree):
    """Arguments a plan made from scratch gives, call counters left out."""
    steps, _ = plan.plan(ng, out, tree)
    specs = [launch.prepare(s, ng.sms, ng.seed, 0, ng.clusters) for s in steps]
    return [spec.args[:spec.call_index] + spec.args[spec.call_index + 1:] for spec in specs]


def _replayed_args(ng, out, tree):
    ng.launches.clear()
    ng.assign(out, tree)
    calls = [list(args) for _, _, args in ng.launches]
    # drop the call counter (the fourth argument from the end)
    return [args[:-3] + args[-2:] for args in calls]


CASES = {
    "elementwise": lambda ng, A, B, s: A * s + B,
    "broadcast": lambda ng, A, B, s: A + B[0] * s,
    "batch-norm": lambda ng, A, B, s: ng.reciprocal(ng.sqrt(ng.var(A, axis=1, keepdims=True) + s))
    * (A - ng.mean(A, axis=1, keepdims=True)),
    "two axes": lambda ng, A, B, s: (A - ng.mean(A, axis=0, keepdims=True)
                                     - ng.mean(B, axis=1, keepdims=True) * s),
    "transposed": lambda ng, A, B, s: A.T.T + ng.max(B, axis=0, keepdims=True) - s,
    # one buffer behind two leaves: the second is the first's slot plus a delta
    "shared buffer": lambda ng, A, B, s: A * s + A[::-1] - B[1:2],
}


@pytest.mark.parametrize("name", list(CASES))
def test_replay_fills_the_holes_like_a_fresh_plan(name):
    ng = RecordingGPU()
    build = CASES[name]
    A, B, C = ng.empty((64, 96)), ng.empty((64, 96)), ng.empty((64, 96))
    C[:] = build(ng, A, B, 2.5)  # records
    A2, B2, C2 = ng.empty((64, 96)), ng.empty((64, 96)), ng.empty((64, 96))
    got = _replayed_args(ng, C2, build(ng, A2, B2, 0.75))
    want = _fresh_args(ng, C2, build(ng, A2, B2, 0.75))
    user = {t.ptr for t in (A2, B2, C2)}
    assert len(got) == len(want)
    for g, w in zip(got, want):
        # temporaries may sit elsewhere in the pool; everything else must agree
        same = [a == b or (a not in user and b not in user and a >= 1 << 32 and b >= 1 << 32)
                for a, b in zip(g, w)]
        assert all(same), (g, w)
    assert any(0.75 in g for g in got)  # the new constant reached a kernel


def test_new_constant_or_tensors_reuse_the_recipe():
    ng = RecordingGPU()
    A, B, C, D = (ng.empty((8, 32)) for _ in range(4))
    C[:] = A * 2.0 + B
    recipes = len(ng._dispatcher.recipes)
    C[:] = B * 3.5 + A
    D[:] = A * -1.0 + C
    assert len(ng._dispatcher.recipes) == recipes
    D[:] = A * 2 + C  # an int constant is another situation, but the same kernel
    assert ng.stats()["kernels_compiled"] == 1


def test_layouts_name_the_situation_and_their_ids_never_repeat(monkeypatch):
    ng = RecordingGPU()
    A, B = ng.empty((8, 32)), ng.empty((8, 32))
    assert A.sig == B.sig and A.sig != A.T.sig and A.sig != A[:, 1:].sig
    assert A.sig != ng.empty((8, 32), np.float16).sig
    # a full table is cleared: a layout met again gets a new id, never an old
    # one (layouts no other test makes, so each is new to the table)
    monkeypatch.setattr(array, "_MAX_LAYOUTS", 1)
    seen = {A.sig, A.T.sig}
    for n in range(2, 8):
        seen.add(ng.empty((97, 89, n)).sig)
    again = ng.empty((8, 32))
    assert again.sig not in seen and len(seen) == 8
    # the old and the new id of one layout: two recipes, one kernel
    ng.launches.clear()
    A[:] = B * 2
    again[:] = B * 2
    assert len(ng.launches) == 2 and ng.stats()["kernels_compiled"] == 1


def test_structures_name_the_tree_and_their_ids_never_repeat(monkeypatch):
    ng = RecordingGPU()
    A, B, C = (ng.empty((8, 32)) for _ in range(3))
    assert (A + B * 2).sig == (B + C * 3).sig == (A + A * 5).sig  # values and aliasing: not here
    assert (A + B * 2).sig != (A + B * 2.0).sig  # an int scalar is another structure
    assert len({(A + B).sig, (A * B).sig, (B[:, 1:] + A[:, :-1]).sig, ng.sqrt(A).sig}) == 4
    # nodes and tensors never share an id, even where both are small ints
    assert (A + B).sig < 0 <= A.sig
    # a lazy array evaluated already is a leaf of the trees built on it
    lazy = A + B
    C[:] = lazy
    lazy.value = C
    assert (lazy * 2).sig == (B * 2).sig
    # a tree holding a matrix product has an id of its own structure, and
    # says it holds one: it goes to the GEMM kernels, not as one fused kernel
    E, F = ng.empty((8, 32), np.float32), ng.empty((32, 8), np.float32)
    held = [ng.dot(E, F) + 1, ng.sqrt(ng.dot(E, F)), ng.dot(E, F) * 2 + ng.dot(E, F)]
    assert all(t.has_gemm for t in held) and not (A + B).has_gemm
    assert len({t.sig for t in held} | {(A + B).sig}) == 4
    assert (ng.dot(E, F) + 1).sig == held[0].sig and ng.sqrt(ng.dot(E, F)).has_gemm
    # a full table is cleared: a structure met again gets a new id, never an
    # old one; the old and the new id give two recipes, one kernel
    monkeypatch.setattr(signatures, "_MAX_STRUCTURES", 1)
    ng.launches.clear()
    kernels = len(ng._kernels)
    C[:] = A - B * 2
    first = (A - B * 2).sig
    (B * 3 - A).sig  # each table holds one structure now: these push out the first's
    again = (A - B * 2).sig
    assert again != first and again < first  # ids count down and never repeat
    C[:] = A - B * 2
    assert len(ng.launches) == 2 and len(ng._kernels) == kernels + 1


@pytest.mark.parametrize("start", [-(2**31) + 3, -(2**40)])
def test_structures_keep_their_ids_beyond_32_bits(monkeypatch, start):
    """On both sides of 32 bits (where ids were once paired into one int
    key) one structure keeps one id."""
    monkeypatch.setattr(signatures, "_structure_ids", itertools.count(start, -1))
    ng = RecordingGPU()
    # a layout no other test makes: every structure below is new to the tables
    A, B = ng.empty((3, 7, 11, abs(start) % 97)), ng.empty((3, 7, 11, abs(start) % 97))
    sigs = [((A + B) * (B - A)).sig for _ in range(3)] + [((A / B) - A * B).sig for _ in range(2)]
    assert sigs[0] == sigs[1] == sigs[2] == start - 2
    assert sigs[3] == sigs[4] == start - 5 < -(2**31)


@pytest.mark.parametrize("depth", [1, 63, 64, 65, 300])
def test_slots_meet_the_leaves_in_tree_order_at_any_depth(depth):
    """The slot walk recurses to a depth, then goes on with a list: the
    leaves' order is the same either way, and on both sides of a tree."""
    ng = RecordingGPU()
    A, B, C = (ng.empty((8,)) for _ in range(3))
    tree = A
    for k in range(depth):
        tree = (tree + B[k % 8]) * (k + 0.5) if k % 2 else (C * k) - tree
    leaves = optree.leaves(tree)
    values, pattern = slots.slots_of(C, tree)
    want = [leaf.value if isinstance(leaf, Scalar) else leaf.ptr for leaf in leaves]
    assert values[3:] == want and len(pattern) == 1 + sum(not isinstance(x, Scalar) for x in leaves)


@pytest.mark.parametrize("value", [2, -7, 2**70, 2.5, True, 1 + 2j])
def test_a_python_number_operand_is_the_scalar_its_constructor_makes(value):
    fast, full = python_scalar(value), Scalar(value)
    for field in ("value", "dtype", "weak_type", "operand_type", "sig", "shape", "backend"):
        assert getattr(fast, field) == getattr(full, field), field
    assert fast.sig is full.sig  # one signature per type: keys compare it by identity


def test_aliasing_is_part_of_the_situation():
    ng = RecordingGPU()
    A, C = ng.empty((100,)), ng.empty((100,))
    C[1:] = A[:-1]
    one = len(ng.launches)
    ng.launches.clear()
    A[1:] = A[:-1]  # overlapping: computed through a temporary first
    assert one == 1 and len(ng.launches) == 2


def test_the_pattern_names_each_distance_between_views_of_one_buffer():
    ng = RecordingGPU()
    C = ng.empty((63,))

    def pattern(A, first, second):
        return slots.slots_of(C, A[first:first + 63] + A[second:second + 63])[1]

    A, A2 = ng.empty((64,)), ng.empty((64,))
    views = [(0, 1), (1, 0), (0, 0), (1, 1)]
    patterns = [pattern(A, *v) for v in views]
    assert len(set(patterns)) == 4  # forward, backward, none: each its own situation
    assert patterns == [pattern(A2, *v) for v in views]  # the same for another buffer
    assert all(type(entry) is int for p in patterns for entry in p)


def test_rounding_bits_follow_the_output_tensor():
    ng = RecordingGPU()
    A = ng.empty((16,))
    H, S = ng.empty((16,), np.float16), ng.empty((16,), np.float16)
    S.rounding = 7
    H[:] = A * 2
    S[:] = A * 2
    nbits = [args[-2] for _, _, args in ng.launches]
    assert nbits == [0, 7]


def test_call_counter_advances_so_rand_draws_anew():
    ng = RecordingGPU()
    A = ng.empty((16,))
    A[:] = ng.rand()
    A[:] = ng.rand()
    calls = [args[-3] for _, _, args in ng.launches]
    assert calls[1] == calls[0] + 1


def test_temporaries_return_to_the_pool():
    ng = RecordingGPU()
    A, C = ng.empty((64, 96)), ng.empty((64, 96))
    for _ in range(3):
        C[:] = A - ng.mean(A, axis=0, keepdims=True) - ng.mean(A, axis=1, keepdims=True)
    before = ng.stats()["device_allocations"]
    for _ in range(10):
        C[:] = A - ng.mean(A, axis=0, keepdims=True) - ng.mean(A, axis=1, keepdims=True)
    assert ng.stats()["device_allocations"] == before


class _CountingPool(mempool.DeviceMemoryPool):
    """A pool that notes the size of every request."""

    def __init__(self, alloc):
        super().__init__(alloc=alloc)
        self.sizes = []

    def allocate(self, nbytes):
        self.sizes.append(nbytes)
        return super().allocate(nbytes)


def test_a_replay_takes_its_temporaries_as_one_block():
    ng = RecordingGPU()
    addresses = itertools.count(1 << 40, 1 << 28)
    ng.pool = _CountingPool(lambda n: _Raw(next(addresses)))
    ng.semaphores = _CountingPool(lambda n: _Raw(next(addresses)))
    X, Y, out = ng.empty((3, 1 << 20)), ng.empty((3, 1 << 20)), ng.empty((3, 1))
    # two split reductions of three rows: two partial kernels, two temporaries,
    # the second kernel's last block combining both (a block counter first)
    out[...] = ng.sum(X, axis=1, keepdims=True) + ng.max(Y, axis=1, keepdims=True)
    _, temps = plan.plan(ng, out, ng.sum(X, axis=1, keepdims=True) + ng.max(Y, axis=1, keepdims=True))
    ng.pool.sizes, ng.semaphores.sizes = [], []
    ng.launches.clear()
    out[...] = ng.sum(X, axis=1, keepdims=True) + ng.max(Y, axis=1, keepdims=True)
    assert len(temps) == 2 and len(ng.launches) == 2
    assert ng.pool.sizes == [] and len(ng.semaphores.sizes) == 1
    first, second = (args[0] for _, _, args in ng.launches)  # the partials' outputs
    assert second - first == -(-temps[0].nbytes // 256) * 256
    assert ng.semaphores.sizes[0] == 256 + second - first + -(-temps[1].nbytes // 256) * 256


# -- scalar types and the in-place patched argument buffer ------------------

#: dtype, expression, two scalars of one situation (each converter is exercised)
SCALAR_CASES = {
    "float32 * float": (np.float32, lambda A, B, s: A * s + B, 2.5, -0.125),
    "float16 - int": (np.float16, lambda A, B, s: A - s * B, 3, -7),
    "int8 + int": (np.int8, lambda A, B, s: A + B * s, 100, -128),
    "uint64 + big int": (np.uint64, lambda A, B, s: A + s - B, 2**64 - 1, 2**63 + 5),
    "int64 numpy scalar": (np.int64, lambda A, B, s: A * s + B, np.int64(-3), np.int64(2**40)),
    "bool and": (np.bool_, lambda A, B, s: (A & s) | B, True, False),
    "float64 compare": (np.float64, lambda A, B, s: (A < s) & (B >= 0.5), 0.25, -1.5),
}


@pytest.mark.parametrize("name", list(SCALAR_CASES))
def test_replayed_scalars_and_views_match_a_fresh_plan(name):
    dtype, build, first, second = SCALAR_CASES[name]
    ng = RecordingGPU()
    A, B = ng.empty((40, 24), dtype), ng.empty((40, 24), dtype)
    C = ng.empty((40, 24), np.result_type(build(np.ones(1, dtype), np.ones(1, dtype), first)))
    C[:] = build(A, B, first)  # records
    # new pointers, a view with an offset, and the other scalar: same situation
    A2, B2 = ng.empty((41, 24), dtype)[1:], ng.empty((40, 24), dtype)
    recipes = len(ng._dispatcher.recipes)
    got = _replayed_args(ng, C, build(A2, B2, second))
    assert got == _fresh_args(ng, C, build(A2, B2, second))
    assert len(ng._dispatcher.recipes) in (recipes, recipes + 1)


FORMATS = ["PPPiiiiddddQQqq", "PPiiifQQqq", "PPPqqqqqqqqiqQQqq", "PPiiiBdQQqq", "PPiidqdQQqq"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_patched_buffer_equals_a_full_pack(fmt):
    """Holes patched run by run give the bytes struct packs for the whole list,
    whatever padding the native alignment puts between the arguments."""
    rng = np.random.default_rng(len(fmt))
    sample = {"P": lambda: int(rng.integers(1 << 32, 1 << 40)), "i": lambda: int(rng.integers(-99, 99)),
              "q": lambda: int(rng.integers(-2**40, 2**40)), "Q": lambda: int(rng.integers(0, 2**40)),
              "d": lambda: float(rng.standard_normal()), "f": lambda: 0.5,
              "B": lambda: int(rng.integers(0, 2))}
    first, later = [sample[c]() for c in fmt], [sample[c]() for c in fmt]
    holes = [k for k in range(len(fmt)) if fmt[k] in "PdfBQ" or rng.random() < 0.3]
    slots = list(later)
    log = []
    kernel = _Kernel(type("Source", (), {"arg_format": fmt}), log)
    spec = type("Spec", (), {"args": first, "grid": (1, 1, 1), "block": (1, 1, 1)})
    # scalar holes convert (one converter a run, or mixed), the others move
    convert = {"d": launch.scalar_converter("double"), "f": float,
               "q": launch.scalar_converter("long long")}
    launcher = dispatch._Launcher(kernel, spec, [(k, k, convert.get(fmt[k], 0)) for k in holes])
    launcher.run(slots, 0)
    want = [later[k] if k in holes else first[k] for k in range(len(fmt))]
    assert log[0][2] == struct.unpack(fmt, struct.pack(fmt, *want))
    assert launcher.packed == struct.pack(fmt, *first)  # the recorded buffer stays as packed


def test_complex_constants_fill_two_holes():
    """A complex scalar is one kernel parameter packed as two doubles: a
    replay with a new value patches both, as a fresh plan packs them."""
    ng = RecordingGPU()
    A, B, C = (ng.empty((16, 24), np.complex64) for _ in range(3))
    C[:] = A * (2 + 3j) + B * 0.5 - 1j
    got = _replayed_args(ng, C, A * (-1 + 0.25j) + B * 4 - 2j)
    want = _fresh_args(ng, C, A * (-1 + 0.25j) + B * 4 - 2j)
    assert got == want
    # (-1 + 0.25j), 4 (an int, in a complex loop), 2j: real and imaginary parts
    assert got[0][7:13] == [-1.0, 0.25, 4.0, 0.0, 0.0, 2.0]
    assert ng.stats()["kernels_compiled"] == 1


def test_a_detached_factory_attaches_again_before_its_next_assignment(monkeypatch):
    """After a fork or a faulted kernel every thread's next device call must
    go through ``_attach``; the dispatcher reads the flag as its own field,
    so ``_detach_threads`` must reach it too."""
    ng = RecordingGPU()
    A, C = ng.empty((8,)), ng.empty((8,))
    C[:] = A * 2
    attached = []
    monkeypatch.setattr(ng, "_attach", lambda: attached.append(True), raising=False)
    ng._detach_threads()
    assert ng._dispatcher.attached is ng._attached and not ng._attached.ready
    C[:] = A * 2
    assert attached == [True]
    launched = ng.stats()["kernels_launched"]
    ng._attached.ready = True
    C[:] = A * 2
    assert attached == [True] and ng.stats()["kernels_launched"] == launched + 1

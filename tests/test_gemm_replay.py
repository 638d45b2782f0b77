"""Recorded GEMM plans: a repeated request replays its plan, with the same effect.

Without a GPU, the recording factory of test_gemm_plan unpacks every
launch's GemmArgs: a replayed call (new tensors, new alpha/beta) must pack
exactly what a factory planning it from scratch packs, and plan nothing
new.  On the GPU, replayed products are compared with numpy after the
pointers, scalars and views change.
"""
import numpy as np
import pytest
from conftest import assert_matches
from test_gemm_plan import GemmRecordingGPU, tensor_maps, tile_path  # noqa: F401 - fixtures

pytestmark = pytest.mark.usefixtures("tile_path")

F16, F32 = np.float16, np.float32


def _plain(ng, new, s):
    return ng.dot(new((96, 64), F32), new((64, 80), F32), new((96, 80), F32), alpha=s)


def _tma(ng, new, s):
    return ng.dot(new((256, 128), F16), new((128, 192), F16), new((256, 192), F16),
                  alpha=s, beta=2 * s)


def _swapped(ng, new, s):
    # a column-major C: the plan computes C^T = B^T A^T
    return ng.dot(new((64, 48), F16), new((48, 96), F16), new((96, 64), F16).T,
                  bias=new((96,), F32), relu=True, alpha=s)


def _epilogue(ng, new, s):
    A, B, C, bias = new((128, 64), F16), new((64, 160), F16), new((128, 160), F16), new((160,), F32)
    C[:] = ng.relu(ng.dot(A, B) * s + bias) + C * 0.5


def _split_k(ng, new, s):
    return ng.dot(new((64, 8192), F16), new((8192, 64), F16), new((64, 64), F16),
                  stats=new((2,), F32), alpha=s)


def _batched(ng, new, s):
    return ng.batched_dot(new((3, 40, 24), F32), new((3, 24, 56), F32), new((3, 40, 56), F32),
                          beta=s)


CASES = {"plain": _plain, "tma": _tma, "swapped": _swapped, "epilogue": _epilogue,
         "split-k": _split_k, "batched": _batched}


POINTERS = ("a", "b", "c", "bias", "partial", "stats")


def _args(ng, build, s, keep):
    """The launches of one request on new tensors (kept alive in ``keep``, so
    that the next request's tensors get new addresses), pointers written as
    which tensor they address."""
    made = []

    def new(shape, dtype):
        made.append(ng.empty(shape, dtype))
        return made[-1]

    ng.launches.clear()
    build(ng, new, s)
    keep.extend(made)
    where = {t.ptr: i for i, t in enumerate(made)}
    launches = []
    for name, grid, block, args, _ in ng.launches:
        args = {k: v for k, v in args.items() if k != "call"}  # differs per factory
        for k in POINTERS:
            args[k] = where.get(args[k], "workspace" if args[k] else 0)
        launches.append((name, grid, block, args))
    return launches


@pytest.mark.parametrize("case", list(CASES))
def test_replay_packs_what_a_fresh_plan_packs(tensor_maps, case):  # noqa: F811
    build, keep = CASES[case], []
    ng = GemmRecordingGPU()
    first = _args(ng, build, 1.0, keep)  # records the plan
    plans = ng.stats()["gemm_plans"]
    replayed = _args(ng, build, 0.25, keep)  # new tensors, new scalars
    assert ng.stats()["gemm_plans"] == plans, "the second call planned again"
    assert replayed != first
    assert replayed == _args(GemmRecordingGPU(), build, 0.25, keep)


def test_tensor_maps_are_encoded_only_when_a_pointer_moves(tensor_maps):  # noqa: F811
    ng = GemmRecordingGPU()
    A, B, C = ng.empty((256, 128), F16), ng.empty((128, 192), F16), ng.empty((256, 192), F16)
    ng.dot(A, B, C)
    assert len(tensor_maps) == 2
    for _ in range(3):
        ng.dot(A, B, C, alpha=0.5)
    assert len(tensor_maps) == 2, "same operands: the descriptors are reused"
    A2 = ng.empty((256, 128), F16)
    ng.dot(A2, B, C)
    assert len(tensor_maps) == 3 and tensor_maps[-1]["ptr"] == A2.ptr


def test_structure_changes_record_new_plans(tensor_maps):  # noqa: F811
    ng = GemmRecordingGPU()
    A, B, C = ng.empty((96, 64), F32), ng.empty((64, 80), F32), ng.empty((96, 80), F32)
    ng.dot(A, B, C)
    ng.dot(A, B, C, relu=True)                   # an epilogue flag
    ng.dot(A, B, C, beta=1.0)                    # beta switches C's term on
    ng.dot(A[:48], B, C[:48])                    # a shape
    ng.dot(A, ng.empty((80, 64), F32).T, C)      # a layout
    assert ng.stats()["gemm_plans"] == 5
    ng.dot(A, B, C, alpha=3.0, beta=0.0)
    assert ng.stats()["gemm_plans"] == 5


def test_shared_buffers_are_not_recorded(tensor_maps):  # noqa: F811
    """Operands in one buffer (here A.T @ A) take the checked path every time."""
    ng = GemmRecordingGPU()
    A, C = ng.empty((64, 96), F32), ng.empty((96, 96), F32)
    for _ in range(2):
        ng.dot(A.T, A, C)
    assert ng.stats().get("gemm_plans", 0) == 0


def test_split_k_workspace_returns_at_the_next_gemm_even_if_held(tensor_maps):  # noqa: F811
    """The previous GEMM's workspace is freed when the next one launches, not
    when its record happens to be collected (a held frame or record must not
    leak device memory)."""
    ng = GemmRecordingGPU()
    # float32: the FFMA kernels split K in two kernels (sm90 ones over a cluster)
    A, B, C = ng.empty((64, 8192), F32), ng.empty((8192, 64), F32), ng.empty((64, 64), F32)
    held = []
    for _ in range(4):
        ng.dot(A, B, C)
        held.append(ng.last_gemm)
    assert all(r.workspace is not None for r in held)
    stats = ng.pool.stats()
    assert stats["device_allocations"] == 3 + 2 and stats["blocks_in_use"] == 3 + 1


def test_errors_still_raise_after_a_plan_is_recorded(tensor_maps):  # noqa: F811
    ng = GemmRecordingGPU()
    A, B, C = ng.empty((96, 64), F32), ng.empty((64, 80), F32), ng.empty((96, 80), F32)
    ng.dot(A, B, C)
    with pytest.raises(TypeError, match="alpha must be a real number"):
        ng.dot(A, B, C, alpha="2")
    with pytest.raises(ValueError, match="not aligned"):
        ng.dot(A, ng.empty((65, 80), F32), C)
    with pytest.raises(TypeError, match="one dtype"):
        ng.dot(A, ng.empty((64, 80), F16), C)


# -- on the GPU: values after pointers, scalars and views change ---------------

def _gpu_operands(ng, rng, shapes, dtype):
    hosts = [rng.standard_normal(s).astype(dtype) for s in shapes]
    return hosts, [ng.array(h) for h in hosts]


@pytest.mark.parametrize("dtype", [F16, F32])
def test_replayed_products_match_numpy(gpu_ng, dtype):
    ng, rng = gpu_ng, np.random.default_rng(7)
    for step, (alpha, beta) in enumerate([(1.0, 0.0), (0.5, 1.5), (-2.0, 0.25), (1.0, 0.0)]):
        (a, b, c), (A, B, C) = _gpu_operands(ng, rng, [(130, 72), (72, 200), (130, 200)], dtype)
        bias = rng.standard_normal(200).astype(np.float32)
        BIAS = ng.array(bias)
        if beta == 0:
            ng.dot(A, B, C, alpha=alpha, bias=BIAS, relu=True)
            ref = np.maximum(alpha * (a.astype(np.float64) @ b) + bias, 0)
        else:
            ng.dot(A, B, C, alpha=alpha, beta=beta, bias=BIAS, relu=True)
            ref = np.maximum(alpha * (a.astype(np.float64) @ b) + bias, 0) + beta * c
        assert_matches(C.get(), ref, dtype, scale=np.abs(ref).mean())
        if step == 0:
            plans = ng.stats()["gemm_plans"]
    assert ng.stats()["gemm_plans"] == plans + 1  # beta != 0 is a second situation


def test_replayed_epilogue_assignment_over_views(gpu_ng):
    ng, rng = gpu_ng, np.random.default_rng(8)
    (a, b, c), (A, B, C) = _gpu_operands(ng, rng, [(256, 128), (128, 96), (256, 96)], F16)
    bias = ng.array(np.zeros(96, np.float32))
    for lo in (0, 64, 128):  # same shapes and strides, new pointers: one plan
        view_a, view_c = A[lo:lo + 128], C[lo:lo + 128]
        view_c[:] = ng.relu(ng.dot(view_a, B) * 0.5 + bias)
        ref = np.maximum(0.5 * (a[lo:lo + 128].astype(np.float64) @ b), 0)
        assert_matches(view_c.get(), ref, F16, scale=np.abs(ref).mean())
        if lo == 0:
            plans = ng.stats()["gemm_plans"]
    assert ng.stats()["gemm_plans"] == plans

"""The chunks of a batch and their workspace views, where the transform
routes' kernels write (gpuarray/conv/staging.py).  Backend-neutral: runs
on the CPU factory (and the GPU's where there is one).  ``image_ptr`` is
checked by the routes' launch tests (test_conv_winograd.py: the second
chunk's pointers)."""
import numpy as np

from gpuarray.conv.staging import transform_chunks

F32 = np.dtype(np.float32)


def _address(t):
    return t.buffer_ptr() + t.offset


def test_chunks_cut_one_workspace_per_width(ng):
    points, per_image, widths = 4, 3, (2, 5)
    budget = 2 * points * per_image * sum(widths) * F32.itemsize  # two images a chunk
    chunks = list(transform_chunks(ng, 5, per_image, widths, points, budget))
    assert [(n0, n1, tiles) for n0, n1, tiles, _ in chunks] == [(0, 2, 6), (2, 4, 6), (4, 5, 3)]
    first, second, last = (spaces for *_, spaces in chunks)
    for w, space in zip(widths, first):
        assert space.shape == (points, 6, w) and space.dtype == F32 and space.is_contiguous
    # full chunks reuse the workspaces; the last, shorter one is their start, contiguous
    assert all(a is b for a, b in zip(first, second))
    for w, space, whole in zip(widths, last, first):
        assert space.shape == (points, 3, w) and space.is_contiguous
        assert _address(space) == _address(whole)


def test_one_chunk_when_the_batch_fits(ng):
    chunks = list(transform_chunks(ng, 3, 2, (4,), 16, 1 << 20))
    assert [(n0, n1, tiles) for n0, n1, tiles, _ in chunks] == [(0, 3, 6)]
    assert chunks[0][3][0].shape == (16, 6, 4)


def test_a_chunk_holds_at_least_one_image(ng):
    chunks = list(transform_chunks(ng, 2, 4, (8,), 16, 1))  # a budget below one image
    assert [(n0, n1) for n0, n1, *_ in chunks] == [(0, 1), (1, 2)]

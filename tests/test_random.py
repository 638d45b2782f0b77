"""ng.default_rng (gpuarray.core.random): shapes and dtypes, ranges, seeding,
freshness, loose statistics on 1e5 samples, sampling, and numpy's errors.

Every test runs on both factories (``ng``: the GPU case skips without a GPU).
Statistical bounds are many standard errors wide: a failure means a wrong
transformation, not bad luck.
"""
import math

import numpy as np
import pytest

from conftest import new_factory

N = 100_000


def host(t):
    return np.asarray(t.get())


# -- shapes and dtypes ---------------------------------------------------------
@pytest.mark.parametrize("size, shape", [(None, ()), (5, (5,)), ((2, 3), (2, 3)), ([4, 1], (4, 1)),
                                         (np.int64(3), (3,)), ((), ()), ((0, 2), (0, 2))])
def test_size_forms(ng, size, shape):
    rng = ng.default_rng(0)
    for t in (rng.random(size), rng.uniform(size=size), rng.normal(size=size),
              rng.standard_normal(size), rng.exponential(size=size), rng.integers(9, size=size),
              rng.choice(4, size), rng.choice(np.arange(3.0), size)):
        assert t.shape == shape
        assert host(t).shape == shape


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_dtypes(ng, dtype):
    rng = ng.default_rng(1)
    assert rng.random(3).dtype == np.float64  # numpy's default
    for t in (rng.random(3, dtype), rng.standard_normal(3, dtype), rng.uniform(size=3, dtype=dtype),
              rng.normal(size=3, dtype=dtype), rng.exponential(size=3, dtype=dtype)):
        assert t.dtype == dtype


def test_float64_resolution(ng):
    # float64 draws carry 53 random bits: most are not multiples of 2**-24 (float32's grid)
    x = host(ng.default_rng(2).random(1000))
    assert np.mean(x * 2.0 ** 24 != np.floor(x * 2.0 ** 24)) > 0.99
    assert np.mean(x * 2.0 ** 48 != np.floor(x * 2.0 ** 48)) > 0.9
    f = host(ng.default_rng(2).random(1000, np.float32))
    assert np.all(f * np.float32(2 ** 24) == np.floor(f * np.float32(2 ** 24)))


# -- ranges --------------------------------------------------------------------
@pytest.mark.parametrize("low, high, dtype", [
    (0, 10, np.int64), (-5, 5, np.int8), (250, 256, np.uint8), (0, 2, np.bool_),
    (-1000, 70000, np.int32), (0, 2 ** 40, np.int64), (-2 ** 63, 2 ** 63, np.int64),
    (0, 2 ** 64, np.uint64), (2 ** 63 - 3, 2 ** 63 + 5, np.uint64), (7, 8, np.int16)])
def test_integers_in_range(ng, low, high, dtype):
    x = host(ng.default_rng(3).integers(low, high, 20_000, dtype=dtype))
    assert x.dtype == dtype
    assert int(x.min()) >= low and int(x.max()) < high
    if high - low <= 10:
        assert len(np.unique(x)) == high - low  # every value reached
    else:  # spread over the range: the extremes' quarters are both hit
        assert int(x.min()) < low + (high - low) // 4 and int(x.max()) > high - (high - low) // 4


def test_integers_forms(ng):
    rng = ng.default_rng(4)
    x = host(rng.integers(6, size=1000))  # high None: [0, low)
    assert x.min() == 0 and x.max() == 5
    y = host(rng.integers(3, 5, size=1000, endpoint=True))
    assert set(np.unique(y)) == {3, 4, 5}
    assert host(rng.integers(0, 0, size=3, endpoint=True)).tolist() == [0, 0, 0]
    assert host(rng.integers(2 ** 64 - 1, size=4, dtype=np.uint64, endpoint=True)).dtype == np.uint64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_in_range(ng, dtype):
    x = host(ng.default_rng(5).uniform(-2.0, 3.0, N, dtype=dtype))
    assert x.min() >= -2.0 and x.max() < 3.0
    assert x.min() < -1.9 and x.max() > 2.9
    assert np.all(host(ng.default_rng(5).uniform(1.5, 1.5, 4)) == 1.5)
    r = host(ng.default_rng(5).random(N, dtype))
    assert r.min() >= 0 and r.max() < 1


# -- seeding and freshness -----------------------------------------------------
def test_same_seed_same_stream(ng):
    draws = []
    for _ in range(2):
        rng = ng.default_rng(1234)
        draws.append([host(rng.random(50)), host(rng.normal(size=50)), host(rng.integers(100, size=50)),
                      host(rng.choice(5, 50, p=[0.2] * 5))])
    for a, b in zip(*draws):
        np.testing.assert_array_equal(a, b)
    seq = np.random.SeedSequence(1234)
    np.testing.assert_array_equal(host(ng.default_rng(seq).random(50)), draws[0][0])
    assert not np.array_equal(host(ng.default_rng(1235).random(50)), draws[0][0])
    assert not np.array_equal(host(ng.default_rng().random(50)), host(ng.default_rng().random(50)))


def test_fresh_numbers_each_call(ng):
    rng = ng.default_rng(6)
    a, b = host(rng.random(100)), host(rng.random(100))
    assert not np.array_equal(a, b)
    assert not np.array_equal(host(rng.integers(1000, size=100)), host(rng.integers(1000, size=100)))
    # the draws of one call are not repeated inside it either
    assert len(np.unique(host(rng.random(1000)))) == 1000


def test_rand_stream_undisturbed(factory_kind):
    """Generator draws leave ng.rand()'s own sequence exactly as it was."""
    def rand_draws(draw_between):
        ng = new_factory(factory_kind, seed=7)
        first = host(ng.evaluate(ng.rand() + ng.zeros(64)))
        if draw_between:
            rng = ng.default_rng(8)
            rng.normal(size=100), rng.integers(5, size=10), rng.choice(3, 4, p=[0.5, 0.5, 0])
        return first, host(ng.evaluate(ng.rand() + ng.zeros(64)))
    for a, b in zip(rand_draws(False), rand_draws(True)):
        np.testing.assert_array_equal(a, b)


def test_default_rng_of_a_generator(ng):
    rng = ng.default_rng(9)
    assert ng.default_rng(rng) is rng
    assert "Generator" in repr(rng)


# -- statistics ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_moments(ng, dtype):
    x = host(ng.default_rng(10).normal(3.0, 2.0, N, dtype=dtype)).astype(np.float64)
    assert abs(x.mean() - 3.0) < 0.05   # standard error 0.0063
    assert abs(x.std() - 2.0) < 0.05
    z = host(ng.default_rng(11).standard_normal(N, dtype)).astype(np.float64)
    assert abs(z.mean()) < 0.025 and abs(z.std() - 1.0) < 0.025
    assert abs(np.mean(np.abs(z) < 1.0) - 0.6827) < 0.01
    assert abs(np.mean(z ** 3)) < 0.1 and abs(np.mean(z ** 4) - 3.0) < 0.2  # symmetric, normal tails


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exponential_mean(ng, dtype):
    x = host(ng.default_rng(12).exponential(2.5, N, dtype=dtype)).astype(np.float64)
    assert x.min() >= 0 and not np.signbit(x).any()
    assert abs(x.mean() - 2.5) < 0.06 and abs(x.std() - 2.5) < 0.1
    assert np.all(host(ng.default_rng(12).exponential(0.0, 5)) == 0)


def chi_square(counts):
    expected = counts.sum() / len(counts)
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("low, high", [(0, 10), (-3, 250), (0, 70_000), (5, 2 ** 40 + 5)])
def test_integers_histogram(ng, low, high):
    x = host(ng.default_rng(13).integers(low, high, N)) - low
    span = high - low
    bins = np.minimum(x * 16 // span, 15) if span > 16 else x   # 16 equal-width bins
    counts = np.bincount(bins, minlength=min(span, 16))
    assert chi_square(counts) < 80  # 9..15 degrees of freedom: mean ~15, this is p < 1e-10


def test_uniform_histogram(ng):
    x = host(ng.default_rng(14).random(N))
    assert chi_square(np.bincount((x * 20).astype(int), minlength=20)) < 90
    assert abs(x.mean() - 0.5) < 0.005


def test_choice_with_p_frequencies(ng):
    p = np.array([0.1, 0.0, 0.25, 0.6, 0.05, 0.0])
    x = host(ng.default_rng(15).choice(6, N, p=p))
    freq = np.bincount(x, minlength=6) / N
    assert freq[1] == 0 and freq[5] == 0  # zero probability: never drawn
    np.testing.assert_allclose(freq, p, atol=0.01)
    assert host(ng.default_rng(15).choice(3, 5, p=[0, 0, 1])).tolist() == [2] * 5


# -- sampling ------------------------------------------------------------------
def test_choice_from_arrays(ng):
    rng = ng.default_rng(16)
    values = np.array([1.5, -0.0, np.nan, np.inf, -7.0])
    x = host(rng.choice(values, 400))
    assert x.dtype == np.float64
    hits = [np.isnan(x)] + [(x == v) & (np.signbit(x) == np.signbit(v)) for v in values[[0, 1, 3, 4]]]
    assert np.all(np.any(hits, axis=0)) and all(h.any() for h in hits)  # exact values, -0.0 kept
    small = np.array([-3, 120, 7], np.int8)
    assert set(host(rng.choice(small, 200)).tolist()) == {-3, 120, 7}
    assert set(host(rng.choice(ng.array([True, False]), 50)).tolist()) == {True, False}
    assert host(rng.choice(np.array([4, 9]))).shape == ()
    table = np.arange(12).reshape(3, 4)
    rows = host(rng.choice(table, 5))
    assert rows.shape == (5, 4) and all(r.tolist() in table.tolist() for r in rows)
    cols = host(rng.choice(ng.array(table), (2, 3), axis=1))
    assert cols.shape == (3, 2, 3) and np.all(cols % 4 == cols[:1] % 4)   # the same columns in each row
    assert np.all(cols // 4 == [[[0]], [[1]], [[2]]])


def test_permutation_and_shuffle(ng):
    rng = ng.default_rng(17)
    perms = [host(rng.permutation(50)) for _ in range(3)]
    for p in perms:
        assert sorted(p.tolist()) == list(range(50))
    assert not np.array_equal(perms[0], perms[1])
    assert host(rng.permutation(0)).shape == (0,) and host(rng.permutation(1)).tolist() == [0]
    table = np.arange(20.0).reshape(5, 4)
    rows = host(rng.permutation(table))
    assert sorted(rows[:, 0].tolist()) == table[:, 0].tolist() and np.all(rows - rows[:, :1] == [0, 1, 2, 3])
    cols = host(rng.permutation(ng.array(table), axis=1))
    assert np.all(np.sort(cols, axis=1) == table)
    t = ng.array(np.arange(30, dtype=np.int32))
    rng.shuffle(t)
    assert sorted(host(t).tolist()) == list(range(30)) and t.dtype == np.int32
    large = host(rng.permutation(100_000))  # one radix sort of random keys
    assert np.array_equal(np.sort(large), np.arange(100_000))
    assert abs(np.corrcoef(large, np.arange(100_000))[0, 1]) < 0.02


def test_choice_without_replacement(ng):
    rng = ng.default_rng(23)
    sample = host(rng.choice(1000, (4, 50), replace=False))
    assert sample.shape == (4, 50) and len(set(sample.ravel().tolist())) == 200
    assert sample.min() >= 0 and sample.max() < 1000
    p = np.zeros(10)
    p[[1, 4, 7]] = [0.2, 0.5, 0.3]
    weighted = host(rng.choice(10, 3, replace=False, p=p))
    assert sorted(weighted.tolist()) == [1, 4, 7]
    letters = np.array([10.0, 20.0, 30.0, 40.0])
    picked = host(rng.choice(letters, 2, replace=False))
    assert len(set(picked.tolist())) == 2 and set(picked.tolist()) <= set(letters.tolist())
    # the first draw follows p: the heaviest entry comes first most often
    firsts = [int(host(rng.choice(3, 1, replace=False, p=[0.8, 0.1, 0.1]))[0]) for _ in range(200)]
    assert 0.7 < firsts.count(0) / 200 < 0.9


# -- errors --------------------------------------------------------------------
@pytest.mark.parametrize("call, exc, match", [
    (lambda r: r.integers(0), ValueError, "^high <= 0$"),
    (lambda r: r.integers(-1, endpoint=True), ValueError, "^high < 0$"),
    (lambda r: r.integers(5, 5), ValueError, "^low >= high$"),
    (lambda r: r.integers(5, 4, endpoint=True), ValueError, "^low > high$"),
    (lambda r: r.integers(-1, 10, dtype=np.uint8), ValueError, "^low is out of bounds for uint8$"),
    (lambda r: r.integers(0, 257, dtype=np.uint8), ValueError, "^high is out of bounds for uint8$"),
    (lambda r: r.integers(0, 3, dtype=bool), ValueError, "^high is out of bounds for bool$"),
    (lambda r: r.integers(2 ** 64, dtype=np.int64), ValueError, "high is out of bounds for int64"),
    (lambda r: r.integers(0, 10, dtype=np.float64), TypeError,
     r"Unsupported dtype dtype\('float64'\) for integers"),
    (lambda r: r.integers(0.5, 3), TypeError, "integer"),
    (lambda r: r.random(3, np.float16), TypeError, r"Unsupported dtype dtype\('float16'\) for random"),
    (lambda r: r.random(3, np.int32), TypeError, "for random"),
    (lambda r: r.standard_normal(3, np.float16), TypeError, "for standard_normal"),
    (lambda r: r.random(-1), ValueError, "negative dimensions are not allowed"),
    (lambda r: r.random((2, -1)), ValueError, "negative dimensions are not allowed"),
    (lambda r: r.random(2.0), TypeError, "expected a sequence of integers or a single integer, got '2.0'"),
    (lambda r: r.random(True), TypeError, "expected a sequence of integers"),
    (lambda r: r.normal(0, -1), ValueError, "^scale < 0$"),
    (lambda r: r.normal(0, -0.0), ValueError, "^scale < 0$"),
    (lambda r: r.normal(0, "a"), ValueError, "could not convert string to float"),
    (lambda r: r.normal(np.zeros(3)), NotImplementedError, "loc must be a scalar"),
    (lambda r: r.exponential(-2.0), ValueError, "^scale < 0$"),
    (lambda r: r.uniform(0, np.inf), OverflowError, "high - low range exceeds valid bounds"),
    (lambda r: r.uniform(-1e308, 1e308), OverflowError, "high - low range exceeds valid bounds"),
    (lambda r: r.uniform(np.nan, 1), OverflowError, "high - low range exceeds valid bounds"),
    (lambda r: r.uniform(3, 1), ValueError, r"^high - low < 0$"),
    (lambda r: r.choice(0), ValueError, "a must be a positive integer unless no samples are taken"),
    (lambda r: r.choice(-1, 3), ValueError, "a must be a positive integer unless no samples are taken"),
    (lambda r: r.choice([]), ValueError, "a cannot be empty unless no samples are taken"),
    (lambda r: r.choice(2.5), ValueError, "a must be a sequence or an integer, not <class 'float'>"),
    (lambda r: r.choice(3, p=[0.5, 0.5]), ValueError, "a and p must have same size"),
    (lambda r: r.choice(3, p=[[0.5, 0.5, 0]]), ValueError, "p must be 1-dimensional"),
    (lambda r: r.choice(3, p=[0.5, 0.6, -0.1]), ValueError, "Probabilities are not non-negative"),
    (lambda r: r.choice(3, p=[0.5, 0.6, 0.1]), ValueError, "Probabilities do not sum to 1"),
    (lambda r: r.choice(3, p=[0.5, np.nan, 0.5]), ValueError, "Probabilities contain NaN"),
    (lambda r: r.choice(3, 5, replace=False), ValueError, "Cannot take a larger sample than population"),
    (lambda r: r.choice(3, 3, replace=False, p=[0.5, 0.5, 0.0]), ValueError,
     "Fewer non-zero entries in p than size"),
    (lambda r: r.choice(np.ones((2, 3)), 2, axis=2), np.exceptions.AxisError, "axis 2 is out of bounds"),
    (lambda r: r.permutation(np.array(5)), np.exceptions.AxisError, "axis 0 is out of bounds"),
    (lambda r: r.shuffle(np.arange(4)), TypeError, "shuffle needs a tensor of this factory"),
])
def test_errors(ng, call, exc, match):
    with pytest.raises(exc, match=match):
        call(ng.default_rng(0))


@pytest.mark.parametrize("seed, exc", [(-1, ValueError), (1.5, TypeError), ("a", TypeError)])
def test_bad_seeds(ng, seed, exc):
    with pytest.raises(exc):
        ng.default_rng(seed)


def test_empty_samples_allowed(ng):
    rng = ng.default_rng(0)
    assert rng.choice(0, 0).shape == (0,) and rng.choice([], (2, 0)).shape == (2, 0)
    assert math.prod(rng.integers(5, size=(3, 0)).shape) == 0

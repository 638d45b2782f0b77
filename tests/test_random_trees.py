"""Seeded randomized differential test: N_TREES random expression trees,
evaluated by the factory and by numpy (float64 oracle).

Trees come from a small grammar so structures repeat:
  leaves      tensors of rank 1-3 whose shapes broadcast against the tree's
              shape, seen through views (transposes, steps, negative steps,
              offsets, an integer index) and Python scalars;
  unary       neg, abs, square, tanh, sin, sigmoid, sqrt(abs(x) + 1);
  binary      + - * maximum minimum, x / (abs(y) + 1);
  reductions  sum, mean, max, min over random axes, keepdims=True;
  where       where(leaf > leaf, x, y).
dtypes: float32, float16, float64 and int32 trees (int trees use only exact,
non-dividing ops and are filtered so nothing overflows); some float trees mix
in int32 leaves (numpy promotion applies).

Each tree is generated from (BASE_SEED, index) alone, so a failing tree can be
rebuilt and printed with ``describe(make_tree(index))``.
"""

import numpy as np
import pytest

N_TREES = 1000
N_CHUNKS = 10
BASE_SEED = 20251121

DIMS = [1, 2, 3, 4, 5, 7]
FLOAT_SCALARS = [0.5, 2.0, -1.5, 3, 0.25]
INT_SCALARS = [1, 2, 3, -2]
UNARY_FLOAT = ["neg", "abs", "square", "tanh", "sin", "sigmoid", "sqrt1"]
UNARY_INT = ["neg", "abs", "square"]
BINARY_FLOAT = ["add", "sub", "mul", "maximum", "minimum", "div1"]
BINARY_INT = ["add", "sub", "mul", "maximum", "minimum"]
RED_FLOAT = ["sum", "mean", "max", "min"]
RED_INT = ["sum", "max", "min"]
MAG_LIMIT = {"float16": 8.0, "float32": 1e3, "float64": 1e3, "int32": 2.0 ** 30}
RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}
EPS_WORK = {"float16": 2.0 ** -24, "float32": 2.0 ** -24, "float64": 2.0 ** -53}


# --------------------------------------------------------------------------
# generation
# --------------------------------------------------------------------------


class Leaf:
    """A host array ``base`` seen through ``perm`` (transpose), per-axis
    ``slices`` and an optional leading integer ``index``."""

    def __init__(self, rng, shape, dtype):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        r = len(shape)
        kinds = ["full", "step", "neg", "negstep", "offset"]
        self.slices = []
        pre = []  # shape after the transpose, before slicing
        for d in shape:
            k = kinds[rng.integers(len(kinds))] if rng.random() < 0.5 else "full"
            if k == "full":
                self.slices.append(slice(None))
                pre.append(d)
            elif k == "step":
                self.slices.append(slice(None, None, 2))
                pre.append(2 * d)
            elif k == "neg":
                self.slices.append(slice(None, None, -1))
                pre.append(d)
            elif k == "negstep":
                self.slices.append(slice(None, None, -2))
                pre.append(2 * d)
            else:
                self.slices.append(slice(1, None))
                pre.append(d + 1)
        self.perm = None
        if r >= 2 and rng.random() < 0.35:
            self.perm = tuple(int(p) for p in rng.permutation(r))
        base_shape = [0] * r
        for j in range(r):
            base_shape[self.perm[j] if self.perm else j] = pre[j]
        self.index = None
        if rng.random() < 0.1:
            self.index = int(rng.integers(3))
            base_shape = [3] + base_shape
        if self.dtype.kind in "iu":
            self.base = rng.integers(-5, 6, size=base_shape).astype(self.dtype)
        else:
            self.base = rng.uniform(-1, 1, size=base_shape).astype(self.dtype)

    def view(self, x):
        if self.index is not None:
            x = x[self.index]
        if self.perm is not None:
            x = x.transpose(self.perm)
        return x[tuple(self.slices)]

    def describe(self):
        s = f"{self.dtype.name}{list(self.base.shape)}"
        if self.index is not None:
            s += f"[{self.index}]"
        if self.perm is not None:
            s += f".transpose{self.perm}"
        if any(sl != slice(None) for sl in self.slices):
            parts = []
            for sl in self.slices:
                a = "" if sl.start is None else str(sl.start)
                b = "" if sl.step is None else f"::{sl.step}"
                parts.append(f"{a}:" if not b else f"{a}{b}")
            s += "[" + ",".join(parts) + "]"
        return s


def _broadcast(sa, sb):
    return tuple(np.broadcast_shapes(sa, sb))


class Tree:
    def __init__(self, index):
        self.index = index
        self.rng = np.random.default_rng([BASE_SEED, index])
        rng = self.rng
        self.kind = ["float32", "float16", "float64", "int32"][
            rng.choice(4, p=[0.35, 0.2, 0.2, 0.25])]
        self.dtype = np.dtype(self.kind)
        self.mix_int = self.kind != "int32" and rng.random() < 0.15
        rank = int(rng.integers(1, 4))
        self.target = tuple(int(DIMS[rng.integers(len(DIMS))]) for _ in range(rank))
        self.leaves = []
        self.max_depth = int(rng.integers(1, 4))
        self.root, self.shape = self._node(0, top=True)
        self.out_mode = ["assign", "assign", "assign", "get", "view"][rng.integers(5)]

    # leaves ---------------------------------------------------------------
    def _leaf_shape(self):
        rng = self.rng
        shape = [d if rng.random() < 0.75 else 1 for d in self.target]
        drop = int(rng.integers(0, len(shape))) if rng.random() < 0.3 else 0
        return tuple(shape[drop:])

    def _new_leaf(self, dtype=None):
        if dtype is None:
            dtype = self.dtype
            if self.mix_int and self.rng.random() < 0.3:
                dtype = np.dtype(np.int32)
        leaf = Leaf(self.rng, self._leaf_shape(), dtype)
        self.leaves.append(leaf)
        return ("leaf", len(self.leaves) - 1), leaf.shape

    def _scalar(self):
        pool = INT_SCALARS if self.kind == "int32" else FLOAT_SCALARS
        return ("scalar", pool[self.rng.integers(len(pool))]), ()

    # internal nodes -----------------------------------------------------------
    def _node(self, depth, top=False):
        rng = self.rng
        if depth >= self.max_depth or (not top and rng.random() < 0.25):
            return self._new_leaf()
        is_int = self.kind == "int32"
        r = rng.random()
        if r < 0.25:
            ops = UNARY_INT if is_int else UNARY_FLOAT
            child, shape = self._node(depth + 1)
            return ("un", ops[rng.integers(len(ops))], child), shape
        if r < 0.7:
            ops = BINARY_INT if is_int else BINARY_FLOAT
            op = ops[rng.integers(len(ops))]
            left, sl = self._node(depth + 1)
            if rng.random() < 0.25:
                right, sr = self._scalar()
                if rng.random() < 0.5 and op != "div1":
                    left, right, sl, sr = right, left, sr, sl
            else:
                right, sr = self._node(depth + 1)
            return ("bin", op, left, right), _broadcast(sl, sr)
        if r < 0.9:
            ops = RED_INT if is_int else RED_FLOAT
            op = ops[rng.integers(len(ops))]
            child, shape = self._node(depth + 1)
            nd = len(shape)
            if rng.random() < 0.2:
                axis = None
                axes = tuple(range(nd))
            else:
                k = int(rng.integers(1, nd + 1))
                axes = tuple(sorted(int(a) for a in rng.choice(nd, size=k, replace=False)))
                if k == 1:
                    axis = axes[0] - nd if rng.random() < 0.3 else axes[0]
                else:
                    axis = tuple(axes)
            rng.random()  # once chose keepdims explicit or by default; keeps the trees drawn
            out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
            return ("red", op, axis, child), out_shape
        ca, sa = self._new_leaf(self.dtype)
        cb, sb = self._new_leaf(self.dtype)
        x, sx = self._node(depth + 1)
        y, sy = self._node(depth + 1)
        shape = _broadcast(_broadcast(sa, sb), _broadcast(sx, sy))
        return ("where", ca, cb, x, y), shape


def make_tree(index):
    """Tree ``index``; re-drawn (deterministically) until its magnitudes fit."""
    for attempt in range(50):
        tree = Tree(index * 1000 + attempt)
        tree.index = index
        f64, mag = evaluate_numpy(tree, "f64")
        if np.all(np.isfinite(f64)) and mag <= MAG_LIMIT[tree.kind]:
            tree.f64, tree.mag = f64, mag
            return tree
    raise RuntimeError(f"could not draw tree {index}")


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------


def _apply(L, node, leaf_value, track=None):
    kind = node[0]
    if kind == "leaf":
        v = leaf_value(node[1])
    elif kind == "scalar":
        return node[1]
    elif kind == "un":
        x = _apply(L, node[2], leaf_value, track)
        op = node[1]
        if op == "neg":
            v = -x
        elif op == "abs":
            v = abs(x)
        elif op == "square":
            v = L.square(x)
        elif op == "tanh":
            v = L.tanh(x)
        elif op == "sin":
            v = L.sin(x)
        elif op == "sigmoid":
            v = L.sigmoid(x) if L is not np else 1 / (1 + np.exp(-x))
        elif op == "sqrt1":
            v = L.sqrt(abs(x) + 1)
        else:  # pragma: no cover
            raise AssertionError(op)
    elif kind == "bin":
        a = _apply(L, node[2], leaf_value, track)
        b = _apply(L, node[3], leaf_value, track)
        op = node[1]
        if op == "add":
            v = a + b
        elif op == "sub":
            v = a - b
        elif op == "mul":
            v = a * b
        elif op == "maximum":
            v = L.maximum(a, b)
        elif op == "minimum":
            v = L.minimum(a, b)
        elif op == "div1":
            v = a / (abs(b) + 1)
        else:  # pragma: no cover
            raise AssertionError(op)
    elif kind == "red":
        _, op, axis, child = node
        x = _apply(L, child, leaf_value, track)
        v = getattr(L, op)(x, axis=axis, keepdims=True)
    elif kind == "where":
        a = _apply(L, node[1], leaf_value, track)
        b = _apply(L, node[2], leaf_value, track)
        x = _apply(L, node[3], leaf_value, track)
        y = _apply(L, node[4], leaf_value, track)
        v = L.where(a > b, x, y)
    else:  # pragma: no cover
        raise AssertionError(kind)
    if track is not None:
        arr = np.abs(np.asarray(v, dtype=np.float64))
        if arr.size:
            track[0] = max(track[0], float(arr.max()))
    return v


def evaluate_numpy(tree, mode):
    """mode 'f64': float64 oracle (returns values, max magnitude);
    'native': the tree's own dtypes (for the result dtype);
    'work': fp16 leaves as float32 (fp16 math runs in fp32), others native."""
    def leaf_value(i):
        leaf = tree.leaves[i]
        base = leaf.base
        if mode == "f64":
            base = base.astype(np.float64)
        elif mode == "work" and base.dtype == np.float16:
            base = base.astype(np.float32)
        return leaf.view(base)
    track = [0.0] if mode == "f64" else None
    with np.errstate(all="ignore"):
        v = np.asarray(_apply(np, tree.root, leaf_value, track))
    if mode == "f64":
        return v, track[0]
    return v


def describe(tree, node=None):
    node = tree.root if node is None else node
    kind = node[0]
    if kind == "leaf":
        return tree.leaves[node[1]].describe()
    if kind == "scalar":
        return repr(node[1])
    if kind == "un":
        return f"{node[1]}({describe(tree, node[2])})"
    if kind == "bin":
        return f"{node[1]}({describe(tree, node[2])}, {describe(tree, node[3])})"
    if kind == "red":
        return f"{node[1]}({describe(tree, node[3])}, axis={node[2]}, keepdims=True)"
    return (f"where({describe(tree, node[1])} > {describe(tree, node[2])}, "
            f"{describe(tree, node[3])}, {describe(tree, node[4])})")


def _rtol_of(dtypes):
    floats = [np.dtype(d).name for d in dtypes if np.dtype(d).kind == "f"]
    for name in ("float16", "float32", "float64"):
        if name in floats:
            return RTOL[name], name
    return None, None


def run_tree(ng, tree):
    tensors = {}

    def leaf_value(i):
        if i not in tensors:
            tensors[i] = ng.array(tree.leaves[i].base)
        return tree.leaves[i].view(tensors[i])

    native = evaluate_numpy(tree, "native")
    want_dtype = native.dtype
    expr = _apply(ng, tree.root, leaf_value)
    assert tuple(expr.shape) == tree.f64.shape, f"shape {expr.shape} != {tree.f64.shape}"
    assert expr.dtype == want_dtype, f"dtype {expr.dtype} != numpy {want_dtype}"

    if tree.out_mode == "get":
        got = np.asarray(expr.get())
    elif tree.out_mode == "view" and len(tree.f64.shape) >= 1:
        shape = tree.f64.shape
        if len(shape) >= 2:
            big = ng.zeros(shape[::-1], dtype=want_dtype)
            target = big.T
        else:
            big = ng.zeros((2 * shape[0],), dtype=want_dtype)
            target = big[::-2]
        target[...] = expr
        got = np.asarray(target.get())
    else:
        out = ng.empty(tree.f64.shape, dtype=want_dtype)
        out[...] = expr
        got = np.asarray(out.get())
    assert got.dtype == want_dtype and got.shape == tree.f64.shape

    if want_dtype.kind in "iub":
        np.testing.assert_array_equal(got, native)
        return
    leaf_dtypes = [leaf.dtype for leaf in tree.leaves] + [want_dtype]
    rtol, lowest = _rtol_of(leaf_dtypes)
    work = evaluate_numpy(tree, "work").astype(np.float64)
    err_est = float(np.max(np.abs(work - tree.f64), initial=0.0))
    f64 = tree.f64
    mag_out = float(np.max(np.abs(f64), initial=0.0))
    eps_work = EPS_WORK["float64" if lowest == "float64" else "float32"]
    allowed = (rtol * np.abs(f64) + 2 * rtol * mag_out + 8 * err_est
               + 16 * eps_work * tree.mag)
    if lowest == "float16":
        allowed = allowed + 4 * rtol * tree.mag  # fp16 temporaries between kernels
    diff = np.abs(got.astype(np.float64) - f64)
    bad = ~(diff <= allowed)
    if np.any(bad):
        i = np.argwhere(bad)[0]
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} elements differ; first at {tuple(i)}: "
            f"got {got[tuple(i)]!r}, float64 oracle {f64[tuple(i)]!r}, "
            f"allowed {allowed[tuple(i)]:.3g}")


_TREES = {}


def get_tree(index):
    if index not in _TREES:
        _TREES[index] = make_tree(index)
    return _TREES[index]


def test_grammar_covers_features():
    """The generated population really mixes the advertised features."""
    trees = [get_tree(i) for i in range(N_TREES)]
    kinds = {t.kind for t in trees}
    assert kinds == {"float32", "float16", "float64", "int32"}
    text = " ".join(describe(t) for t in trees)
    for feature in ("transpose", "::-1", "::2", "::-2", "1:", "sum(", "mean(", "max(", "min(",
                    "where(", "keepdims", "axis=None", "axis=-", "axis=(", "int32"):
        assert feature in text, feature
    assert sum(t.mix_int for t in trees) > 20
    assert {len(t.f64.shape) for t in trees} == {1, 2, 3}
    structures = {describe(t) for t in trees}
    assert len(structures) > N_TREES // 2


@pytest.mark.parametrize("chunk", range(N_CHUNKS))
def test_random_trees(ng, chunk):
    per = (N_TREES + N_CHUNKS - 1) // N_CHUNKS
    failures = []
    for index in range(chunk * per, min(N_TREES, (chunk + 1) * per)):
        tree = get_tree(index)
        try:
            run_tree(ng, tree)
        except Exception as exc:  # collect, report the first few
            failures.append(f"tree {index} [{tree.kind}, target {tree.target}, "
                            f"out={tree.out_mode}]: {describe(tree)}\n    "
                            f"{type(exc).__name__}: {exc}")
    if failures:
        shown = "\n".join(failures[:10])
        pytest.fail(f"{len(failures)} of {per} trees failed:\n{shown}", pytrace=False)

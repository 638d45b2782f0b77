"""The factory interface shared by ``gpuarray.GPU`` and ``gpuarray.CPU``.

In: user calls to make tensors (``ng.empty``, ``ng.array``...; numpy's
creation and joining functions come from :mod:`gpuarray.core.creation`),
the math API (:mod:`gpuarray.core.functions`) and assignments ``t[key] = value``.  Out:
tensors, op-trees, and evaluated results.  A concrete factory supplies the
storage hooks -- allocate, upload, download, and ``_execute(out, tree)``
which evaluates a checked op-tree into a tensor view -- and everything else
(argument checking, shape and dtype rules, casting rules for ``out=``)
lives here once.
"""
import numpy as np

from . import dtypes, shapes
from .array import Tensor, assign_owned
from .array_api import ArrayAPIFunctions
from .creation import CreationFunctions
from .functions import MathFunctions
from .manipulation import ManipulationFunctions
from .optree import Expression, Scalar, plain_scalar, settled
from .scalars import python_scalar
from .step_numbers import StepNumber
from .streams import StreamFunctions


class Backend(StreamFunctions, CreationFunctions, ManipulationFunctions, MathFunctions,
              ArrayAPIFunctions):
    """Base class of the factories; see :class:`gpuarray.GPU`."""

    tensor_class = Tensor

    def __init__(self, seed=0, stochastic_round=False):
        self.seed = int(seed)
        self.stochastic_round = bool(stochastic_round)
        self._stats = dict(kernels_launched=0, kernels_compiled=0, device_allocations=0)

    # -- storage hooks (subclasses) -------------------------------------
    def _allocate(self, nbytes):
        raise NotImplementedError

    def _upload(self, tensor, host):
        raise NotImplementedError

    def _download(self, tensor):
        raise NotImplementedError

    def _execute(self, out, tree):
        raise NotImplementedError

    def synchronize(self):
        """Wait for all queued work to finish."""

    def capture(self, fn, strict=False, trace_numbers=True):
        """``fn`` itself: this factory runs every step eagerly (see ``GPU.capture``)."""
        if not callable(fn):
            raise TypeError(f"capture needs a callable, not {type(fn).__name__}")
        return fn

    def jit(self, fn=None, *, strict=False, trace_numbers=True):
        """Decorator form of :meth:`capture`: ``@ng.jit`` or ``@ng.jit(strict=True)``."""
        if fn is None:
            return lambda f: self.capture(f, strict, trace_numbers)
        return self.capture(fn, strict, trace_numbers)

    def stats(self):
        """Counters: kernels_launched, kernels_compiled, device_allocations..."""
        return dict(self._stats)

    # -- creation -------------------------------------------------------
    def empty(self, shape, dtype=np.float64, *, device=None):
        """New uninitialised tensor (float64 by default, as numpy's); ``device``
        (the array API's) may only name the factory's own."""
        self._check_device(device)
        shape, dtype = shapes.as_shape(shape), dtypes.as_dtype(dtype)
        buffer = self._allocate(shapes.nbytes_of(shape, dtype.itemsize))
        rounding = True if self.stochastic_round and dtypes.is_low_precision(dtype) else None
        # positional: a keyword costs a Python subclass's constructor ~150 ns
        return self.tensor_class(self, buffer, shape, dtype, None, 0, rounding)

    def zeros(self, shape, dtype=np.float64, *, device=None):
        """New tensor of zeros (float64 by default, as numpy's)."""
        return self.full(shape, 0, np.float64 if dtype is None else dtype, device=device)

    def ones(self, shape, dtype=np.float64, *, device=None):
        """New tensor of ones (float64 by default, as numpy's)."""
        return self.full(shape, 1, np.float64 if dtype is None else dtype, device=device)

    def full(self, shape, fill_value, dtype=None, *, device=None):
        """New tensor with every element ``fill_value``; by default of its dtype
        as numpy infers it (bool, int64, float64, a tensor's own)."""
        self._check_device(device)
        if type(fill_value) is StepNumber:
            fill_value = float(fill_value)  # a captured step's float, used here on the host
        if dtype is None:
            dtype = fill_value.dtype if hasattr(fill_value, "dtype") else np.result_type(fill_value)
        out = self.empty(shape, dtype)
        return out.fill(dtypes.assigned_scalar(fill_value, out.dtype, created=True))

    def empty_like(self, t, dtype=None, *, device=None):
        """Uninitialised tensor of ``t``'s shape (and dtype unless given)."""
        return self.empty(*_like(t, dtype), device=device)

    def zeros_like(self, t, dtype=None, *, device=None):
        """Zeros of ``t``'s shape and dtype; ``t`` may be any array_like."""
        return self.full(*_like(t, dtype, 0), device=device)

    def ones_like(self, t, dtype=None, *, device=None):
        """Ones of ``t``'s shape and dtype; ``t`` may be any array_like."""
        return self.full(*_like(t, dtype, 1), device=device)

    def full_like(self, t, fill_value, dtype=None, *, device=None):
        """``fill_value`` in ``t``'s shape and dtype (unless given); ``t`` may be any array_like."""
        return self.full(*_like(t, dtype, fill_value), device=device)

    def array(self, obj, dtype=None):
        """Copy a host array (or anything ``numpy.asarray`` takes) into a new tensor.

        Parameters
        ----------
        obj : array_like or Tensor
            Host data; a tensor of this factory is copied on the device.
        dtype : dtype-like, optional
            Element type (default: that of ``obj``).
        """
        if isinstance(obj, Expression):
            value = self.operand(obj)
            return self.evaluate(value if dtype is None else self.astype(value, dtype))
        host = np.asarray(obj) if dtype is None else np.asarray(obj, dtype=dtypes.as_dtype(dtype))
        out = self.empty(host.shape, host.dtype)
        # out.dtype is native-endian: numpy swaps the bytes of big-endian data here
        self._upload(out, np.ascontiguousarray(host, dtype=out.dtype))
        return out

    # -- evaluation -----------------------------------------------------
    def operand(self, value):
        """Check and wrap one operand: a tensor or tree of this factory, or a scalar."""
        if getattr(value, "backend", None) is self:
            return value
        if isinstance(value, Expression):
            if value.backend is not self:
                raise ValueError(
                    "operands belong to different factories (backends); "
                    f"copy one to the other first ({value.backend!r} vs {self!r})")
            return value
        if isinstance(value, Scalar):
            return value
        if isinstance(value, np.ndarray):
            if value.ndim == 0:
                return Scalar(value[()])
            raise TypeError("host numpy arrays cannot be mixed into expressions; "
                            "copy them to the factory first with ng.array()")
        return Scalar(value)

    def operands(self, values):
        """:meth:`operand` of each value, as a tuple (this factory's own pass
        as they are, Python numbers become scalars at once)."""
        return tuple([v if getattr(v, "backend", None) is self
                      else python_scalar(v) if plain_scalar(v) else self.operand(v)
                      for v in values])

    def evaluate(self, expr, out=None):
        """Evaluate ``expr`` into ``out`` or into a new tensor, which is returned."""
        expr = self.operand(expr)
        if out is None:
            out = self.empty(expr.shape, expr.dtype)
        elif not isinstance(out, Tensor):
            raise TypeError(f"out must be a tensor, not {type(out).__name__}")
        self.assign(out, expr)
        return out

    def assign(self, target, value):
        """Store ``value`` (tree, tensor, scalar or host array) into the view ``target``."""
        if not isinstance(target, Tensor) or target.backend is not self:
            raise ValueError("assignment target must be a tensor of this factory")
        if getattr(value, "backend", None) is self:
            tree = settled(value)  # a tensor or tree of this factory: the common case
        elif isinstance(value, (np.ndarray, list, tuple)) and np.ndim(value) > 0:
            host = np.asarray(value)
            shapes.check_assignable(host.shape, target.shape)
            tree = self.array(host)
        else:
            tree = self.operand(value)
        assign_owned(target, tree)

    def _index_with_array(self, tensor, key, value=None):
        """``tensor[key]`` (or ``tensor[key] = value``) for keys holding integer or
        boolean arrays: refused here; the factories mix in :mod:`gpuarray.algorithms`."""
        raise IndexError(f"{type(self).__name__} supports basic indexing only (integers, "
                         "slices, '...', None)")

    _assign_with_array = _index_with_array

    def _assign_products(self, target, tree):
        """Evaluate a tree holding matrix products (factories mix in :mod:`gpuarray.gemm`)."""
        raise NotImplementedError(f"{type(self).__name__} has no matrix products")

    def to_host(self, tensor):
        """Copy a tensor view into a new numpy array."""
        if tensor.size == 0:
            # nothing to copy, and an empty view may point past its buffer's end
            return np.empty(tensor.shape, tensor.dtype)
        if tensor.size != 1 and not tensor.is_contiguous:  # one element: contiguous
            tensor = self.evaluate(tensor)
        return self._download(tensor)

    def _finish(self, node, out, casting="same_kind"):
        """Return the lazy node, or evaluate it into ``out`` (numpy's out= rules:
        ``casting`` is "same_kind" for ufuncs, whose ``out`` may broadcast, and
        "unsafe" for reductions, whose ``out`` must have the result's shape)."""
        if out is None:
            return node
        if not isinstance(out, Tensor):
            raise TypeError(f"out must be a tensor, not {type(out).__name__}")
        if out.backend is not self:
            raise ValueError("out belongs to a different factory (backend) than the operands")
        if casting == "unsafe" and out.shape != tuple(node.shape):
            # numpy's reductions take an out of exactly their result's shape
            raise ValueError(
                f"output parameter for reduction operation has the wrong shape: found "
                f"{shapes.shape_str(out.shape)} but expected {shapes.shape_str(node.shape)}")
        try:
            shapes.check_assignable(node.shape, out.shape)
        except ValueError:
            raise ValueError(
                f"non-broadcastable output operand with shape {shapes.shape_str(out.shape)} "
                f"doesn't match the broadcast shape {shapes.shape_str(node.shape)}") from None
        if casting == "same_kind" and not dtypes.can_cast_same_kind(node.dtype, out.dtype):
            raise TypeError(
                f"Cannot cast ufunc '{getattr(node, 'op', 'assign')}' output from "
                f"{node.dtype!r} to {out.dtype!r} with casting rule 'same_kind'")
        self.assign(out, node)
        return out


def _like(t, dtype, *fill):
    """``(shape, [fill,] dtype)`` of a ``*_like`` call: ``t`` may be any array_like."""
    if not (hasattr(t, "shape") and hasattr(t, "dtype")):
        t = np.asarray(t)
    return (t.shape, *fill, t.dtype if dtype is None else dtype)

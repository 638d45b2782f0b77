"""The graph executor and the SGD update.

In: the nodes to evaluate, a factory (``gpuarray.CPU()`` or ``gpuarray.GPU()``)
and, per run, a feed of numpy arrays or tensors for the placeholders.  Out:
the nodes' values as tensors of the factory (or numpy arrays).  Feeds are
checked before anything runs; the :class:`~gpuarray.autodiff.plan.Plan` of a
feed shape is made on its first run and kept until the shapes change.
"""
import functools
import weakref

import numpy as np

from ..core import step_numbers
from ..core.array import Tensor
from ..core.lanes import IN_ORDER, run_independent
from .graph import topological_order
from .plan import Plan


class Executor:
    """Evaluates graph nodes with a factory, planned once per feed shape.

    Parameters
    ----------
    eval_nodes : list of Node
        The nodes :meth:`run` returns, in this order.
    backend : factory
        ``gpuarray.GPU()`` or ``gpuarray.CPU()``.
    ctx : factory, optional
        The dlsys name of ``backend``.
    dtype : dtype-like, optional
        Floating dtype of every value; host feeds are converted to it.  By
        default the dtype of the feeds, which must then agree.
    concurrent : bool or None, optional
        Run kernels that do not depend on each other (a layer's weight and
        data gradients) on separate streams, each ordered after what it
        reads and what used the memory it reuses.  None (the default): only
        while ``ng.capture`` records the run, where they become parallel
        branches of the graph at no cost per replay; eagerly, each
        cross-stream order costs host time.  The CPU factory runs in order.

    Raises
    ------
    ValueError
        The graph has a cycle (named by a node on it).
    """

    def __init__(self, eval_nodes, backend=None, ctx=None, dtype=None, concurrent=None):
        self.backend = backend if backend is not None else ctx
        if self.backend is None:
            raise TypeError("Executor needs a factory: backend=gpuarray.CPU() or gpuarray.GPU()")
        self.eval_nodes = list(eval_nodes)
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.concurrent = None if concurrent is None else bool(concurrent)
        self._order = topological_order(self.eval_nodes)
        self._placeholders = [n for n in self._order if n.op.kind == "input"]
        self._plan, self._key = None, None

    @property
    def plan(self):
        """The :class:`~gpuarray.autodiff.plan.Plan` of the last run (None before one)."""
        return self._plan

    @property
    def plan_bytes(self):
        """Bytes of the buffers the current plan allocated."""
        return self._plan.plan_bytes if self._plan else None

    @property
    def naive_bytes(self):
        """Bytes one buffer per computed value would take, for comparison."""
        return self._plan.naive_bytes if self._plan else None

    @property
    def kernels_per_run(self):
        """Assignments and GEMM calls one run makes (uploads of host feeds aside)."""
        return len(self._plan.roots) if self._plan else None

    def run(self, feed_dict, convert_to_numpy_ret_vals=False):
        """Evaluate the nodes.

        Parameters
        ----------
        feed_dict : dict
            Placeholder node -> numpy array or tensor of this factory.
        convert_to_numpy_ret_vals : bool
            Return numpy arrays instead of tensors.

        Returns
        -------
        list
            One value per evaluated node.  Tensors are the plan's buffers:
            the next run overwrites them.

        Raises
        ------
        KeyError
            A placeholder has no value, or a fed node is not in the graph.
        TypeError
            A feed of a non-float dtype, or of another dtype than the others.
        ValueError
            Shapes disagree (the message names the node).
        """
        feeds, dtype = self._feeds(feed_dict)
        key = (dtype,) + tuple(feeds[n].shape for n in self._placeholders)
        if key != self._key:
            shapes = {n: feeds[n].shape for n in self._placeholders}
            self._plan = Plan(self.backend, self.eval_nodes, self._order, shapes, dtype)
            self._key = key
        concurrent = self.concurrent
        if concurrent is None:
            concurrent = self._plan.lanes.capturing
        values = self._plan.run(feeds, concurrent)
        return [v.get() for v in values] if convert_to_numpy_ret_vals else values

    def _feeds(self, feed_dict):
        """Check every feed, then bring host arrays to the factory."""
        known = set(self._order)
        for node in feed_dict:
            if node not in known:
                raise KeyError(f"node {getattr(node, 'name', node)!r} is fed but is not in "
                               "this executor's graph")
            if node.op.kind != "input":
                raise KeyError(f"node {node.name!r} is computed, not a placeholder: "
                               "it cannot be fed")
        values = {}
        for node in self._placeholders:
            if node not in feed_dict:
                raise KeyError(f"feed_dict has no value for placeholder {node.name!r}")
            value = feed_dict[node]
            values[node] = value if isinstance(value, Tensor) else np.asarray(value)
        dtype = self.dtype or _common_dtype(values)
        for node, value in values.items():
            _check_feed(node, value, dtype, self.backend, self.dtype is not None)
        return {n: v if isinstance(v, Tensor) else self.backend.array(v, dtype)
                for n, v in values.items()}, dtype


def _common_dtype(values):
    """The dtype of the first float feed (every feed is checked against it)."""
    for value in values.values():
        if np.dtype(value.dtype).kind == "f":
            return np.dtype(value.dtype)
    return np.dtype(np.float32)


def _check_feed(node, value, dtype, backend, convert_host):
    """Raise for a feed of the wrong factory, dtype or declared shape."""
    if isinstance(value, Tensor) and value.backend is not backend:
        raise ValueError(f"the value fed for {node.name!r} belongs to another factory")
    if np.dtype(value.dtype).kind != "f":
        raise TypeError(f"the value fed for {node.name!r} has dtype {value.dtype}; "
                        "the executor computes with floating dtypes")
    if value.dtype != dtype and (isinstance(value, Tensor) or not convert_host):
        raise TypeError(f"the value fed for {node.name!r} has dtype {value.dtype}, "
                        f"the executor's is {dtype}")
    declared = node.attrs.get("declared_shape")
    if declared is not None and (len(declared) != len(value.shape) or any(
            d is not None and d != s for d, s in zip(declared, value.shape))):
        raise ValueError(f"the value fed for {node.name!r} has shape {tuple(value.shape)}, "
                         f"expected {tuple(declared)}")


def sgd_update(params, grads, learning_rate, concurrent=None):
    """``param -= learning_rate * grad`` in place, one fused assignment per parameter.

    Parameters
    ----------
    params : list of tensors
        The parameters, as fed to the executor.
    grads : list of tensors
        Their gradients, as :meth:`Executor.run` returns them.
    learning_rate : float
    concurrent : bool or None, optional
        Run the updates side by side on streams (:mod:`gpuarray.core.lanes`);
        None (the default): only while ``ng.capture`` records them, where
        they become parallel branches of the graph.

    Raises
    ------
    ValueError
        ``params`` and ``grads`` differ in length.
    """
    pairs = list(zip(params, grads, strict=True))
    # a captured step's float stays itself: a graph parameter (gpuarray.cuda.capture)
    rate = learning_rate if step_numbers.recording(learning_rate) else float(learning_rate)
    tasks = [functools.partial(_update, param, grad, rate) for param, grad in pairs]
    run_independent(tasks, lambda count: _update_lanes(getattr(params[0], "backend", None), count),
                    concurrent)


def _update(param, grad, rate):
    param[:] = param - rate * grad


#: factory -> {number of parameters: lanes of that many independent updates}
_UPDATE_LANES = weakref.WeakKeyDictionary()


def _update_lanes(ng, count):
    """The (kept) lanes of ``count`` independent updates on factory ``ng``
    (None: parameters of no factory, updated in order)."""
    if ng is None:
        return IN_ORDER
    known = _UPDATE_LANES.setdefault(ng, {})
    if count not in known:
        known[count] = ng._lanes([()] * count)
    return known[count]

"""Containers: Sequential chains, Concat branches (inception modules) and the Model.

In: layers, and at set-up the input shape and dtype.  Out: the chained
output shape; every child set up with the shape its predecessor produces,
so a network whose shapes do not chain fails at set-up, naming the layer.

:class:`Concat` gives each branch's last layer a channel slice of its own
output as the place to write, so branch outputs land in place (no copy);
in bprop each branch reads its slice of the gradient and the branches'
input gradients are summed by one fused kernel.  While a captured step
records them (``ng.capture``), the branches run side by side on lanes
(:mod:`gpuarray.core.lanes`): parallel branches of the graph.  :class:`Model` runs a
list of layers, names them, reports the loss and per-layer times.
"""
import functools
import itertools

import numpy as np

from ..core import shapes
from .layer import Layer, check_dtype
from .loss import SoftmaxCrossEntropy
from .spatial import pair_relu_pools


class Sequential(Layer):
    """Layers applied one after another; a layer itself (nestable)."""

    kind = "seq"

    def __init__(self, layers, name=None):
        super().__init__(name)
        self.layers = _layer_list(layers, type(self).__name__)

    def configure(self, ng, in_shape, dtype, needs_input_grad=True):
        """Configure every child on the shape the previous one produces."""
        self.ng, self.dtype = ng, check_dtype(dtype, self.label)
        self.in_shape, self.needs_input_grad = tuple(in_shape), bool(needs_input_grad)
        _name_children(self)
        shape = self.in_shape
        for i, layer in enumerate(self.layers):
            shape = layer.configure(ng, shape, dtype, needs_input_grad if i == 0 else True)
        pair_relu_pools(self.layers)
        self.out_shape = shape
        return shape

    def allocate(self, output=None, rng=None):
        """Allocate the children; the last one writes ``output`` when given."""
        for layer in self.layers[:-1]:
            layer.allocate(None, rng)
        self.layers[-1].allocate(output, rng)
        self.output, self.input_grad = self.layers[-1].output, self.layers[0].input_grad

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]

    def children(self):
        """Every layer inside, depth first (containers included)."""
        for layer in self.layers:
            yield layer
            if hasattr(layer, "children"):
                yield from layer.children()

    def _fprop(self, x):
        for layer in self.layers:
            x = layer.fprop(x)
        return x

    def _bprop(self, grad):
        for layer in reversed(self.layers):
            if grad is None:
                break
            grad = layer.bprop(grad)
        return grad


class Concat(Sequential):
    """Branches that all read the same input, concatenated along the channel axis.

    Each branch is a layer or a list of layers (made a :class:`Sequential`).
    ``concurrent``: run the branches side by side on streams; None (the
    default) only while ``ng.capture`` records them, where it costs no
    host time per replay (see :mod:`gpuarray.nn.layer`).
    """

    kind = "concat"

    def __init__(self, branches, name=None, concurrent=None):
        branches = [Sequential(b, name=f"b{i + 1}") if isinstance(b, (list, tuple)) else b
                    for i, b in enumerate(_layer_list(branches, "Concat"))]
        super().__init__(branches, name)
        self.slices, self.concurrent = [], concurrent
        self._parts = None  # (grad, its channel slices) of the last bprop

    def configure(self, ng, in_shape, dtype, needs_input_grad=True):
        """Configure the branches on the same input; the output stacks their channels."""
        self.ng, self.dtype = ng, check_dtype(dtype, self.label)
        self.in_shape, self.needs_input_grad = tuple(in_shape), bool(needs_input_grad)
        _name_children(self)
        outs = [branch.configure(ng, in_shape, dtype, needs_input_grad)
                for branch in self.layers]
        for branch, shape in zip(self.layers, outs):
            if shape[:-1] != outs[0][:-1]:
                raise ValueError(f"{self.label}: branch {branch.label} gives "
                                 f"{shapes.shape_str(shape)}, branch {self.layers[0].label} "
                                 f"{shapes.shape_str(outs[0])}; concatenated branches "
                                 f"must agree on every axis but the channels")
        ends = list(itertools.accumulate(shape[-1] for shape in outs))
        self.slices = list(zip([0] + ends[:-1], ends))
        self.out_shape = outs[0][:-1] + (ends[-1],)
        return self.out_shape

    def allocate(self, output=None, rng=None):
        """Allocate the output; each branch writes its channel slice of it in place."""
        self.output = self._own_output(output)
        for branch, (c0, c1) in zip(self.layers, self.slices):
            branch.allocate(self.output[..., c0:c1], rng)
        own_grad = self.needs_input_grad
        self.input_grad = self.ng.empty(self.in_shape, self.dtype) if own_grad else None

    def _fprop(self, x):
        self._side_by_side([functools.partial(self._branch_fprop, branch, x, c0, c1)
                            for branch, (c0, c1) in zip(self.layers, self.slices)])
        return self.output

    def _grad_parts(self, grad):
        # the same view objects while grad is the same tensor (each step's):
        # the branches' bound calls (Layer._bound) stay bound to them
        kept = self._parts
        if kept is None or kept[0] is not grad:
            kept = self._parts = (grad, [grad[..., c0:c1] for c0, c1 in self.slices])
        return kept[1]

    def _branch_fprop(self, branch, x, c0, c1):
        y = branch.fprop(x)
        if y is not branch.output:
            # a branch that passed its input through (e.g. inference dropout)
            self.output[..., c0:c1] = y

    def _bprop(self, grad):
        grads = self._side_by_side([functools.partial(branch.bprop, part)
                                    for branch, part in zip(self.layers, self._grad_parts(grad))])
        if self.input_grad is None:
            return None
        total = grads[0]
        for g in grads[1:]:
            total = total + g
        self.input_grad[:] = total
        return self.input_grad


def _layer_list(layers, what):
    layers = list(layers)
    if not layers:
        raise ValueError(f"{what} needs at least one layer")
    for layer in layers:
        if not isinstance(layer, (Layer, list, tuple)):
            raise TypeError(f"{what} takes layers, not {type(layer).__name__}")
    return layers


def _name_children(container):
    """Name the unnamed children ``<kind><n>``, prefixed by the container's name."""
    counts = {}
    prefix = "" if isinstance(container, Model) else f"{container.label}."
    for layer in container.layers:
        counts[layer.kind] = counts.get(layer.kind, 0) + 1
        if layer.name is None:
            layer.name = f"{prefix}{layer.kind}{counts[layer.kind]}"
        elif prefix and not layer.name.startswith(prefix):
            layer.name = prefix + layer.name


class Model(Sequential):
    """A network: layers set up for one input shape and dtype, ready to run.

    Parameters
    ----------
    ng : factory
    layers : list of Layer
        The last may be a :class:`SoftmaxCrossEntropy`, making ``bprop``
        take targets.
    input_shape : tuple
        ``(N, D, H, W, C)`` for images in the native layout, ``(N, features)``.
    dtype : float16, bfloat16 or float32
    seed : int
        Initialises the parameters (numpy's default_rng).
    """

    kind = "model"

    def __init__(self, ng, layers, input_shape, dtype="float32", seed=0, name=None):
        super().__init__(layers, name)
        self.setup(ng, input_shape, dtype, needs_input_grad=False,
                   rng=np.random.default_rng(seed))

    def loss(self, targets):
        """The classifier's mean cross-entropy for the last fprop (a (1, 1) fp32 tensor)."""
        last = self.layers[-1]
        if not isinstance(last, SoftmaxCrossEntropy):
            raise TypeError(f"{self.label}: loss needs a SoftmaxCrossEntropy last layer, "
                            f"not {type(last).__name__}")
        return last.loss(targets)

    def bprop(self, grad):
        """Backward through every layer; ``grad`` is the targets when the last layer
        is a :class:`SoftmaxCrossEntropy`, else the output's gradient."""
        if self.x is None:
            raise RuntimeError(f"{self.label}: bprop before fprop")
        if not isinstance(self.layers[-1], SoftmaxCrossEntropy):
            self._check(grad, self.out_shape, "gradient")
        return self._bprop(grad)

    def train(self, mode=True):
        """Training mode (batch statistics, dropout) or, with False, inference."""
        for layer in [self, *self.children()]:
            layer.training = bool(mode)
        return self

    def eval(self):
        """Inference mode: running statistics, no dropout."""
        return self.train(False)

    @property
    def flops(self):
        """Floating-point operations of one fprop over the convolutions and dense layers."""
        return sum(layer.flops for layer in self.children() if hasattr(layer, "flops"))

    def profile(self, x, grad):
        """One fprop and one bprop with an event between top-level layers.

        ``grad`` as for :meth:`bprop`.  Returns a list of
        ``(name, fprop_ms, bprop_ms)``, one per top-level layer.
        """
        self._check(x, self.in_shape, "input")
        n = len(self.layers)
        marks = [self.ng.Event() for _ in range(2 * n + 1)]
        marks[0].record()
        for i, layer in enumerate(self.layers):
            x = layer.fprop(x)
            marks[i + 1].record()
        for j, layer in enumerate(reversed(self.layers)):
            if grad is not None:
                grad = layer.bprop(grad)
            marks[n + j + 1].record()
        self.ng.synchronize()
        return [(layer.label, marks[i].elapsed(marks[i + 1]),
                 marks[2 * n - i - 1].elapsed(marks[2 * n - i]))
                for i, layer in enumerate(self.layers)]

"""The layer protocol of :mod:`gpuarray.nn`: set up once, then fprop / bprop many times.

In: a factory, the shape of the input a layer will see and a dtype, at
set-up (:meth:`Layer.setup`).  Out: the layer's output shape, its
parameters (:class:`Parameter`: a value and a gradient tensor each) and
every buffer its passes write, allocated there and never again, so device
allocations stay constant across iterations.

Shapes: activations of spatial layers are 5-D tensors in the native layout
``(N, D, H, W, C)`` (see :mod:`gpuarray.conv.layer`); dense layers take
``(N, features)`` and flatten whatever comes in.  Each pass checks its
argument's shape and dtype and raises naming the layer.  ``bprop(grad)``
may overwrite ``grad`` (the next layer's input gradient, dead once read).

Independent calls of one pass -- the branches of an inception module --
run side by side on lanes (:mod:`gpuarray.core.lanes`) while a captured
step records them, where they become parallel branches of the graph; a
layer's ``concurrent`` (True / False / None, the default: only while
capturing) says when.  A layer's weight and data gradients stay in one
order: on the H100 their kernels overlapped gained nothing (AlexNet,
VGG-A) or lost 2% (Overfeat), persistent grids of the whole GPU each.
"""
import math

import numpy as np

from ..core import dtypes, shapes
from ..core.array import Tensor
from ..core.lanes import run_independent

#: dtypes a network runs in (16-bit layers accumulate in fp32)
DTYPES = dtypes.KERNEL_FLOATS
F32 = np.dtype(np.float32)


class Parameter:
    """A learnable tensor and its gradient, both of ``shape``.

    Attributes
    ----------
    name : str
        ``<layer>.<role>``, e.g. ``conv1.W``.
    value, grad : tensor
        Allocated by the layer's set-up (views of one flat buffer once an
        optimizer has flattened a model's parameters; see :class:`~gpuarray.nn.SGD`).
    fan_in : int
        Inputs feeding one output, for the default initialisation.
    """

    def __init__(self, name, shape, fan_in, init="uniform"):
        self.name, self.shape, self.fan_in, self.init = name, tuple(shape), fan_in, init
        self.value = self.grad = None

    def allocate(self, ng, dtype, rng):
        """Allocate value and gradient; fill the value from ``rng``.

        ``init`` is ``"uniform"`` (torch's default for conv and linear:
        U(-1/sqrt(fan_in), 1/sqrt(fan_in))), ``"zeros"`` or ``"ones"``.
        """
        if self.init == "uniform":
            bound = 1.0 / math.sqrt(self.fan_in)
            host = rng.uniform(-bound, bound, self.shape)
        else:
            host = np.full(self.shape, 0.0 if self.init == "zeros" else 1.0)
        self.value = ng.array(host.astype(dtype))
        self.grad = ng.zeros(self.shape, dtype)

    def __repr__(self):
        return f"Parameter({self.name}, shape={shapes.shape_str(self.shape)})"


class Layer:
    """Base of every layer.

    Subclasses implement ``_configure(in_shape) -> out_shape`` (check sizes,
    declare parameters; no allocation), ``_allocate()`` (buffers beyond the
    output and input gradient), ``_fprop(x)`` and ``_bprop(grad)``.
    """

    #: prefix of the default name
    kind = "layer"
    #: bprop writes the input gradient over ``grad`` (same shape): no buffer of its own
    grad_in_place = False
    #: run independent calls of a pass side by side: None, only while capturing
    concurrent = None

    def __init__(self, name=None):
        self.name = name
        self.ng = self.dtype = self.in_shape = self.out_shape = None
        self.output = self.input_grad = self.x = None
        self.needs_input_grad = True
        #: False in inference mode (dropout passes its input through)
        self.training = True
        self._params = []
        self._lanes = {}  # number of side-by-side calls -> their lanes, made on first use
        self._bound_calls = {}  # name -> (operands, the factory's bound call on them)

    # -- set-up --------------------------------------------------------------
    def setup(self, ng, in_shape, dtype, needs_input_grad=True, output=None, rng=None):
        """Check sizes against ``in_shape`` and allocate every buffer.

        The two steps, :meth:`configure` then :meth:`allocate`, in one call.

        Parameters
        ----------
        ng : factory
            ``gpuarray.GPU()`` or ``gpuarray.CPU()``.
        in_shape : tuple of int
            Shape of the input ``fprop`` will get (batch first).
        dtype : float16, bfloat16 or float32
        needs_input_grad : bool
            Whether ``bprop`` computes the input gradient (False for a
            network's first layer: nothing consumes it).
        output : tensor, optional
            Where ``fprop`` writes (a view, e.g. channels of a concatenation);
            allocated when not given.
        rng : numpy.random.Generator, optional
            Initialises the parameters (default: seed 0).

        Returns
        -------
        tuple
            The output shape.

        Raises
        ------
        TypeError, ValueError
            Naming the layer: an unsupported dtype, sizes that do not fit.
        """
        self.configure(ng, in_shape, dtype, needs_input_grad)
        self.allocate(output, rng)
        return self.out_shape

    def configure(self, ng, in_shape, dtype, needs_input_grad=True):
        """Sizes only: check ``in_shape``, declare the parameters, return the output shape."""
        self.ng, self.dtype = ng, check_dtype(dtype, self.label)
        self.in_shape = tuple(int(d) for d in in_shape)
        self._params = []
        self.out_shape = tuple(self._configure(self.in_shape))
        self.needs_input_grad = bool(needs_input_grad)
        return self.out_shape

    def allocate(self, output=None, rng=None):
        """Allocate the parameters (filled from ``rng``) and every buffer of the passes."""
        rng = np.random.default_rng(0) if rng is None else rng
        for p in self._params:
            p.allocate(self.ng, self.dtype, rng)
        self.output = self._own_output(output)
        own_grad = self.needs_input_grad and not self.grad_in_place
        self.input_grad = self.ng.empty(self.in_shape, self.dtype) if own_grad else None
        self._allocate()

    def _own_output(self, output):
        if output is None:
            return self.ng.empty(self.out_shape, self.dtype)
        if tuple(output.shape) != self.out_shape or output.dtype != self.dtype:
            raise ValueError(f"{self.label}: output must be {dtypes.name(self.dtype)} of shape "
                             f"{shapes.shape_str(self.out_shape)}, got "
                             f"{dtypes.name(output.dtype)} {shapes.shape_str(output.shape)}")
        return output

    def parameter(self, role, shape, fan_in, init="uniform"):
        """Declare a parameter (in ``_configure``); returns it."""
        p = Parameter(f"{self.label}.{role}", shape, fan_in, init)
        self._params.append(p)
        return p

    def parameters(self):
        """The layer's :class:`Parameter` list (empty for most layers)."""
        return list(self._params)

    def _configure(self, in_shape):
        raise NotImplementedError

    def _allocate(self):
        """Buffers beyond the output and the input gradient (none by default)."""

    # -- passes --------------------------------------------------------------
    def fprop(self, x):
        """The layer's output for ``x`` (a tensor of ``in_shape``), in ``self.output``."""
        self._check(x, self.in_shape, "input")
        self.x = x
        return self._fprop(x)

    def bprop(self, grad):
        """Parameter gradients (overwritten) and the input gradient (None when
        not needed) from ``grad``, the gradient of the output of the last fprop."""
        self._check(grad, self.out_shape, "gradient")
        if self.x is None:
            raise RuntimeError(f"{self.label}: bprop before fprop")
        return self._bprop(grad)

    def _fprop(self, x):
        raise NotImplementedError

    def _bprop(self, grad):
        raise NotImplementedError

    def _side_by_side(self, tasks):
        """Call ``tasks`` (independent of each other: none reads what another
        writes) on lanes where :attr:`concurrent` asks for them, else in
        order; returns their results."""
        return run_independent(tasks, self._lanes_of, self.concurrent)

    def _bound(self, name, bind, *operands):
        """``bind(*operands)`` (a factory's ``bind_*``: a call checked once,
        run by calling it), kept under ``name`` and made again when an operand
        is not the object it was made with: a layer's own buffers stay, its
        input may change between steps."""
        entry = self._bound_calls.get(name)
        if entry is not None:
            kept = entry[0]
            for i in range(len(operands)):
                if kept[i] is not operands[i]:
                    break
            else:
                return entry[1]
        run = bind(*operands)
        self._bound_calls[name] = (operands, run)
        return run

    def _lanes_of(self, count):
        """This layer's (kept) lanes of ``count`` independent calls."""
        lanes = self._lanes.get(count)
        if lanes is None:
            lanes = self._lanes[count] = self.ng._lanes([()] * count)
        return lanes

    def _check(self, t, shape, what):
        if self.ng is None:
            raise RuntimeError(f"{self.label}: call setup(ng, in_shape, dtype) first")
        if not isinstance(t, Tensor) or t.backend is not self.ng:
            what_it_is = (f"a tensor of {t.backend!r}" if isinstance(t, Tensor)
                          else type(t).__name__)
            raise TypeError(f"{self.label}: {what} must be a tensor of {self.ng!r}, not "
                            f"{what_it_is}; copy it in with ng.array")
        if tuple(t.shape) != shape:
            raise ValueError(f"{self.label}: {what} must have shape {shapes.shape_str(shape)}"
                             f"{self._layout_hint(shape)}, got {shapes.shape_str(t.shape)}")
        if t.dtype != self.dtype:
            raise TypeError(f"{self.label}: {what} must be {dtypes.name(self.dtype)}, "
                            f"not {dtypes.name(t.dtype)}")

    @staticmethod
    def _layout_hint(shape):
        return " (native layout N, D, H, W, C)" if len(shape) == 5 else ""

    @property
    def label(self):
        """The layer's name, or its kind when it has none yet."""
        return self.name or self.kind

    def __repr__(self):
        sizes = ""
        if self.in_shape is not None:
            sizes = f", {shapes.shape_str(self.in_shape)} -> {shapes.shape_str(self.out_shape)}"
        return f"{type(self).__name__}({self.label}{sizes})"


def check_dtype(dtype, label):
    """``dtype`` as a numpy dtype a network runs in, or a TypeError naming the layer."""
    dt = dtypes.as_dtype(dtype)
    if dt not in DTYPES:
        raise TypeError(f"{label}: layers run in float16, bfloat16 or float32, "
                        f"not {dtypes.name(dt)}")
    return dt


def spatial(label, in_shape):
    """``in_shape`` as a native 5-D activation shape, or a ValueError naming the layer."""
    if len(in_shape) != 5:
        raise ValueError(f"{label}: needs a 5-D input in the native layout (N, D, H, W, C), "
                         f"got shape {shapes.shape_str(in_shape)}; convert NCHW data with "
                         f"ng.from_layout")
    return in_shape


def relu_and_bias_grads(layer, grad, relu_output, b):
    """Mask ``grad`` in place by ``relu_output > 0`` (None: no ReLU) and fill
    the bias parameter ``b``'s gradient (None: no bias): one ``update_bias``
    call where there is a bias, bound by ``layer`` (see :meth:`Layer._bound`)."""
    ng = layer.ng
    if b is not None:
        layer._bound("bias grad", ng.bind_update_bias, grad, b.grad, relu_output)()
    elif relu_output is not None:
        grad[:] = grad * (relu_output > 0)


def rows(t):
    """A contiguous tensor as a matrix with its last axis as columns (a view)."""
    return t.reshape(-1, t.shape[-1])

"""Step numbers: the stand-ins a captured step's Python floats become while it records.

In: a Python ``float`` passed to a step ``ng.capture`` records, its
position among the step's numbers, and the recording (an object with a
set ``escaped`` and a flag ``active``, :mod:`gpuarray.cuda.capture`).
Out: :class:`StepNumber`, which the step's function receives in the
float's place.

Why: a graph replays the kernel arguments it recorded.  A number that
reaches the device only as a scalar operand of fused assignments
(``w[:] = w - lr * g``) can be updated in the recorded graph on a later
call, where one that decides anything on the host (``if lr > 0``,
``math.exp(lr)``, a shape) cannot: the host work that
depended on it is not replayed.  The stand-in tells the two apart.  As an
operand of this package's tensors and expressions it becomes a scalar
leaf holding the stand-in, which the dispatcher of a recording notes as a
parameter of the graph's kernel node (:mod:`gpuarray.fusion.dispatch`);
anything else done with it -- arithmetic with other numbers, comparisons,
``float()``, ``int()``, formatting, hashing, ``numpy.asarray``, a float
method -- gives what the number itself would, and marks it *escaped*, so
the step keys its graphs on that number's value, as it keys integers.

It is not a ``float`` subclass on purpose: C code reads a float
subclass's value without calling any of its methods, so a use on the host
could go unseen and a later replay use a stale value.  So
``isinstance(x, float)`` is False inside a recording (``numbers.Real``
holds).
"""
import math
import numbers
import operator

import numpy as np

from .operand import Operand


class StepNumber:
    """A Python float standing in for itself while a captured step records.

    Parameters
    ----------
    value : float
        The number passed to the step.
    index : int
        Its position among the step's floats (the order
        :mod:`gpuarray.cuda.capture` walks the arguments in).
    recording : object
        The recording: ``escaped`` (a set of indices) and ``active``.
    """

    __slots__ = ("value", "index", "recording")

    def __init__(self, value, index, recording):
        self.value, self.index, self.recording = value, index, recording

    def plain(self):
        """The float, marked escaped while its recording is under way."""
        recording = self.recording
        if recording.active:
            recording.escaped.add(self.index)
        return self.value

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.plain(), dtype=dtype)

    def __getattr__(self, name):
        # float's own methods and properties (is_integer, hex, real, imag...);
        # any other name is missing, as on a float (``getattr(x, "backend",
        # None)`` asks whether an operand is a tensor: no use of the value)
        if name not in _FLOAT_ATTRIBUTES:
            raise AttributeError(f"'float' object has no attribute {name!r}")
        return getattr(self.plain(), name)


#: the public attributes of a float
_FLOAT_ATTRIBUTES = frozenset(name for name in dir(float) if not name.startswith("_"))


def recording(value):
    """True for a stand-in whose step is recording now: a value to keep as a
    kernel argument the graph can update, not to fold into anything on the
    host (a product's alpha: :mod:`gpuarray.gemm.fuse`)."""
    return type(value) is StepNumber and value.recording.active


def _plain(value):
    """A stand-in's float (marked escaped); anything else as it is."""
    return value.plain() if type(value) is StepNumber else value


def _binary(op):
    """The methods ``x OP y`` and ``y OP x`` of a stand-in: a tensor or
    expression of this package takes the stand-in as its scalar operand
    (so the stand-in declines); anything else meets the float."""
    def forward(self, other):
        if isinstance(other, Operand):
            return NotImplemented
        return op(self.plain(), _plain(other))

    def reflected(self, other):
        if isinstance(other, Operand):
            return NotImplemented
        return op(_plain(other), self.plain())
    return forward, reflected


def _unary(function):
    """The method ``function(x, *args)`` of a stand-in: what the float gives."""
    def method(self, *args):
        return function(self.plain(), *args)
    return method


for _name, _function in (("float", float), ("int", int), ("complex", complex), ("bool", bool),
                         ("hash", hash), ("repr", repr), ("str", str), ("format", format),
                         ("round", round), ("trunc", math.trunc), ("floor", math.floor),
                         ("ceil", math.ceil), ("neg", operator.neg), ("pos", operator.pos),
                         ("abs", abs)):
    setattr(StepNumber, f"__{_name}__", _unary(_function))

for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("divmod", divmod)):
    _forward, _reflected = _binary(_op)
    setattr(StepNumber, f"__{_name}__", _forward)
    setattr(StepNumber, f"__r{_name}__", _reflected)

for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(StepNumber, f"__{_name}__", _binary(getattr(operator, _name))[0])

numbers.Real.register(StepNumber)

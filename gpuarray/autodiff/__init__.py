"""Automatic differentiation: computation graphs run by a factory.

In: a graph built from :func:`Variable` placeholders and the operators
below.  Out: gradient nodes (:func:`gradients`) and values, computed by an
:class:`Executor` with ``gpuarray.CPU()`` or ``gpuarray.GPU()`` as fused
assignments and GEMM calls.  The names of the dlsys course assignment
(``matmul_op``, ``relu_op``...) are aliases, with its conventions: scalars
have shape ``(1,)`` and ``softmaxcrossentropy_op``'s gradient is not
divided by the number of rows.

>>> import numpy as np, gpuarray
>>> from gpuarray import autodiff as ad
>>> x = ad.Variable("x")
>>> y = ad.reduce_sum(x * x)
>>> ex = ad.Executor([y, *ad.gradients(y, [x])], backend=gpuarray.CPU())
>>> [v.tolist() for v in ex.run({x: np.array([1.0, 2.0])}, convert_to_numpy_ret_vals=True)]
[[5.0], [2.0, 4.0]]
"""
from .executor import Executor, sgd_update
from .graph import Node, Op, Placeholder, Variable, topological_order
from .ops import (add, broadcast_to, divide, exp, log, multiply, ones_like, relu,
                  relu_gradient, sigmoid, subtract, tanh, zeros_like)
from .plan import Plan, infer_shapes
from .reverse import gradients
from .tensorops import (matmul, reduce_sum, reshape, softmax, softmax_cross_entropy,
                        transpose)


def reducesumaxiszero_op(a):
    """dlsys: the sum of ``a`` over axis 0."""
    return reduce_sum(a, axis=0)


def softmaxcrossentropy_op(logits, labels):
    """dlsys: :func:`softmax_cross_entropy` with the unscaled gradient its learning rates assume."""
    return softmax_cross_entropy(logits, labels, scaled=False)


matmul_op = matmul
relu_op = relu
relu_gradient_op = relu_gradient
softmax_op = softmax
broadcastto_op = broadcast_to
oneslike_op = ones_like
zeroslike_op = zeros_like

__all__ = ["Executor", "Node", "Op", "Placeholder", "Plan", "Variable", "add", "broadcast_to",
           "divide", "exp", "gradients", "infer_shapes", "log", "matmul", "multiply",
           "ones_like", "reduce_sum", "relu", "relu_gradient", "reshape", "sgd_update",
           "sigmoid", "softmax", "softmax_cross_entropy", "subtract", "tanh",
           "topological_order", "transpose", "zeros_like", "matmul_op", "relu_op",
           "relu_gradient_op", "softmax_op", "softmaxcrossentropy_op", "broadcastto_op",
           "reducesumaxiszero_op", "oneslike_op", "zeroslike_op"]

"""Assignments whose op-tree holds matrix products.

In: a destination view and an op-tree with ``dot`` / ``batched_dot`` nodes
(from ``ng.dot(A, B)`` without ``C``).  Out: the destination filled in.

When the whole tree is one product wrapped in what the GEMM epilogue
computes -- ``relu(alpha * dot(A, B) + bias) + beta * C`` with C the
destination itself -- it runs as a single GEMM launch.  Otherwise each
product is computed into a temporary by the GEMM kernels and the rest of
the tree goes to the fusion compiler as usual.
"""
from ..core import shapes, step_numbers
from ..core.step_numbers import StepNumber
from ..core.array import Tensor
from ..core.optree import OpTreeNode, Scalar
from .call import OUTPUT_DTYPES

PRODUCTS = ("dot", "batched_dot")


def execute(backend, target, tree):
    """Evaluate ``tree`` (which contains products) into ``target``."""
    request = epilogue_request(target, tree)
    if request is not None:
        backend.run_product(*request)
    else:
        backend._execute(target, materialize(backend, tree, PRODUCTS, _run_product))


def epilogue_request(target, tree):
    """The arguments of ``run_product`` running ``target[:] = tree`` in one launch, or None."""
    if tree.shape != target.shape or target.dtype not in OUTPUT_DTYPES:
        return None
    product, alpha, beta, relu, bias = match_epilogue(target, tree, _usable_bias)
    if _op_of(product) not in PRODUCTS:
        return None
    a, b = product.args
    return (a, b, target, product.op == "batched_dot", alpha, beta, relu, bias, None,
            product.attrs[0])


def match_epilogue(target, tree, usable_bias):
    """Read ``tree`` as ``relu(alpha * core + bias) + beta * target``.

    Parameters
    ----------
    target : Tensor
        The destination; ``beta * target`` is recognised only for that very view.
    tree : op-tree
    usable_bias : callable
        ``usable_bias(bias, other)``: whether the epilogue can add ``bias`` to ``other``.

    Returns
    -------
    tuple
        ``(core, alpha, beta, relu, bias)``, with ``core`` whatever is left
        (``tree`` itself, alpha 1 and beta 0 when nothing matched).
    """
    node, beta = tree, 0.0
    if _op_of(node) == "add":
        for x, y in (node.args, node.args[::-1]):
            inner, factor = _scaled(y)
            if _same_view(inner, target):
                node, beta = x, factor
                break
    relu = _op_of(node) == "relu"
    if relu:
        node = node.args[0]
    bias = None
    if _op_of(node) == "add":
        for x, y in (node.args, node.args[::-1]):
            if usable_bias(y, x):
                node, bias = x, y
                break
    core, alpha = _scaled(node)
    return core, alpha, beta, relu, bias


def _op_of(node):
    """A node's op name; None for a tensor or a scalar."""
    return node.op if type(node) is OpTreeNode else None


def _scaled(node):
    """(x, s) when ``node`` is ``x * s`` or ``s * x`` with s a real scalar, else
    (node, 1).  A captured step's float, while the step records, stays in the
    tree: folded into the GEMM's alpha or beta it would be fixed in the
    graph, where a fused kernel after the product takes it as an argument
    the graph updates (:mod:`gpuarray.cuda.capture`)."""
    if _op_of(node) == "multiply":
        for x, s in (node.args, node.args[::-1]):
            if isinstance(s, Scalar) and s.dtype.kind in "fiu" and isinstance(x, (Tensor, OpTreeNode)):
                if type(s.value) is StepNumber and step_numbers.recording(s.value):
                    break
                return x, float(s.value)
    return node, 1.0


def _same_view(x, target):
    return (isinstance(x, Tensor) and x.buffer is target.buffer and x.offset == target.offset
            and x.shape == target.shape and x.strides == target.strides)


def _usable_bias(bias, other):
    """A tensor the epilogue can add: float, at most 2-D, broadcast over the product."""
    return (isinstance(bias, Tensor) and bias.dtype in OUTPUT_DTYPES
            and len(bias.shape) <= 2 and len(other.shape) >= 2
            and shapes.broadcasts_to(bias.shape, other.shape[-2:]))


def materialize(backend, node, ops, run, memo=None):
    """``node`` with every node whose op is in ``ops`` replaced by ``run(backend, node)``,
    a tensor holding its value (computed once per node)."""
    memo = {} if memo is None else memo
    if not isinstance(node, OpTreeNode) or not node.has_gemm:
        return node
    done = memo.get(id(node))
    if done is not None:
        return done
    if node.op in ops:
        result = run(backend, node)
    else:
        args = tuple(materialize(backend, a, ops, run, memo) for a in node.args)
        result = OpTreeNode(backend, node.op, args, node.attrs, node.shape, node.dtype)
    memo[id(node)] = result
    return result


def _run_product(backend, node):
    out = backend.empty(node.shape, node.dtype)
    a, b = node.args
    backend.run_product(a, b, out, node.op == "batched_dot", precision=node.attrs[0])
    return out

"""Reverse-mode differentiation.

In: an output node and the nodes to differentiate it by.  Out: gradient
nodes, built from the operators' own gradient rules
(:meth:`~gpuarray.autodiff.graph.Op.gradient`): graph nodes like any other,
which an :class:`~gpuarray.autodiff.executor.Executor` evaluates.
"""
from .graph import topological_order
from .ops import add, ones_like, zeros_like


def gradients(output, nodes):
    """Gradient nodes of ``output`` with respect to each of ``nodes`` (reverse mode).

    The output's own gradient is seeded with ones (``ones_like(output)``):
    for the scalar-shaped losses of the dlsys convention, shape ``(1,)``,
    that is d(output)/d(node).  A node the output does not depend on gets
    ``zeros_like(node)``, as numpy autodiff libraries give.

    Parameters
    ----------
    output : Node
    nodes : list of Node

    Returns
    -------
    list of Node, one per entry of ``nodes``.
    """
    partial = {output: [ones_like(output)]}
    for node in reversed(topological_order([output])):
        contributions = partial.pop(node, None)
        if not contributions:
            continue
        grad = contributions[0]
        for extra in contributions[1:]:
            grad = add(grad, extra)
        partial[node] = [grad]
        for child, child_grad in zip(node.inputs, node.op.gradient(node, grad)):
            if child_grad is not None:
                partial.setdefault(child, []).append(child_grad)
    return [partial[n][0] if n in partial else zeros_like(n) for n in nodes]

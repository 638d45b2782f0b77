"""Graph nodes, the operator base class and reverse-mode differentiation.

In: nodes built by the user (:class:`Variable` placeholders and the
operators of :mod:`gpuarray.autodiff.ops`).  Out: the nodes in topological
order (:func:`topological_order`).  Nothing here touches data: a node holds an operator, its input
nodes and the operator's parameters.
"""
import itertools

_ids = itertools.count()


class Node:
    """One value of a computation graph.

    Attributes
    ----------
    op : Op
        What computes the value from ``inputs``.
    inputs : list of Node
        The operands.
    attrs : dict
        The operator's parameters (axes, transpose flags, target shape...).
    name : str
        Used in error messages; defaults to the operator's name and a serial.
    """

    def __init__(self, op, inputs, name=None, **attrs):
        self.op, self.inputs, self.attrs = op, list(inputs), attrs
        self.id = next(_ids)
        self.name = name if name is not None else f"{op.name}#{self.id}"

    def __repr__(self):
        return f"<Node {self.name!r}>"

    def __str__(self):
        return self.name


class Op:
    """An operator: its shape rule, its value as a factory op-tree, its gradient.

    ``kind`` tells the executor how the value may be fused: "elementwise"
    and "reduce" values are op-trees that a consumer may take in, a
    "reduce" consumer wanting operands of their exact shape; "view" values
    are views of a tensor operand (no kernel); "matmul" values are matrix
    products; "input" values come from the feed.
    """

    name = "op"
    kind = "elementwise"

    def shape(self, node, shapes):
        """Output shape from the input shapes; ValueError (any message) when they disagree."""
        raise NotImplementedError

    def expr_shape(self, node, expr_shapes, shape):
        """Shape of the op-tree :meth:`expr` builds, which broadcasts to ``shape``."""
        if self.kind == "elementwise":
            return broadcast(*expr_shapes)
        return shape

    def is_identity(self, node, shapes):
        """True when the value is input 0's for these shapes (the executor then skips the node)."""
        return False

    def value_inputs(self, node):
        """Indices of the inputs whose values (not only shapes) the operator reads."""
        return tuple(range(len(node.inputs)))

    def needs_tensor(self, node, index, shapes):
        """True when input ``index`` must be a tensor rather than an op-tree."""
        return self.kind in ("view", "matmul")

    def takes_broadcast(self, index):
        """True when a "reduce" operator accepts input ``index`` of a broadcastable shape."""
        return False

    def expr(self, ng, node, args, shapes):
        """The value as an op-tree of factory ``ng`` over ``args`` (trees or tensors)."""
        raise NotImplementedError

    def gradient(self, node, grad):
        """One gradient node per input, given ``grad``, the gradient of the output;
        None for an input that contributes nothing (read for its shape only)."""
        raise NotImplementedError(f"operator {self.name!r} of node {node.name!r} has no gradient")


class ReshapingOp(Op):
    """An operator that changes only the shape of input 0's value; any other
    input gives a shape.  Where the shapes agree it is the identity."""

    def is_identity(self, node, shapes):
        return shapes[node] == shapes[node.inputs[0]]

    def value_inputs(self, node):
        return (0,)


class PlaceholderOp(Op):
    """A value fed to the executor: a placeholder or a parameter."""

    name = "placeholder"
    kind = "input"

    def shape(self, node, shapes):
        raise KeyError(f"feed_dict has no value for placeholder {node.name!r}")

    def gradient(self, node, grad):
        return []


def Variable(name, shape=None):
    """A placeholder: a value fed to :meth:`Executor.run`.

    Parameters
    ----------
    name : str
        Named in error messages.
    shape : tuple, optional
        Feeds must have this shape (None entries take any length).
    """
    return Node(PlaceholderOp(), [], name=name, declared_shape=shape)


Placeholder = Variable


def broadcast(*shapes):
    """numpy's broadcast shape of ``shapes`` (ValueError when they do not broadcast)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*[(1,) * (ndim - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"shapes {' and '.join(map(str, shapes))} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def topological_order(nodes):
    """Every node the ``nodes`` depend on, inputs before their users.

    Raises
    ------
    ValueError
        The graph has a cycle (named by a node on it).
    """
    order, state = [], {}
    for root in nodes:
        stack = [(root, iter(root.inputs))]
        if state.get(root) == "done":
            continue
        state[root] = "open"
        while stack:
            node, inputs = stack[-1]
            child = next(inputs, None)
            if child is None:
                stack.pop()
                state[node] = "done"
                order.append(node)
            elif state.get(child) == "open":
                raise ValueError(f"the graph has a cycle through node {child.name!r}")
            elif child not in state:
                state[child] = "open"
                stack.append((child, iter(child.inputs)))
    return order

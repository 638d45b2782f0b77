"""Assignments whose op-tree holds convolutions: ``O[:] = ng.relu(ng.conv(layer, I, F) + b)``.

In: ``ng.conv(layer, I, F)`` (a lazy ``conv`` node of shape ``layer.dimO``)
and a destination view with the op-tree assigned to it.  Out: the
destination filled in.

When the whole tree is one convolution wrapped in what the convolution
epilogue computes -- ``relu(alpha * conv(I, F) + bias) + beta * O`` with
``bias`` a per-channel ``(K,)`` tensor and O the destination itself -- it
runs as one ``fprop_conv`` (on Hopper, one implicit-GEMM launch with the
epilogue fused).  Otherwise each convolution is computed into a
temporary and the rest of the tree runs as usual (fused kernels, GEMMs).
"""
from ..core import dtypes, shapes
from ..core.array import Tensor
from ..core.optree import Expression, OpTreeNode
from ..core.signatures import keep
from ..gemm.fuse import match_epilogue, materialize
from .call import check_layer
from .layer import DTYPES, ConvLayer

CONVOLUTIONS = ("conv",)


def conv_node(backend, layer, inputs, filters):
    """The lazy ``conv(I, F)`` node, its operands checked against ``layer``."""
    layer = check_layer(layer, ConvLayer, "conv")
    operands = []
    for name, x, shape in (("I", inputs, layer.dimI), ("F", filters, layer.dimF)):
        if not isinstance(x, Expression):
            raise TypeError(f"conv: {name} must be a tensor or expression, not {type(x).__name__}")
        x = backend.operand(x)
        if x.dtype != layer.dtype:
            raise TypeError(f"conv: {name} must be {dtypes.name(layer.dtype)} as the layer "
                            f"expects, not {dtypes.name(x.dtype)}")
        if x.shape != shape:
            raise ValueError(f"conv: {name} has shape {shapes.shape_str(x.shape)}, but the "
                             f"layer expects {shapes.shape_str(shape)}")
        operands.append(x)
    return OpTreeNode(backend, "conv", tuple(operands), (layer,), layer.dimO, layer.dtype)


def holds_convolution(node):
    """True when the op-tree ``node`` holds a ``conv`` node: known once per
    structure (its signature names its ops), as every assignment of a
    tree holding a product asks."""
    if not isinstance(node, OpTreeNode) or not node.has_gemm:
        return False
    held = _HOLDS.get(node.sig)
    if held is None:
        held = _holds(node)
        keep(_HOLDS, node.sig, held)
    return held


#: :func:`holds_convolution` by signature (bounded as the signature tables are)
_HOLDS = {}


def _holds(node):
    if not isinstance(node, OpTreeNode) or not node.has_gemm:
        return False
    return node.op in CONVOLUTIONS or any(_holds(a) for a in node.args)


def execute(backend, target, tree):
    """Evaluate ``tree`` (which holds convolutions) into ``target``."""
    core, alpha, beta, relu, bias = match_epilogue(target, tree, _usable_bias)
    if (isinstance(core, OpTreeNode) and core.op in CONVOLUTIONS
            and tree.shape == target.shape and target.dtype == core.dtype):
        inputs, filters = (_tensor(backend, x) for x in core.args)
        backend.fprop_conv(core.attrs[0], inputs, filters, target, alpha, beta, relu, bias)
    else:
        backend.assign(target, materialize(backend, tree, CONVOLUTIONS, _run_conv))


def _usable_bias(bias, other):
    """A per-output-channel ``(K,)`` tensor of a convolution dtype."""
    return (isinstance(bias, Tensor) and bias.dtype in DTYPES and bias.ndim == 1
            and len(other.shape) == 5 and bias.shape == other.shape[-1:])


def _tensor(backend, x):
    return x if isinstance(x, Tensor) else backend.evaluate(x)


def _run_conv(backend, node):
    out = backend.empty(node.shape, node.dtype)
    inputs, filters = (_tensor(backend, x) for x in node.args)
    backend.fprop_conv(node.attrs[0], inputs, filters, out)
    return out

"""SGD with momentum over one flat buffer: two fused kernels per step for a whole network.

In: a model's :class:`~gpuarray.nn.layer.Parameter` list (one factory, one
dtype).  Out: :class:`SGD`, which at construction moves every parameter's
value and gradient into views of one flat buffer each (values copied over),
so a step is one kernel for the velocities and one for the values,
whatever the number of parameters.  Velocities are fp32.
"""
import numpy as np

from .layer import F32

#: parameters start on 256-byte boundaries in the flat buffers (TMA wants 16)
ALIGN_BYTES = 256


class SGD:
    """``v = momentum * v - lr * (grad + weight_decay * w)``; ``w += v`` (torch's, Nesterov off,
    with the learning rate folded into the velocity).

    Parameters
    ----------
    parameters : list of Parameter
        From ``model.parameters()``; must share a factory and a dtype.
    lr : float
    momentum : float
    weight_decay : float
    """

    def __init__(self, parameters, lr=0.01, momentum=0.9, weight_decay=0.0):
        self.parameters = list(parameters)
        if not self.parameters:
            raise ValueError("SGD needs at least one parameter")
        self.lr, self.momentum, self.weight_decay = float(lr), float(momentum), float(weight_decay)
        self.value, self.grad = _flatten(self.parameters)
        self.velocity = self.value.backend.zeros(self.value.shape, F32)

    def step(self):
        """Apply one update from the gradients the last bprop wrote."""
        w, g = self.value, self.grad
        step = g + w * self.weight_decay if self.weight_decay else g
        self.velocity[:] = self.velocity * self.momentum - step * self.lr
        w[:] = w + self.velocity


def _flatten(parameters):
    """One flat value buffer and one flat gradient buffer; each parameter re-pointed
    to views of them (its current value copied in)."""
    first = parameters[0].value
    ng, dtype = first.backend, first.dtype
    for p in parameters:
        if p.value is None:
            raise ValueError(f"{p.name} is not allocated: set the model up first")
        if p.value.backend is not ng or p.value.dtype != dtype:
            raise TypeError(f"SGD takes parameters of one factory and dtype; {p.name} is "
                            f"{p.value.dtype} on {p.value.backend!r}, {parameters[0].name} "
                            f"{dtype} on {ng!r}")
    step = max(1, ALIGN_BYTES // dtype.itemsize)
    offsets, total = [], 0
    for p in parameters:
        offsets.append(total)
        total += -(-int(np.prod(p.shape)) // step) * step
    value, grad = ng.zeros((total,), dtype), ng.zeros((total,), dtype)
    for p, start in zip(parameters, offsets):
        size = int(np.prod(p.shape))
        view = value[start:start + size].reshape(p.shape)
        view[:] = p.value
        p.value = view
        p.grad = grad[start:start + size].reshape(p.shape)
    return value, grad

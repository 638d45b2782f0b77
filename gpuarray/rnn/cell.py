"""One timestep of each recurrent mode, forward and backward, as fused assignments.

In: a factory, the layer, this step's projected input ``x`` (N, G*H) and
the recurrent pre-activation ``rec = h_prev @ R.T + b`` (fp32, from a
GEMM), or in backward the gradient ``dh`` of this step's output.  Out:
the step's slots of the reserve (gates after their nonlinearity, h, the
extra H-wide value) and, backward, the gradients of the recurrent
pre-activations (``drec``) and of the projected input (``dx``).

Equations and gate order are cuDNN's (and torch's):

* relu / tanh: ``h = act(x + rec)``
* LSTM (i, f, g, o): ``c = f * c_prev + i * g``, ``h = o * tanh(c)``
* GRU (r, z, n): ``n = tanh(x_n + r * rec_n)``, ``h = (1 - z) * n + z * h_prev``

Every value is fp32 (the layer's dtype only at ``Y`` and ``dX``).
"""


def _split(t, H, parts):
    return [t[:, k * H:(k + 1) * H] for k in range(parts)]


def forward(ng, mode, H, x, rec, h_prev, extra_prev, gates, h, extra):
    """Fill this step's ``gates``, ``h`` and ``extra`` (the LSTM's c, the GRU's rec_n)."""
    if mode in ("relu", "tanh"):
        gates[:] = (ng.relu if mode == "relu" else ng.tanh)(x + rec)
        h[:] = gates
    elif mode == "lstm":
        def pre(lo, hi):
            return x[:, lo * H:hi * H] + rec[:, lo * H:hi * H]

        gates[:, :2 * H] = ng.sigmoid(pre(0, 2))
        gates[:, 2 * H:3 * H] = ng.tanh(pre(2, 3))
        gates[:, 3 * H:] = ng.sigmoid(pre(3, 4))
        i, f, g, o = _split(gates, H, 4)
        extra[:] = f * extra_prev + i * g
        h[:] = o * ng.tanh(extra)
    else:
        gates[:, :2 * H] = ng.sigmoid(x[:, :2 * H] + rec[:, :2 * H])
        extra[:] = rec[:, 2 * H:]
        r, z, _ = _split(gates, H, 3)
        gates[:, 2 * H:] = ng.tanh(x[:, 2 * H:] + r * extra)
        n = gates[:, 2 * H:]
        h[:] = (1.0 - z) * n + z * h_prev


def backward(ng, mode, H, dh, gates, h, extra, h_prev, extra_prev, dc, drec, dx):
    """This step's ``drec`` (fp32) and ``dx`` from ``dh`` (fp32, N x H).

    For the LSTM, ``dc`` holds the cell gradient flowing in from the next
    step and leaves holding the one for the previous step.  Returns the
    term of the previous step's ``dh`` that bypasses the recurrent product
    (the GRU's ``dh * z``), or None.
    """
    if mode in ("relu", "tanh"):
        drec[:] = dh * (h > 0) if mode == "relu" else dh * (1.0 - h * h)
        dx[:] = drec
        return None
    if mode == "lstm":
        i, f, g, o = _split(gates, H, 4)
        tanh_c = ng.tanh(extra)
        dc[:] = dc + dh * o * (1.0 - tanh_c * tanh_c)
        drec[:, :H] = dc * g * i * (1.0 - i)
        drec[:, H:2 * H] = dc * extra_prev * f * (1.0 - f)
        drec[:, 2 * H:3 * H] = dc * i * (1.0 - g * g)
        drec[:, 3 * H:] = dh * tanh_c * o * (1.0 - o)
        dc[:] = dc * f
        dx[:] = drec
        return None
    r, z, n = _split(gates, H, 3)
    dn = dh * (1.0 - z) * (1.0 - n * n)
    drec[:, :H] = dn * extra * r * (1.0 - r)
    drec[:, H:2 * H] = dh * (h_prev - n) * z * (1.0 - z)
    drec[:, 2 * H:] = dn * r
    dx[:, :2 * H] = drec[:, :2 * H]
    dx[:, 2 * H:] = dn
    return dh * z

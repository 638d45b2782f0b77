"""Bound calls: a factory call checked once, then run again and again by calling it.

In: what runs the call (a callable of no arguments) and the tensor it
writes.  Out: :class:`BoundCall`, which the factories' ``bind_*`` methods
return (``bind_conv``, ``bind_update_bias``, ``bind_dot``).

A network's layers make the same calls on the same tensors every step;
the host work of checking a call, choosing its route and packing its
kernel's arguments need not repeat.  A bound call does it once (as cuDNN's
frontend runs a finished execution plan on a fixed variant pack); on the
GPU a run then replays the recorded launches (:mod:`gpuarray.conv.bound`,
:mod:`gpuarray.gemm.bound`), on the CPU it runs the checked call.  A run
reads the tensors' current contents: only the tensors themselves, the
layer and the scalars are fixed.
"""


class BoundCall:
    """A call fixed once; ``bound()`` runs it again and returns ``out``.

    Parameters
    ----------
    run : callable
        Queues the call's work (no arguments).
    out : Tensor
        What the call writes, returned by every run.
    what : str
        The call, for the repr.
    """

    __slots__ = ("run", "out", "what")

    def __init__(self, run, out, what):
        self.run, self.out, self.what = run, out, what

    def __call__(self):
        self.run()
        return self.out

    def __repr__(self):
        return f"<bound {self.what}>"

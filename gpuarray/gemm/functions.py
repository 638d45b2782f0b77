"""Matrix products in the factory API: ``ng.dot`` and ``ng.batched_dot``.

In: the user's operands, output and epilogue options, or an assignment
whose op-tree holds products.  Out: C filled in, or a lazy ``dot`` /
``batched_dot`` op-tree node when no C is given.  The arguments are
checked in :mod:`~gpuarray.gemm.call`; the factory's ``_gemm`` runs the
checked call (numpy on the CPU, :mod:`gpuarray.gemm.plan` on the GPU).
Both factories mix :class:`ProductFunctions` in.
"""
import functools

from ..core import step_numbers
from ..core.array import Tensor
from ..core.bound import BoundCall
from ..core.step_numbers import StepNumber
from ..core.optree import Scalar
from . import fuse, replay
from .call import (epilogue_tree, fp8_zero_product, make_call, product_node, real, scale_values,
                   stats_by_reduction)

#: recorded GEMM plans a factory keeps (a training loop asks the same few)
MAX_PLANS = 1024


class ProductFunctions:
    """Mixin: matrix products for a factory that implements ``_gemm(call)``.

    A factory whose ``_gemm`` returns a :class:`~gpuarray.gemm.replay.GemmPlan`
    sets ``records_gemm_plans``: a repeated request then replays its plan
    through ``_replay_gemm`` without being checked and planned again.
    """

    records_gemm_plans = False
    _gemm_plans = None
    #: the kernels the last GEMM queued (a GemmLaunch; benchmarks replay it)
    last_gemm = None

    def dot(self, A, B, C=None, alpha=1.0, beta=0.0, relu=False, bias=None, stats=None,
            precision=None, scale_a=None, scale_b=None, scale_c=None, amax=None):
        """Matrix product ``C = relu(alpha * A @ B + bias) + beta * C``.

        Parameters
        ----------
        A, B : tensors (or expressions), 1-D or 2-D
            float16, bfloat16 or float32, one dtype; transposed views
            (``A.T``) select the transposed product without a copy.  Two
            vectors give their inner product, a 0-d result (numpy's).
            Or FP8 (``float8_e4m3fn``, ``float8_e5m2``, any pair) with
            ``scale_a`` and ``scale_b``; K a multiple of 16.  The tensor
            cores read FP8 K-major only: A as (M, K) rows and B as the
            transpose of an (N, K) matrix (``W.T``, as ``torch._scaled_mm``
            takes it) run in place, other layouts are copied first.
        C : tensor, optional
            Output of the product's shape (float16, bfloat16 or float32; FP8
            too for FP8 operands).  Without it the product is a lazy
            op-tree node, so ``C[:] = ng.relu(ng.dot(A, B) + bias)`` runs
            as one GEMM (not for FP8 operands, which need C).
        alpha, beta : float
            Scale of the product and of C's previous value (beta needs C).
        relu : bool
            Clamp negative results (after bias, before beta * C).
        bias : tensor, optional
            Added to the product, broadcast numpy-style: shape (N,), (M, 1)
            or (M, N); () for an inner product.
        stats : float32 tensor of shape (2,), optional
            Filled with the largest ``abs(C)`` over finite values and the number of
            non-finite values of the stored C (needs C).
        precision : {None, "fp32", "tf32", "fast"}
            float32 operands: exact fp32 math (default) or TF32 tensor cores.
            FP8 operands: "fp32" (default) adds the tensor cores' sums of
            128 products at a time into float32 accumulators, "fast" leaves
            the whole sum to the tensor cores, which keep fewer bits
            (cuBLASLt's ``use_fast_accum``; about 10 % faster, less accurate on long K).
        scale_a, scale_b : float32 tensor of one element, or a number
            FP8 operands only (and required there): the dequantisation
            scales, ``C = alpha * scale_a * scale_b * A @ B ...``.  Tensors
            are read on the device (no synchronisation: a delayed-scaling
            loop updates them in place).
        scale_c : float32 tensor of one element, or a number, optional
            FP8 operands only: multiplies the finished result (after bias,
            relu and beta * C) before it is rounded into C; an FP8 C
            saturates to its largest finite value (448 or 57344), as
            cuBLASLt's FP8 outputs.
        amax : float32 tensor of one element, optional
            FP8 operands only; required for an FP8 C: set to the largest
            ``abs`` of the result before ``scale_c`` (NaN ignored).

        Returns
        -------
        C, or a lazy op-tree node when C is None.

        Raises
        ------
        ValueError
            FP8 operands without scales, scales or amax of the wrong dtype
            or shape, K not a multiple of 16, an FP8 C without amax or with
            beta != 0, C or amax sharing memory with what the call reads.
        """
        scaling = _scaling(scale_a, scale_b, scale_c, amax)
        return self._product(A, B, C, False, alpha, beta, relu, bias, stats, precision, scaling)

    def batched_dot(self, A, B, C=None, alpha=1.0, beta=0.0, relu=False, bias=None,
                    stats=None, precision=None, scale_a=None, scale_b=None, scale_c=None,
                    amax=None):
        """Batched matrix products ``C[i] = relu(alpha * A[i] @ B[i] + bias) + beta * C[i]``.

        A is (batches, M, K) and B (batches, K, N); one of them may be 2-D and
        is then shared by every batch.  A 2-D ``C`` of shape (M, N) receives
        the sum over the batch, ``relu(alpha * sum_i A[i] @ B[i] + bias) +
        beta * C`` (weight-gradient accumulation).  Other parameters as
        :meth:`dot`.
        """
        scaling = _scaling(scale_a, scale_b, scale_c, amax)
        return self._product(A, B, C, True, alpha, beta, relu, bias, stats, precision, scaling)

    def bind_dot(self, A, B, C, alpha=1.0, beta=0.0, relu=False, bias=None):
        """One :meth:`dot` call into C, checked once, to run again and again.

        As :meth:`~gpuarray.conv.functions.ConvFunctions.bind_conv`: each run
        of the returned :class:`~gpuarray.core.bound.BoundCall` does what
        ``ng.dot(A, B, C, alpha, beta, relu, bias)`` does, on the tensors'
        current contents, and returns C; on the GPU the runs after the first
        replay its recorded launch.  (Statistics, precision and FP8 scales:
        call :meth:`dot`.)

        Parameters
        ----------
        A, B, C : tensors of this factory
            2-D (transposed views select the transposed products), as :meth:`dot` takes them.
        alpha, beta, relu, bias
            As :meth:`dot`'s.

        Raises
        ------
        TypeError, ValueError
            What the call would raise, here; A, B, C or bias not tensors.
        """
        for name, t in (("A", A), ("B", B), ("C", C), ("bias", bias)):
            if not isinstance(t, Tensor) and (t is not None or name != "bias"):
                raise TypeError(f"bind_dot: {name} must be a tensor, not {type(t).__name__} "
                                f"(evaluate an expression into one first)")
        alpha, beta, relu = real(alpha, "alpha"), real(beta, "beta"), bool(relu)
        make_call(self, A, B, C, False, alpha, beta, relu, bias)  # raises for misuse, here
        full_path = functools.partial(self.run_product, A, B, C, False, alpha, beta, relu, bias)
        return self._bind_product(full_path, A, B, C, alpha, beta, relu, bias)

    def _bind_product(self, full_path, A, B, C, alpha, beta, relu, bias):
        """The :class:`~gpuarray.core.bound.BoundCall` of a checked ``dot``;
        ``full_path`` runs it as a call does."""
        return BoundCall(full_path, C, "dot")

    def _product(self, A, B, C, batched, alpha, beta, relu, bias, stats, precision, scaling):
        # two type tests per call (C pointer comparisons where compiled):
        # ng.dot is on the host path of every training step
        if ((type(alpha) is StepNumber or type(beta) is StepNumber) and C is not None
                and stats is None and scaling is None
                and (step_numbers.recording(alpha) or step_numbers.recording(beta))):
            # a captured step's float stays a kernel argument the graph
            # updates: the assignment runs the product, then a fused kernel
            value = self._product(A, B, None, batched, alpha, 0.0, relu, bias, None,
                                  precision, None)
            self.assign(C, value + C * beta if step_numbers.recording(beta) or beta != 0
                        else value)
            return C
        if C is not None:
            self.run_product(A, B, C, batched, alpha, beta, relu, bias, stats, precision, scaling)
            return C
        if beta != 0 or stats is not None:
            raise ValueError("beta and stats need an output tensor C")
        if scaling is not None:
            raise ValueError("scale_a, scale_b, scale_c and amax need an output tensor C "
                             "(FP8 products run with C given)")
        node = product_node(self, A, B, batched, precision)
        if type(alpha) is StepNumber and step_numbers.recording(alpha):
            node = node * alpha
        elif alpha != 1:
            node = node * real(alpha, "alpha")
        if bias is not None:
            node = node + self.operand(bias)
        return self.relu(node) if relu else node

    def run_product(self, A, B, C, batched, alpha=1.0, beta=0.0, relu=False, bias=None,
                    stats=None, precision=None, scaling=None):
        """``C = relu(alpha * A @ B + bias) + beta * C``, replayed when a recorded plan fits,
        else checked and run.  ``scaling``: FP8's (scale_a, scale_b, scale_c, amax)."""
        key = None
        if self.records_gemm_plans:
            key = replay.signature(self, batched, A, B, C, bias, stats, relu, beta, precision,
                                   scaling)
            plan = self._gemm_plans.get(key) if key is not None and self._gemm_plans else None
            if plan is not None:
                alpha, post, tensors = (real(alpha, "alpha"), 1.0, None) if scaling is None \
                    else scale_values(real(alpha, "alpha"), scaling)
                self._replay_gemm(plan, A, B, C, bias, stats, alpha, real(beta, "beta"),
                                  (post, tensors))
                return
        plan = self.run_gemm(make_call(self, A, B, C, batched, alpha, beta, relu, bias, stats,
                                       precision, scaling))
        if key is not None and plan is not None:
            if self._gemm_plans is None or len(self._gemm_plans) >= MAX_PLANS:
                self._gemm_plans = {}
            self._gemm_plans[key] = plan
            self._stats["gemm_plans"] = self._stats.get("gemm_plans", 0) + 1

    def run_gemm(self, call):
        """Run a checked :class:`~gpuarray.gemm.call.GemmCall` (K = 0 runs fused).

        Returns what the factory's ``_gemm`` returns (a plan to record, or None).
        """
        m, n, k = call.mnk
        if call.c.size == 0:
            for t in (call.stats, call.amax):
                if t is not None:
                    t.fill(0)
        elif (k == 0 or call.batches == 0) and call.fp8:
            fp8_zero_product(self, call)
            if call.stats is not None:
                stats_by_reduction(self, call.c, call.stats)
        elif k == 0 or call.batches == 0:
            self.assign(call.c, epilogue_tree(self, call, Scalar(0.0)))
            if call.stats is not None:
                stats_by_reduction(self, call.c, call.stats)
        else:
            return self._gemm(call)
        return None

    def _gemm(self, call):
        raise NotImplementedError

    def _assign_products(self, target, tree):
        fuse.execute(self, target, tree)


def _scaling(scale_a, scale_b, scale_c, amax):
    """The FP8 arguments as one tuple, or None when none is given."""
    scaling = (scale_a, scale_b, scale_c, amax)
    return None if all(x is None for x in scaling) else scaling

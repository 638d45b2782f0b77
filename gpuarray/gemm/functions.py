"""Matrix products in the factory API: ``ng.dot`` and ``ng.batched_dot``.

In: the user's operands, output and epilogue options, or an assignment
whose op-tree holds products.  Out: C filled in, or a lazy ``dot`` /
``batched_dot`` op-tree node when no C is given.  The arguments are
checked in :mod:`~gpuarray.gemm.call`; the factory's ``_gemm`` runs the
checked call (numpy on the CPU, :mod:`gpuarray.gemm.plan` on the GPU).
Both factories mix :class:`ProductFunctions` in.
"""
from ..core.optree import Scalar
from . import fuse, replay
from .call import epilogue_tree, make_call, product_node, real, stats_by_reduction

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
            precision=None):
        """Matrix product ``C = relu(alpha * A @ B + bias) + beta * C``.

        Parameters
        ----------
        A, B : tensors (or expressions), 1-D or 2-D
            float16, bfloat16 or float32, one dtype; transposed views
            (``A.T``) select the transposed product without a copy.  Two
            vectors give their inner product, a 0-d result (numpy's).
        C : tensor, optional
            Output of the product's shape (float16, bfloat16 or float32).
            Without it the product is a lazy op-tree node, so
            ``C[:] = ng.relu(ng.dot(A, B) + bias)`` runs as one GEMM.
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
        precision : {None, "fp32", "tf32"}
            float32 operands: exact fp32 math (default) or TF32 tensor cores.

        Returns
        -------
        C, or a lazy op-tree node when C is None.
        """
        return self._product(A, B, C, False, alpha, beta, relu, bias, stats, precision)

    def batched_dot(self, A, B, C=None, alpha=1.0, beta=0.0, relu=False, bias=None,
                    stats=None, precision=None):
        """Batched matrix products ``C[i] = relu(alpha * A[i] @ B[i] + bias) + beta * C[i]``.

        A is (batches, M, K) and B (batches, K, N); one of them may be 2-D and
        is then shared by every batch.  A 2-D ``C`` of shape (M, N) receives
        the sum over the batch, ``relu(alpha * sum_i A[i] @ B[i] + bias) +
        beta * C`` (weight-gradient accumulation).  Other parameters as
        :meth:`dot`.
        """
        return self._product(A, B, C, True, alpha, beta, relu, bias, stats, precision)

    def _product(self, A, B, C, batched, alpha, beta, relu, bias, stats, precision):
        if C is not None:
            self.run_product(A, B, C, batched, alpha, beta, relu, bias, stats, precision)
            return C
        if beta != 0 or stats is not None:
            raise ValueError("beta and stats need an output tensor C")
        node = product_node(self, A, B, batched, precision)
        if alpha != 1:
            node = node * real(alpha, "alpha")
        if bias is not None:
            node = node + self.operand(bias)
        return self.relu(node) if relu else node

    def run_product(self, A, B, C, batched, alpha=1.0, beta=0.0, relu=False, bias=None,
                    stats=None, precision=None):
        """``C = relu(alpha * A @ B + bias) + beta * C``, replayed when a recorded plan fits,
        else checked and run."""
        key = None
        if self.records_gemm_plans:
            key = replay.signature(self, batched, A, B, C, bias, stats, relu, beta, precision)
            plan = self._gemm_plans.get(key) if key is not None and self._gemm_plans else None
            if plan is not None:
                self._replay_gemm(plan, A, B, C, bias, stats, real(alpha, "alpha"),
                                  real(beta, "beta"))
                return
        plan = self.run_gemm(make_call(self, A, B, C, batched, alpha, beta, relu, bias, stats,
                                       precision))
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
            if call.stats is not None:
                call.stats.fill(0)
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

"""An execution plan: shapes, fused assignments and a memory plan for one feed shape.

In: the executor's nodes in topological order, the shapes and dtype of the
feeds, and a factory.  Out: a :class:`Plan` whose :meth:`Plan.run` evaluates
the graph with the factory's public API, one assignment ``out[:] = tree`` per
*root* -- a node whose value is kept -- each tree holding the chain of
single-use elementwise and reduction nodes below it; a matrix product whose
only use is ``+ bias`` and/or ReLU is kept in that tree so the factory runs
it as one GEMM with its epilogue.  Every root's buffer is a view of one of
the plan's flat buffers, allocated when the plan is made; roots whose
lifetimes do not overlap share a buffer.
"""
from ..core.lanes import IN_ORDER
from ..core.shapes import size_of
from .graph import Op
from .ops import GEMM_DTYPES, BinaryOp, BroadcastToOp, ConstantOp, UnaryOp
from .tensorops import MatMulOp


def infer_shapes(order, feed_shapes):
    """Shape of every node of ``order`` (topological) from the placeholders' shapes.

    Raises
    ------
    KeyError
        A placeholder has no shape in ``feed_shapes``.
    ValueError
        Shapes disagree; the message names the node.
    """
    shapes = {}
    for node in order:
        if node in feed_shapes:
            shapes[node] = tuple(feed_shapes[node])
            continue
        try:
            shapes[node] = tuple(node.op.shape(node, [shapes[i] for i in node.inputs]))
        except (ValueError, TypeError, IndexError) as exc:
            raise ValueError(f"node {node.name!r} ({node.op.name}): {exc}") from None
    return shapes


def _is(node, op_class, name=None):
    return isinstance(node.op, op_class) and (name is None or node.op.name == name)


class Plan:
    """How one feed shape runs: roots, their buffers and the trees that fill them."""

    def __init__(self, ng, eval_nodes, order, feed_shapes, dtype):
        for node in order:
            if node.op.kind != "input" and type(node.op).expr is Op.expr:
                raise NotImplementedError(f"the executor cannot evaluate node {node.name!r} "
                                          f"(operator {node.op.name!r} has no expr)")
        self.ng, self.dtype = ng, dtype
        self.shapes = infer_shapes(order, feed_shapes)
        self.args = self._skip_identities(order)
        self.eval_nodes = [self._resolve(n) for n in eval_nodes]
        self.order = self._needed(order)
        self.users = {node: [] for node in self.order}
        for node in self.order:
            for i in node.op.value_inputs(node):
                self.users[self.args[node][i]].append((node, i))
        self.inline = self._fuse()
        self.order = self._soonest_first(self.order)
        self.roots = [n for n in self.order if n.op.kind not in ("input", "view")
                      and not self.inline[n]]
        self._allocate()

    def _skip_identities(self, order):
        """node -> its inputs, each node that only passes its input on replaced by that input."""
        self._alias, args = {}, {}
        for node in order:
            args[node] = [self._resolve(x) for x in node.inputs]
            if node.op.is_identity(node, self.shapes):
                self._alias[node] = args[node][0]
        return args

    def _resolve(self, node):
        return self._alias.get(node, node)

    def _needed(self, order):
        """The nodes whose values the evaluated nodes read (not those read for shapes only)."""
        needed, stack = set(), list(self.eval_nodes)
        while stack:
            node = stack.pop()
            if node not in needed:
                needed.add(node)
                stack.extend(self.args[node][i] for i in node.op.value_inputs(node))
        return [n for n in order if n in needed and n not in self._alias]

    # -- fusion ---------------------------------------------------------
    def _fuse(self):
        """node -> True where its tree goes into its only user's tree."""
        inline, expr_shape = {}, {}
        evaluated = set(self.eval_nodes)
        for node in self.order:
            shape = self.shapes[node]
            args = [expr_shape[i] if inline.get(i) else self.shapes[i] for i in self.args[node]]
            expr_shape[node] = shape if node.op.kind in ("input", "view") else \
                node.op.expr_shape(node, args, shape)
            inline[node] = node not in evaluated and self._inlinable(node, expr_shape[node])
        for node in self.order:
            if _is(node, MatMulOp) and self.dtype in GEMM_DTYPES and node not in evaluated:
                self._fuse_epilogue(node, inline)
        return inline

    def _inlinable(self, node, expr_shape):
        if node.op.kind in ("input", "view", "matmul"):
            return False
        users = self.users[node]
        if any(u.op.needs_tensor(u, i, self.shapes) for u, i in users):
            return False
        if isinstance(node.op, ConstantOp):
            return True
        if len(users) != 1:
            return False
        user, index = users[0]
        return (user.op.kind != "reduce" or user.op.takes_broadcast(index)
                or expr_shape == self.shapes[node])

    def _fuse_epilogue(self, product, inline):
        """Keep ``product`` in its user's tree where the GEMM epilogue computes the rest:
        ``relu(product)``, ``product + bias`` and ``relu(product + bias)``."""
        if len(self.users[product]) != 1:
            return
        user, index = self.users[product][0]
        if _is(user, UnaryOp, "relu"):
            inline[product], inline[user] = True, False
        elif _is(user, BinaryOp, "add") and len(self.shapes[user]) == 2 \
                and self._is_bias(self.args[user][1 - index], inline):
            inline[product] = True
            after = self.users[user]
            if inline[user] and _is(after[0][0], UnaryOp, "relu"):
                inline[after[0][0]] = False
            else:
                inline[user] = False

    def _is_bias(self, node, inline):
        """True when ``node``'s value at run time is a tensor of at most 2 dimensions."""
        if _is(node, BroadcastToOp) and inline[node]:
            node = self.args[node][0]
        return not inline[node] and len(self.shapes[node]) <= 2

    def _soonest_first(self, order):
        """``order`` stably sorted by the number of kernels each node follows at
        least: roots that do not depend on each other (a layer's weight and
        data gradients) are issued side by side, where lanes overlap them.
        Still topological: a node follows more kernels than its inputs, or
        as many and it came after them."""
        level = {}
        for node in order:
            below = max((level[self.args[node][i]] for i in node.op.value_inputs(node)), default=0)
            runs_kernel = node.op.kind not in ("input", "view") and not self.inline[node]
            level[node] = below + runs_kernel
        return sorted(order, key=level.__getitem__)

    # -- memory ---------------------------------------------------------
    def _base(self, node):
        """The node whose buffer ``node``'s value lives in (views resolved)."""
        while node.op.kind == "view":
            node = self.args[node][0]
        return node

    def _reads(self, root):
        """Bases of the kept values the tree of ``root`` reads."""
        reads, stack = set(), [self.args[root][i] for i in root.op.value_inputs(root)]
        while stack:
            node = stack.pop()
            if self.inline[node]:
                stack.extend(self.args[node][i] for i in node.op.value_inputs(node))
            else:
                reads.add(self._base(node))
        return reads

    def _allocate(self):
        """One buffer view per root; a buffer is reused once its last reader has run.

        Also ``self.after``: per root, the earlier roots it must follow --
        those whose values its tree reads, and those that wrote or read the
        buffer it reuses -- for the lanes that run independent roots
        concurrently (:mod:`gpuarray.core.lanes`).  A freed buffer is reused
        only by a root that follows all of its users anyway (through what it
        reads): sharing memory never orders independent work.
        """
        last_use = {}
        step_reads = [self._reads(root) for root in self.roots]
        for step, reads in enumerate(step_reads):
            for base in reads:
                last_use[base] = step
        for node in self.eval_nodes:
            last_use[self._base(node)] = len(self.roots)
        self.buffers, self.out, free, owner = [], {}, [], {}
        # users: id(flat) -> steps that wrote or read it; ancestors: per step,
        # the steps it follows through the values it reads
        users, flat_of, producer, ancestors, self.after = {}, {}, {}, [], []
        for step, root in enumerate(self.roots):
            read = [base for base in step_reads[step] if base in flat_of]
            follows = {producer[base] for base in read}
            ancestors.append(follows.union(*(ancestors[s] for s in follows)))
            flat = self._buffer(free, size_of(self.shapes[root]), users, ancestors[step])
            self.out[root] = flat[:size_of(self.shapes[root])].reshape(self.shapes[root])
            owner[root] = flat_of[root] = flat
            self.after.append(sorted(follows | users.get(id(flat), set())))
            producer[root] = step
            for f in [flat_of[base] for base in read] + [flat]:
                users.setdefault(id(f), set()).add(step)
            for base in step_reads[step] | {root}:
                if base in owner and last_use.get(base, step) == step:
                    free.append(owner.pop(base))
        self.plan_bytes = sum(flat.size for flat in self.buffers) * self.dtype.itemsize
        self.naive_bytes = sum(size_of(self.shapes[r]) for r in self.roots) * self.dtype.itemsize
        self.lanes = self.ng._lanes(self.after)

    def _buffer(self, free, size, users, ancestors):
        """The smallest freed buffer of ``size`` elements whose users all come
        before the root (``ancestors``), taken from ``free``; else a new one."""
        fits = [k for k, flat in enumerate(free)
                if flat.size >= max(size, 1) and users[id(flat)] <= ancestors]
        if fits:
            return free.pop(min(fits, key=lambda k: free[k].size))
        flat = self.ng.empty((max(size, 1),), self.dtype)
        self.buffers.append(flat)
        return flat

    # -- running --------------------------------------------------------
    def run(self, feeds, concurrent=False):
        """Evaluate with ``feeds`` (node -> tensor); the evaluated nodes' tensors.

        ``concurrent``: run independent roots on the lanes' streams, each
        after the roots it follows (``self.after``).
        """
        values, lanes, step = dict(feeds), self.lanes if concurrent else IN_ORDER, 0
        lanes.start()
        try:
            for node in self.order:
                if node.op.kind == "view":
                    values[node] = self._tree(node, values, force=True)
                elif node in self.out:
                    lanes.enter(step)
                    try:
                        self.out[node][:] = self._tree(node, values, force=True)
                    finally:
                        lanes.leave(step)
                    values[node], step = self.out[node], step + 1
        finally:
            lanes.finish()
        return [values[n] for n in self.eval_nodes]

    def _tree(self, node, values, force=False):
        if not force and node in values:
            return values[node]
        wanted = node.op.value_inputs(node)
        args = [self._tree(x, values) if i in wanted else None for i, x in enumerate(self.args[node])]
        return node.op.expr(self.ng, node, args, self.shapes)

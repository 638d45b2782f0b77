"""Code generation for the reduction modes (``reduce`` and ``bcast``).

In: the kernel writer of :mod:`gpuarray.fusion.writer` (program, layout,
helpers).  Out: the body of a kernel in which each row -- one point of the
kept axes -- is handled by a group of ``tpr`` threads, or by every block of
a thread-block cluster when rows are few and long.

A ``partial`` kernel (see :mod:`gpuarray.fusion.split`) gives each row several
blocks and stores one partial result per block.

Per row: row-level values that need no reduction are computed first; then
each reduction pass loops over the row, accumulating one value per thread
for every reduction of that pass, and combines the group's values --
warp shuffles, then shared memory across warps, then distributed shared
memory across the cluster.  Barriers: one after the partials are written,
one after they are read, so the next pass (e.g. softmax's sum after its
max) never overwrites partials still being read.  Last, ``bcast`` loops
over the row again storing every element, ``reduce`` stores one value per
row.
"""
from ..core import ops
from .layout import CLUSTER, MAX_THREADS
from .writer import identity


class ReductionWriter:
    """Writes the body of a reduction-mode kernel into a generator's lines."""

    def __init__(self, gen):
        self.g, self.p, self.lay = gen, gen.p, gen.lay
        self.reductions = [i for i, ins in enumerate(self.p.instrs)
                           if ins.op in _COMBINE or ins.op in ops.USER_REDUCTIONS]

    def body(self):
        """The kernel body: prologue, row offsets, passes, final stores."""
        g = self.g
        self.prologue()
        g.lines += g.decompose("row", "o", self.lay.n_outer,
                               ["out"] + [str(k) for k in range(g.nleaves)], "    ")
        self.emit_row_level(0)
        if self.lay.cache:
            self.load_cache()
        for stage in range(1, self.p.nstages + 1):
            self.reduction_pass(stage)
            self.emit_row_level(stage)
        self.final()
        g.lines.append("  }")
        return g.lines

    def prologue(self):
        """Sizes, shared memory, and the loop handing rows to thread groups."""
        g = self.g
        g.lines += ["  ga_idx rows = 1, L = 1;"]
        g.lines += [f"  rows *= n_o{d};" for d in range(self.lay.n_outer)]
        g.lines += [f"  L *= n_i{d};" for d in range(self.lay.n_inner)]
        slots = MAX_THREADS if self.lay.columns else 32
        for r in self.reductions:
            ins = self.p.instrs[r]
            g.lines.append(f"  __shared__ {self.acc_type(r)} sm{r}[{slots}];")
            if ins.op in ("argmax", "argmin"):
                g.lines.append(f"  __shared__ long long smi{r}[{slots}];")
            if self.lay.cluster:
                # the value's words (two for complex128), then argmax's index
                g.lines.append(f"  __shared__ unsigned long long cl{r}[3];")
        if self.lay.columns:
            self.column_prologue()
        elif self.p.mode == "partial":
            # the tpr argument carries the number of blocks (chunks) per row
            g.lines += [
                "  const int tpr_i = blockDim.x, group = 0;",
                "  const ga_idx chunks = (ga_idx)tpr, chunk = blockIdx.x % chunks;",
                "  const ga_idx lane = chunk * blockDim.x + threadIdx.x;",
                "  const ga_idx step = (ga_idx)blockDim.x * chunks;",
                "  for (ga_idx row = blockIdx.x / chunks; row < rows; row += gridDim.x / chunks) {",
                "    const bool active = true;"]
        elif self.lay.cluster:
            g.lines += [
                "  const int tpr_i = blockDim.x, group = 0;",
                "  const ga_idx lane = (ga_idx)ga_cluster_rank() * blockDim.x + threadIdx.x;",
                f"  const ga_idx step = (ga_idx)blockDim.x * {CLUSTER};",
                "  for (ga_idx row = ga_cluster_id(); row < rows; row += ga_cluster_count()) {",
                "    const bool active = true;"]
        else:
            g.lines += [
                "  const int tpr_i = (int)tpr, group = threadIdx.x / tpr_i;",
                "  const ga_idx lane = threadIdx.x % tpr_i, step = tpr_i;",
                "  const ga_idx rpb = blockDim.x / tpr_i;",
                "  for (ga_idx row0 = blockIdx.x * rpb; row0 < rows; row0 += (ga_idx)gridDim.x * rpb) {",
                "    const bool active = row0 + group < rows;",
                "    const ga_idx row = active ? row0 + group : 0;"]

    def column_prologue(self):
        """Rows that neighbour in memory go to neighbouring threads.

        For reductions along a strided axis (``sum(A, axis=0)`` of a
        C-ordered matrix) a block takes 32 consecutive rows; warp ``w``
        holds element ``w`` (then ``w + step``...) of all 32, so every
        load of a warp reads 32 neighbouring elements.  A row's partials
        sit in different warps and meet in shared memory.
        """
        g = self.g
        g.lines += ["  const int tpr_i = blockDim.x >> 5, group = threadIdx.x & 31;"]
        if self.p.mode == "partial":
            g.lines += [
                "  const ga_idx chunks = (ga_idx)tpr, chunk = blockIdx.x % chunks;",
                "  const ga_idx lane = chunk * tpr_i + (threadIdx.x >> 5);",
                "  const ga_idx step = (ga_idx)tpr_i * chunks;",
                "  for (ga_idx row0 = (blockIdx.x / chunks) * 32; row0 < rows;"
                " row0 += (ga_idx)(gridDim.x / chunks) * 32) {"]
        else:
            g.lines += [
                "  const ga_idx lane = threadIdx.x >> 5, step = tpr_i;",
                "  for (ga_idx row0 = blockIdx.x * 32; row0 < rows; row0 += (ga_idx)gridDim.x * 32) {"]
        g.lines += ["    const bool active = row0 + group < rows;",
                    "    const ga_idx row = active ? row0 + group : 0;"]

    def acc_type(self, r):
        """C type of reduction ``r``'s accumulator (argmax keeps the values' type)."""
        ins = self.p.instrs[r]
        return ins.in_ctypes[0] if ins.op in ("argmax", "argmin") else ins.ctype

    def emit_row_level(self, stage):
        """Row-level values that become computable after pass ``stage``."""
        chosen = [i for i, ins in enumerate(self.p.instrs)
                  if ins.level == "row" and ins.stage == stage and i not in self.reductions]
        self.g.emit(chosen, "row", "    ")

    def inner_offsets(self, with_out, with_leaves=True):
        """Offsets along the reduced axes of the element ``i`` of the row."""
        operands = (["out"] if with_out else []) + (
            [str(k) for k in range(self.g.nleaves)] if with_leaves else [])
        return self.g.decompose("i", "i", self.lay.n_inner, operands, "      ")

    def row_loop(self):
        """Opening of a loop over this thread's elements of the row.

        With a register cache, element ``c`` of a thread is row element
        ``i``: chunks of ``vec`` consecutive elements (1 without vector
        access), the thread's chunks ``step`` chunks apart.
        """
        if self.lay.cache:
            # a guard, not a loop exit: the unrolled loads can all be in flight
            vec = max(self.lay.vec, 1)
            return ["    #pragma unroll",
                    f"    for (int c = 0; c < {self.lay.cache}; ++c) {{",
                    f"      const int i = ((int)lane + (c / {vec}) * (int)step) * {vec} + c % {vec};",
                    "      if (!active || i >= L) continue;"]
        # unrolled: several independent loads in flight per thread before the
        # dependent accumulations (a single one leaves HBM waiting)
        return ["    #pragma unroll 4",
                "    for (ga_idx i = active ? lane : L; i < L; i += step) {"]

    def vector_row_loop(self):
        """Opening of a partial kernel's loop over its vectors of the row, and
        of the loop over one vector's elements (``j``, as the vector scope of
        the writer reads them).

        Every element leaf is read ``vec`` elements at a time with one
        16-byte load (rows contiguous, aligned, a multiple of ``vec`` long):
        a quarter of the index arithmetic and load instructions, which a
        compute-heavy partial kernel issues beside its math.
        """
        vec = self.lay.vec
        lines = ["    #pragma unroll 2",
                 f"    for (ga_idx q = active ? lane : L / {vec}; q < L / {vec}; q += step) {{",
                 f"      const ga_idx i0 = q * {vec};"]
        for ins in self.p.instrs:
            if ins.op == "load" and ins.level == "elem":
                t, k = self.p.leaf_types[ins.arg], ins.arg
                lines.append(f"      const ga_vec<{t}, {vec}> w{k} = "
                             f"*(const ga_vec<{t}, {vec}>*)(p{k} + o{k} + i0);")
        return lines + ["      #pragma unroll", f"      for (int j = 0; j < {vec}; ++j) {{",
                        "      const ga_idx i = i0 + j;"]

    def chunk_loop(self):
        """Opening of a loop over this thread's vector chunks of the row."""
        vec = self.lay.vec
        return ["    #pragma unroll",
                f"    for (int cv = 0; cv < {self.lay.cache // vec}; ++cv) {{",
                f"      const int i0 = ((int)lane + cv * (int)step) * {vec};",
                "      if (!active || i0 >= L) continue;"]

    def load_cache(self):
        """Read each elementwise leaf of the row once into registers."""
        g = self.g
        loads = [ins for ins in self.p.instrs if ins.op == "load" and ins.level == "elem"]
        for ins in loads:
            g.lines.append(f"    {ins.ctype} x{ins.arg}[{self.lay.cache}];")
        if self.lay.vec:
            vec = self.lay.vec
            g.lines += self.chunk_loop()
            for ins in loads:
                t, k = self.p.leaf_types[ins.arg], ins.arg
                g.lines += [
                    f"      const ga_vec<{t}, {vec}> w{k} = "
                    f"*(const ga_vec<{t}, {vec}>*)(p{k} + o{k} + i0);",
                    "      #pragma unroll",
                    f"      for (int v = 0; v < {vec}; ++v) "
                    f"x{k}[cv * {vec} + v] = ga_value<{ins.ctype}>(w{k}.v[v]);"]
            g.lines.append("    }")
            return
        g.lines += self.row_loop()
        g.lines += self.inner_offsets(False)
        for ins in loads:
            g.lines.append(f"      x{ins.arg}[c] = "
                           f"ga_value<{ins.ctype}>(p{ins.arg}[o{ins.arg} + i{ins.arg}]);")
        g.lines.append("    }")

    def reduction_pass(self, stage):
        """One pass over the row accumulating every reduction of ``stage``."""
        g = self.g
        members = [r for r in self.reductions if self.p.instrs[r].stage == stage]
        for r in members:
            ins = self.p.instrs[r]
            g.lines.append(f"    {self.acc_type(r)} acc{r} = {identity(ins.op, self.acc_type(r))};")
            if ins.op in ("argmax", "argmin"):
                g.lines.append(f"    long long idx{r} = 0;")
        vectors = self.p.mode == "partial" and self.lay.vec
        if vectors:
            g.lines += self.vector_row_loop()
            g.vector_scope = True
        else:
            g.lines += self.row_loop()
            if not self.lay.cache:
                g.lines += self.inner_offsets(False)
        g.emit(g.needed_elem([self.p.instrs[r].args[0] for r in members]), "row * L + i", "      ")
        for r in members:
            g.lines.append("      " + self.accumulate(r))
        if vectors:
            g.vector_scope = False
            g.lines.append("      }")
        g.lines.append("    }")
        self.combine_group(members)
        for r in members:
            ins = self.p.instrs[r]
            result = f"idx{r}" if ins.op in ("argmax", "argmin") else f"acc{r}"
            g.lines.append(f"    const {ins.ctype} v{r} = ({ins.ctype}){result};")

    def accumulate(self, r):
        """C statement folding the current element into accumulator ``r``."""
        ins = self.p.instrs[r]
        x = f"({ins.in_ctypes[0]})v{ins.args[0]}"
        if ins.op in ("argmax", "argmin"):
            better = f"ga_arg_better({x}, i, acc{r}, idx{r}, {str(ins.op == 'argmax').lower()})"
            return f"if ({better}) {{ acc{r} = {x}; idx{r} = i; }}"
        if ins.op in ("any", "all"):
            return f"acc{r} = ga_red_{ins.op}(acc{r}, (bool){x});"
        return f"acc{r} = {_combiner(ins.op)}(acc{r}, ({ins.ctype}){x});"

    def merge(self, r, value, index):
        """C statement merging a partial (``value``, ``index``) into acc r."""
        ins = self.p.instrs[r]
        if ins.op in ("argmax", "argmin"):
            want = str(ins.op == "argmax").lower()
            return (f"{{ {self.acc_type(r)} ov = {value}; long long oi = {index}; "
                    f"if (ga_arg_better(ov, oi, acc{r}, idx{r}, {want})) {{ acc{r} = ov; idx{r} = oi; }} }}")
        return f"acc{r} = {_combiner(ins.op)}(acc{r}, {value});"

    def combine_group(self, members):
        """Combine the accumulators of a row's threads (shuffles, shared memory)."""
        if self.lay.columns:
            self.combine_columns(members)
            return
        g = self.g
        g.lines.append("    for (int m = (tpr_i < 32 ? tpr_i : 32) / 2; m > 0; m >>= 1) {")
        for r in members:
            g.lines.append("      " + self.merge(r, f"ga_shfl_xor(acc{r}, m)", f"ga_shfl_xor(idx{r}, m)"))
        g.lines += ["    }", "    if (tpr_i > 32) {",
                    "      const int wpg = tpr_i >> 5, first = group * wpg;",
                    "      if ((threadIdx.x & 31) == 0) {"]
        for r in members:
            g.lines.append(f"        sm{r}[threadIdx.x >> 5] = acc{r};")
            if self.p.instrs[r].op in ("argmax", "argmin"):
                g.lines.append(f"        smi{r}[threadIdx.x >> 5] = idx{r};")
        g.lines += ["      }", "      __syncthreads();"]
        for r in members:
            g.lines.append(f"      acc{r} = sm{r}[first];")
            if self.p.instrs[r].op in ("argmax", "argmin"):
                g.lines.append(f"      idx{r} = smi{r}[first];")
        g.lines.append("      for (int w = first + 1; w < first + wpg; ++w) {")
        for r in members:
            g.lines.append("        " + self.merge(r, f"sm{r}[w]", f"smi{r}[w]" if self.is_arg(r) else "0"))
        g.lines += ["      }", "      __syncthreads();", "    }"]
        if self.lay.cluster:
            self.combine_cluster(members)

    def combine_columns(self, members):
        """Combine a row's partials, one per warp, through shared memory."""
        g = self.g
        for r in members:
            g.lines.append(f"    sm{r}[threadIdx.x] = acc{r};")
            if self.is_arg(r):
                g.lines.append(f"    smi{r}[threadIdx.x] = idx{r};")
        g.lines.append("    __syncthreads();")
        for r in members:
            g.lines.append(f"    acc{r} = sm{r}[group];")
            if self.is_arg(r):
                g.lines.append(f"    idx{r} = smi{r}[group];")
        g.lines.append("    for (int w = 1; w < tpr_i; ++w) {")
        for r in members:
            index = f"smi{r}[w * 32 + group]" if self.is_arg(r) else "0"
            g.lines.append("      " + self.merge(r, f"sm{r}[w * 32 + group]", index))
        g.lines += ["    }", "    __syncthreads();"]

    def is_arg(self, r):
        """True for argmax/argmin, which carry an index with the value."""
        return self.p.instrs[r].op in ("argmax", "argmin")

    def combine_cluster(self, members):
        """Combine the blocks of a cluster through distributed shared memory."""
        g = self.g
        g.lines.append("    if (threadIdx.x == 0) {")
        for r in members:
            g.lines.append(f"      ga_put_words(&cl{r}[0], acc{r});")
            if self.is_arg(r):
                g.lines.append(f"      cl{r}[2] = (unsigned long long)idx{r};")
        g.lines += ["    }", "    ga_cluster_sync();"]
        for r in members:
            g.lines.append(f"    acc{r} = ga_cluster_read<{self.acc_type(r)}>(&cl{r}[0], 0u);")
            if self.is_arg(r):
                g.lines.append(f"    idx{r} = ga_cluster_read<long long>(&cl{r}[2], 0u);")
        g.lines.append(f"    for (unsigned rk = 1; rk < {CLUSTER}; ++rk) {{")
        for r in members:
            index = f"ga_cluster_read<long long>(&cl{r}[2], rk)" if self.is_arg(r) else "0"
            value = f"ga_cluster_read<{self.acc_type(r)}>(&cl{r}[0], rk)"
            g.lines.append("      " + self.merge(r, value, index))
        g.lines += ["    }", "    ga_cluster_sync();"]

    def final(self):
        """The stores, once, or twice for stochastic and nearest rounding."""
        self.g.rounding_variants(self.final_stores)

    def final_stores(self):
        """Store the row's results: every element (bcast), one (reduce), a partial."""
        g = self.g
        root = self.p.root
        if self.p.mode == "partial":
            first = "active && lane == chunk * tpr_i" if self.lay.columns else "threadIdx.x == 0"
            g.lines.append(f"    if ({first}) {{")
            g.store("row", "      ", "out[row * chunks + chunk]")
            g.lines.append("    }")
        elif self.p.mode == "bcast" and self.lay.vec:
            self.vector_store()
        elif self.p.mode == "bcast":
            g.lines += self.row_loop()
            g.lines += self.inner_offsets(True, with_leaves=not self.lay.cache)
            g.emit(g.needed_elem([root]), "row * L + i", "      ")
            g.store("row * L + i", "      ", "out[oout + iout]")
            g.lines.append("    }")
        else:
            g.lines.append("    if (active && lane == 0) {")
            g.lines += [f"      const ga_idx i{k} = 0;" for k in range(g.nleaves)]
            g.emit(g.needed_elem([root]), "row", "      ")
            g.store("row", "      ", "out[oout]")
            g.lines.append("    }")

    def vector_store(self):
        """Final loop of ``bcast`` storing whole vector chunks of the row."""
        g, vec, out_t = self.g, self.lay.vec, self.p.out_type
        g.lines += self.chunk_loop()
        g.lines += [f"      ga_vec<{out_t}, {vec}> wout;", "      #pragma unroll",
                    f"      for (int v = 0; v < {vec}; ++v) {{",
                    f"        const int c = cv * {vec} + v, i = i0 + v;"]
        g.emit(g.needed_elem([self.p.root]), "row * L + i", "        ")
        g.store("row * L + i", "        ", "wout.v[v]")
        g.lines += ["      }", f"      *(ga_vec<{out_t}, {vec}>*)(out + oout + i0) = wout;", "    }"]


_COMBINE = {
    "sum": "ga_red_sum", "prod": "ga_red_prod", "max": "ga_red_max", "min": "ga_red_min",
    "any": "ga_red_any", "all": "ga_red_all", "argmax": None, "argmin": None,
}


def _combiner(op):
    """The device function combining two values of reduction ``op``."""
    user = ops.USER_REDUCTIONS.get(op)
    return user.c_name if user is not None else _COMBINE[op]

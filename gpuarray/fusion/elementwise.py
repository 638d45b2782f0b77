"""Code generation for the elementwise mode (``ew``).

In: a :class:`gpuarray.fusion.writer.KernelWriter` (program, layout and
helpers).  Out: the body of a kernel that walks every element of the
destination with a grid-stride loop: 16-byte vector accesses over
contiguous elements where the layout allows (``vec``), then an element
loop over the rest, decomposing each linear index into per-operand
offsets.  Values that depend on no element (``row`` level: scalars,
broadcast reductions computed elsewhere) are computed once per thread.
"""


class ElementwiseWriter:
    """Writes the body of an elementwise kernel into a writer's lines."""

    def __init__(self, gen):
        self.g, self.p, self.lay = gen, gen.p, gen.lay

    def body(self):
        """The kernel body: row-level values, then the loops (once per rounding mode)."""
        g = self.g
        row_level = [i for i, ins in enumerate(self.p.instrs) if ins.level == "row"]
        g.emit(row_level, "0", "  ")
        g.lines += [
            "  const ga_idx nthreads = (ga_idx)gridDim.x * blockDim.x;",
            "  const ga_idx tid = (ga_idx)blockIdx.x * blockDim.x + threadIdx.x;",
            "  ga_idx n = 1;"]
        g.lines += [f"  n *= n_o{d};" for d in range(self.lay.n_outer)]
        g.rounding_variants(self.loops)
        return g.lines

    def loops(self):
        """The vector loop (where the layout allows), then the element loop."""
        g, vec = self.g, self.lay.vec
        if vec:
            self.vector_loop()
            start = f"(n / {vec}) * {vec} + tid"
        else:
            start = "tid"
        g.lines.append(f"  for (ga_idx e = {start}; e < n; e += nthreads) {{")
        operands = ["out"] + [str(k) for k in range(g.nleaves)]
        g.lines += g.decompose("e", "o", self.lay.n_outer, operands, "    ")
        g.lines += [f"    const ga_idx i{k} = 0;" for k in range(g.nleaves)]
        g.emit(g.needed_elem([self.p.root]), "e", "    ")
        g.store("e", "    ", "out[oout]")
        g.lines.append("  }")

    def vector_loop(self):
        """Loop over ``vec`` contiguous elements a thread, 16-byte accesses."""
        g, vec = self.g, self.lay.vec
        out_t = self.p.out_type
        g.lines += [f"  const ga_idx nv = n / {vec};",
                    "  for (ga_idx q = tid; q < nv; q += nthreads) {",
                    f"    const ga_idx e0 = q * {vec};"]
        for k, t in enumerate(self.p.leaf_types):
            if k in self.lay.bcast_leaves:
                continue
            g.lines.append(
                f"    const ga_vec<{t}, {vec}> w{k} = *(const ga_vec<{t}, {vec}>*)(p{k} + e0);")
        if g.nleaves == 0:
            g.lines.append("    (void)e0;")
        g.lines += [f"    ga_vec<{out_t}, {vec}> wout;",
                    "    #pragma unroll", f"    for (int j = 0; j < {vec}; ++j) {{",
                    "      const ga_idx e = e0 + j;"]
        g.vector_scope = True
        g.emit(g.needed_elem([self.p.root]), "e", "      ")
        g.vector_scope = False
        g.store("e", "      ", "wout.v[j]")
        g.lines += ["    }", f"    *(ga_vec<{out_t}, {vec}>*)(out + e0) = wout;", "  }"]

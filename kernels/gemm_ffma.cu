// gemm_ffma.cu: exact-fp32 GEMM on the FP32 pipes (FFMA), no tensor cores.
//
// What it computes: C = relu(alpha * sum A @ B + bias) + beta * C with fp32
// operands, every product and sum an fp32 fused multiply-add in ascending k
// order (the result of ng.dot on float32 arrays, precision="fp32").  The
// epilogue, batching, K-splitting and tile scheduling follow gemm_common.cuh.
//
// Layouts (suffix _<la><lb>, see gemm_common.cuh): A "k" (a_k == 1) or "m"
// (a_m == 1); B "n" (b_n == 1) or "k" (b_k == 1).  Both operands are staged
// in shared memory K-major (for each k, a row of BM values of A and a row
// of BN values of B), so that every thread reads its fragments as float4s.
//
// Parameters (cuDNN names): M, N, K; batch, kbatch, splits as in GemmArgs.
//
// Design: each thread owns a TM x TN register tile of C made of 4 x 4
// blocks; a warp is 4 x 8 threads, so a float4 read of the B row touches 8
// distinct float4s (128 contiguous bytes: no bank conflict) and the A read
// is a broadcast; the fragments of step k + 1 are read during the FFMAs of
// step k.  K advances BK at a time through STAGES shared-memory stages with
// one barrier per K-tile.  An operand contiguous in m or n (A "m", B "n")
// of an aligned kernel is copied by 16-byte cp.async, STAGES - 1 K-tiles
// ahead; an operand contiguous in k (A "k", B "k") must be transposed: it
// is loaded as float4s into registers one K-tile ahead and stored to shared
// memory as 4 words at the end of the tile (4-byte cp.async would quadruple
// the copy instructions, measured slower); unaligned kernels load element
// by element this way for both operands.  Rows and columns past M and N
// read clamped or as zero (their results are never stored); k past K (the
// ragged last K-tile of each data batch) reads as zero.
//
// Cluster K-split (sm_90): launched with cluster dimensions (CS, 1, 1), CS
// = 2 .. 8, and splits = 1, each tile goes to a cluster of CS blocks, block
// r running the r-th of CS near-equal shares of the tile's K-tiles.  The
// blocks then exchange their accumulators over distributed shared memory,
// each adding up and storing a CS-th of the tile (cluster_reduce): one
// launch, no partial sums in DRAM, no reduce kernel.  The kernels read CS
// at run time (%cluster_nctarank): a plain launch is a cluster of one.  A
// clustered launch gives every block at least CS * ceil(V / CS) * 16 *
// THREADS bytes of dynamic shared memory, V = TM * TN / 4 (the slots of the
// exchange).
//
// Launch shape: grid = (G, 1, 1) for any G >= 1 (G = gemm_tiles_total, or
// fewer for a persistent launch; clustered: CS times the clusters, up to the
// tiles), block = (THREADS, 1, 1), dynamic shared memory >= SMEM bytes
// (over 48 KB: raise the limit with cuFuncSetAttribute).
//
// Kernels (all: 0 spills, no stack frame; registers capped by
// __launch_bounds__ for the blocks per SM given, sm_90 / sm_80):
//   name                                      THREADS  SMEM   STAGES blocks/SM  C per thread
//   ga_gemm_ffma_128x256x16_f32_kn            256      75264  3      1 / 1      8 x 16
//   ga_gemm_ffma_128x128x16_f32_{kn,mn,mk}    256      50688  3      2 / 1      8 x 8
//   ga_gemm_ffma_128x128x8_f32_kk             256      16896  2      2 / 1      8 x 8
//   ga_gemm_ffma_128x256x16_f32_kk            256      50176  2      1 / 1      8 x 16
//   ga_gemm_ffmau_128x128x8_f32_{kn,kk,mn,mk} 256      16896  2      2 / 1      8 x 8
//   ga_gemm_ffma_64x64x16_f32_{kn,kk,mn,mk}   128      26112  3      4 / 4      8 x 4
//   ga_gemm_ffmau_64x64x8_f32_{kn,kk,mn,mk}   128       8704  2      4 / 4      8 x 4
// (kk has no cp.async operand: with both operands in staging registers, BK =
// 16 would not fit 128 registers at 128 x 128, hence its BK = 8.)  The wide
// tile (128 outputs a thread, 255 registers, one block an SM) spends 6% of
// a K-tile's instructions on other than FFMA against 10% for 128 x 128
// (SASS of the main loop: 6 fragment loads for 128 FFMAs a k, not 4 for
// 64), at the price of one block an SM waiting at each K-tile's barrier:
// on the H200 it ran 2-4% faster than 128 x 128 in layout kn, 3% slower in
// mn, and 256 x 128 (16 x 8 a thread) was slower in both.  In kk, with
// BK = 16 (both operands staged in registers fit beside 128 accumulators
// at one block an SM), 2-6% faster than 128 x 128 x 8; at BK = 8, slower.
// ffma (aligned) needs: a and b 16-byte aligned; the non-unit operand
// strides (a_m for A "k", a_k for A "m", b_k for B "n", b_n for B "k") and
// batch_a, batch_b multiples of 4 elements.  M, N, K, ldc and C: anything.
// ffmau (unaligned) reads element by element with the strides as given, so
// it is right for any pointers and strides (the layout suffix only picks
// the coalescing pattern).
// The epilogue stores float4s where C is fp32, 16-byte aligned with ldc and
// batch_c multiples of 4 and flags hold only relu and stats (or the split-K
// slab, with N a multiple of 4); elsewhere it calls gemm_output() per
// element.  Both give identical bits.
#include "gemm_ffma_loads.cuh"

namespace ga_ffma {

// Final values of 4 adjacent outputs (m, n .. n + 3) of tile g, written as
// one float4; the caller has checked that the row and the 4 columns are
// inside C and that vec_epilogue() allows it.  Only alpha, relu and the
// statistics are done here: with a bias or beta the compiler may fuse a
// multiply and an add into one FFMA here but not in gemm_finish() (or the
// other way round), and results must be bit-identical to gemm_output()'s.
GA_D void output4(const GemmArgs &p, const GemmTile &g, int m, int n, const float acc[4], GemmEpi &st) {
    if (p.splits > 1) {
        long long slab = (long long)(g.split * p.batch + g.ob) * p.M;
        *(float4 *)&p.partial[(slab + m) * p.N + n] = make_float4(acc[0], acc[1], acc[2], acc[3]);
        return;
    }
    float out[4];
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float v = st.pre * acc[j];
        if (p.flags & EPI_RELU) v = v < 0.f ? 0.f : v;
        out[j] = v;
        if (p.flags & EPI_STATS) {
            float a = fabsf(v);
            if (a <= 3.402823466e38f) st.max_abs = fmaxf(st.max_abs, a);
            else st.nonfinite += 1;
        }
    }
    *(float4 *)((float *)p.c + (g.ob * p.batch_c + m * p.ldc + n)) = make_float4(out[0], out[1], out[2], out[3]);
}

// Whether output4() may serve this launch (else gemm_output per element).
GA_D bool vec_epilogue(const GemmArgs &p) {
    if (p.splits > 1) return (p.N & 3) == 0 && ((unsigned long long)p.partial & 15) == 0;
    return p.c_type == GEMM_F32 && !(p.flags & (EPI_SR | EPI_BIAS | EPI_BETA)) &&
           ((unsigned long long)p.c & 15) == 0 && (p.ldc & 3) == 0 && (p.batch_c & 3) == 0;
}

// Per-thread register tile and its fragments.  Threads form warps of
// 4 x 8; warp w covers rows (w / WARPS_N) * 4TM .. + 4TM and columns
// (w % WARPS_N) * 8TN .. + 8TN; a thread's TM rows are ly*4 + {0..3} + 16*i,
// its TN columns lx*4 + {0..3} + 32*j (ly, lx: lane / 8, lane % 8).
template <int BM, int BN, int BK, int TM, int TN, int THREADS>
struct Micro {
    static constexpr int WARPS_N = BN / (8 * TN), WARPS_M = BM / (4 * TM);
    static_assert(WARPS_M * WARPS_N * 32 == THREADS && TM % 4 == 0 && TN % 4 == 0, "warp tiling");
    static constexpr int LDA = BM + 4, LDB = BN + 4;
    static constexpr int A_TILE = BK * LDA, STAGE = BK * (LDA + LDB);  // floats; B follows A in a stage

    float acc[TM][TN];
    float fa[2][TM], fb[2][TN];
    int frag_m, frag_n;  // offsets of the fragments in a stage (k = 0)

    GA_D void init(int tid) {
        const int warp = tid >> 5, lane = tid & 31;
        frag_m = (warp / WARPS_N) * 4 * TM + (lane >> 3) * 4;
        frag_n = A_TILE + (warp % WARPS_N) * 8 * TN + (lane & 7) * 4;
        #pragma unroll
        for (int i = 0; i < TM; ++i)
            #pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
    }
    // fragments of step k of the stage at s into buffer b
    GA_D void load(int b, const float *s, int k) {
        #pragma unroll
        for (int i = 0; i < TM / 4; ++i) *(float4 *)&fa[b][4 * i] = *(const float4 *)&s[k * LDA + frag_m + 16 * i];
        #pragma unroll
        for (int j = 0; j < TN / 4; ++j) *(float4 *)&fb[b][4 * j] = *(const float4 *)&s[k * LDB + frag_n + 32 * j];
    }
    GA_D void fma(int b) {
        #pragma unroll
        for (int i = 0; i < TM; ++i)
            #pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(fa[b][i], fb[b][j], acc[i][j]);
    }
};

// This block's cluster: its size, this block's rank in it, the cluster's
// index in the grid and the number of clusters (a launch without cluster
// dimensions, and any launch below sm_90: clusters of one block).  Special
// registers, read where used rather than kept live across the main loop.
GA_D unsigned cluster_size() {
#if __CUDA_ARCH__ >= 900
    unsigned n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
#else
    return 1;
#endif
}
GA_D unsigned cluster_rank() {
#if __CUDA_ARCH__ >= 900
    return ga_cluster_rank();
#else
    return 0;
#endif
}
GA_D int cluster_index() {
#if __CUDA_ARCH__ >= 900
    return (int)ga_cluster_id();
#else
    return blockIdx.x;
#endif
}
GA_D int cluster_count() {
#if __CUDA_ARCH__ >= 900
    return (int)ga_cluster_count();
#else
    return gridDim.x;
#endif
}

// The main loop over the K-tiles [t0, t1) of tile g, into u.acc.  STAGES
// shared-memory stages; cp.async copies of K-tile t + STAGES - 1 and the
// register loads of K-tile t + 1 are in flight while tile t is multiplied;
// one barrier per K-tile.  A stage refilled during tile t was last read
// during tile t - 1, before the barrier that ended it.
template <int BM, int BN, int BK, int TM, int TN, int THREADS, Contig CA, Contig CB, bool ALIGNED, int STAGES>
GA_D void mainloop(const GemmArgs &p, const GemmTile &g, Micro<BM, BN, BK, TM, TN, THREADS> &u, float *smem) {
    typedef Micro<BM, BN, BK, TM, TN, THREADS> U;
    Feed<BM, BK, THREADS, CA, ALIGNED> fa;
    Feed<BN, BK, THREADS, CB, ALIGNED> fb;
    const Operand oa = {(const float *)p.a, p.a_m, p.a_k, p.batch_a, p.M};
    const Operand ob = {(const float *)p.b, p.b_n, p.b_k, p.batch_b, p.N};
    const long long a_step = BK * p.a_k, b_step = BK * p.b_k, a_batch = p.batch_a, b_batch = p.batch_b;
    const unsigned s0 = (unsigned)__cvta_generic_to_shared(smem);
    const int K = p.K;

    int t0, t1, db, k0;
    gemm_k_range(p, g.split, BK, &t0, &t1);
#if __CUDA_ARCH__ >= 900
    const unsigned cs = cluster_size();
    if (cs > 1) ga_cluster_k_range(t0, t1, cluster_rank(), cs);
#endif
    gemm_k_tile(p, g.ob, t0, BK, &db, &k0);
    fa.init(oa, g.tm * BM, db, k0);
    fb.init(ob, g.tn * BN, db, k0);

    // cp.async: K-tiles t0 .. t0 + STAGES - 2 into stages 0 .. STAGES - 2,
    // one commit group per K-tile (empty past t1) so that the wait count is fixed
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (t0 + s < t1) {
            fa.copy(s0 + s * U::STAGE * 4, K, a_step, a_batch);
            fb.copy(s0 + (s * U::STAGE + U::A_TILE) * 4, K, b_step, b_batch);
        }
        cp_async_commit();
    }
    if (t0 < t1) {
        fa.fetch(p.M, K, a_step, a_batch);
        fb.fetch(p.N, K, b_step, b_batch);
        fa.put(smem);
        fb.put(smem + U::A_TILE);
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();

    // Both operands register-staged with BK >= 16: A's next K-tile is stored
    // halfway through the math and B's loaded only then, which halves the
    // staging registers.
    constexpr bool SPLIT = !decltype(fa)::ASYNC && !decltype(fb)::ASYNC && BK >= 16;
    int s_use = 0;  // stage of K-tile t; K-tile t + STAGES - 1 goes to the stage before it
    const float *s = smem;
    u.load(0, s, 0);
    for (int t = t0; t < t1; ++t) {
        if (t + STAGES - 1 < t1) {
            const int s_copy = s_use == 0 ? STAGES - 1 : s_use - 1;
            fa.copy(s0 + s_copy * U::STAGE * 4, K, a_step, a_batch);
            fb.copy(s0 + (s_copy * U::STAGE + U::A_TILE) * 4, K, b_step, b_batch);
        }
        cp_async_commit();
        const bool more = t + 1 < t1;
        const int s_next = s_use + 1 == STAGES ? 0 : s_use + 1;
        if (more) {
            fa.fetch(p.M, K, a_step, a_batch);
            if (!SPLIT) fb.fetch(p.N, K, b_step, b_batch);
        }
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            const int cur = k & 1;
            if (SPLIT && k == BK / 2 && more) {
                fa.put(smem + s_next * U::STAGE);
                fb.fetch(p.N, K, b_step, b_batch);
            }
            if (k < BK - 1) {
                u.load(cur ^ 1, s, k + 1);
            } else if (more) {
                s_use = s_next;
                float *next = smem + s_use * U::STAGE;
                if (!SPLIT) fa.put(next);
                fb.put(next + U::A_TILE);
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                s = next;
                u.load(cur ^ 1, s, 0);
            }
            u.fma(cur);
        }
    }
}

// The cluster K-split's hand-over (see the header), a reduce-scatter: each
// thread's accumulators are VECS float4s, and vector v belongs to block
// v % cs of the cluster, which adds it up and stores it.  Once every block
// is past its main loop (a cluster barrier: other blocks write into this
// one's shared memory), every block stores each vector into its owner's
// shared memory, slot rank * share + v / cs (share = ceil(VECS / cs)), 16
// bytes a thread side by side; the stores are remote but asynchronous, so
// their latencies overlap.  After a second cluster barrier (the stores are
// visible) each block adds its vectors' slots in rank order (so the bits
// do not depend on timing) from its own shared memory.  (Block 0 reading
// every block's accumulators over distributed shared memory instead waited
// on remote loads: 2 us for each block added.)  Returns the vectors this
// block owns, as a bit mask; the caller stores only those.
template <int TM, int TN, int THREADS>
GA_D unsigned cluster_reduce(float (&acc)[TM][TN], float *smem) {
    constexpr int VECS = TM * TN / 4;
    static_assert(VECS <= 32, "one bit a vector");
#if __CUDA_ARCH__ >= 900
    const unsigned rank = cluster_rank(), cs = cluster_size(), share = (VECS + cs - 1) / cs;
    const unsigned mine = (unsigned)__cvta_generic_to_shared(smem) + 16 * threadIdx.x;
    float4 *const slots = (float4 *)smem + threadIdx.x;
    ga_cluster_sync();
    unsigned owner = 0, index = 0;  // of vector v: v % cs and v / cs
    #pragma unroll
    for (int v = 0; v < VECS; ++v) {
        const float *a = &acc[4 * v / TN][4 * v % TN];
        ga_st_cluster128f(ga_mapa(mine + 16 * THREADS * (rank * share + index), owner), a[0], a[1], a[2], a[3]);
        if (++owner == cs) owner = 0, ++index;
    }
    ga_cluster_sync();
    unsigned owned = 0;
    owner = index = 0;
    #pragma unroll
    for (int v = 0; v < VECS; ++v) {
        if (owner == rank) {
            float *a = &acc[4 * v / TN][4 * v % TN];
            float4 x = slots[THREADS * index];
            a[0] = x.x;
            a[1] = x.y;
            a[2] = x.z;
            a[3] = x.w;
            for (unsigned r = 1; r < cs; ++r) {
                x = slots[THREADS * (r * share + index)];
                a[0] += x.x;
                a[1] += x.y;
                a[2] += x.z;
                a[3] += x.w;
            }
            owned |= 1u << v;
        }
        if (++owner == cs) owner = 0, ++index;
    }
    return owned;
#else
    return ~0u;
#endif
}

// The kernel body: a (persistent) loop over output tiles, one per cluster.
template <int BM, int BN, int BK, int TM, int TN, int THREADS, Contig CA, Contig CB, bool ALIGNED, int STAGES>
GA_D void gemm(const GemmArgs &p) {
    static_assert(STAGES >= 2, "stages");
    typedef Micro<BM, BN, BK, TM, TN, THREADS> U;
    extern __shared__ float4 ga_ffma_smem[];
    float *const smem = (float *)ga_ffma_smem;
    GemmEpi st = gemm_epi_init(p);

    const int tiles = gemm_tiles_total(p, BM, BN);
    for (int tile = cluster_index(); tile < tiles; tile += cluster_count()) {
        const GemmTile g = gemm_tile(p, tile, BM, BN);
        U u;
        u.init(threadIdx.x);
        __syncthreads();  // the previous tile's last fragment reads are done
        mainloop<BM, BN, BK, TM, TN, THREADS, CA, CB, ALIGNED, STAGES>(p, g, u, smem);
        const unsigned owned = cluster_size() > 1 ? cluster_reduce<TM, TN, THREADS>(u.acc, smem) : ~0u;

        const bool vec_out = vec_epilogue(p);
        const int m0 = g.tm * BM + u.frag_m, n0 = g.tn * BN + u.frag_n - U::A_TILE;
        #pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int m = m0 + 16 * (i / 4) + (i % 4);
            #pragma unroll
            for (int j = 0; j < TN / 4; ++j) {
                if (!(owned >> (i * (TN / 4) + j) & 1)) continue;
                const int n = n0 + 32 * j;
                if (vec_out && m < p.M && n + 4 <= p.N) {
                    output4(p, g, m, n, &u.acc[i][4 * j], st);
                } else {
                    #pragma unroll
                    for (int e = 0; e < 4; ++e) gemm_output(p, g, m, n + e, u.acc[i][4 * j + e], st);
                }
            }
        }
    }
    gemm_epi_flush(p, st);
}

}  // namespace ga_ffma

// Contiguous dimension of A for layout letter la, of B for lb.
#define FFMA_CA_k ga_ffma::CONTIG_K
#define FFMA_CA_m ga_ffma::CONTIG_MN
#define FFMA_CB_n ga_ffma::CONTIG_MN
#define FFMA_CB_k ga_ffma::CONTIG_K

#define FFMA_KERNEL(FAMILY, ALIGNED, STAGES, BM, BN, BK, TM, TN, THREADS, MINB, LA, LB)                    \
    extern "C" __global__ void __launch_bounds__(THREADS, MINB)                                          \
        ga_gemm_##FAMILY##_##BM##x##BN##x##BK##_f32_##LA##LB(const __grid_constant__ GemmArgs p) {        \
        ga_ffma::gemm<BM, BN, BK, TM, TN, THREADS, FFMA_CA_##LA, FFMA_CB_##LB, ALIGNED, STAGES>(p);       \
    }

#define FFMA_LAYOUTS(FAMILY, ALIGNED, STAGES, BM, BN, BK, TM, TN, THREADS, MINB)  \
    FFMA_KERNEL(FAMILY, ALIGNED, STAGES, BM, BN, BK, TM, TN, THREADS, MINB, k, n)  \
    FFMA_KERNEL(FAMILY, ALIGNED, STAGES, BM, BN, BK, TM, TN, THREADS, MINB, k, k)  \
    FFMA_KERNEL(FAMILY, ALIGNED, STAGES, BM, BN, BK, TM, TN, THREADS, MINB, m, n)  \
    FFMA_KERNEL(FAMILY, ALIGNED, STAGES, BM, BN, BK, TM, TN, THREADS, MINB, m, k)

// Blocks per SM of the 128 x 128 kernels: 2 (128 registers) on sm_90; on
// sm_80, whose register allocation spills a few words at 128, one block of
// 8 warps (sm_80 has 16 FP32 lanes per scheduler, so 2 warps can keep its
// FFMA pipe busy; not measured here: no sm_80 device was at hand).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define FFMA_128_BLOCKS 1
#else
#define FFMA_128_BLOCKS 2
#endif

// (FFMA_NO_INSTANCES: the templates without the kernels, for test harnesses)
#ifndef FFMA_NO_INSTANCES
// the wide tile, then 128 x 128, whose kk stages both operands through
// registers (no cp.async side): BK = 16 would need more than 128 registers
FFMA_KERNEL(ffma, true, 3, 128, 256, 16, 8, 16, 256, 1, k, n)
FFMA_KERNEL(ffma, true, 3, 128, 128, 16, 8, 8, 256, FFMA_128_BLOCKS, k, n)
FFMA_KERNEL(ffma, true, 2, 128, 128, 8, 8, 8, 256, FFMA_128_BLOCKS, k, k)
FFMA_KERNEL(ffma, true, 2, 128, 256, 16, 8, 16, 256, 1, k, k)
FFMA_KERNEL(ffma, true, 3, 128, 128, 16, 8, 8, 256, FFMA_128_BLOCKS, m, n)
FFMA_KERNEL(ffma, true, 3, 128, 128, 16, 8, 8, 256, FFMA_128_BLOCKS, m, k)
FFMA_LAYOUTS(ffmau, false, 2, 128, 128, 8, 8, 8, 256, FFMA_128_BLOCKS)
FFMA_LAYOUTS(ffma, true, 3, 64, 64, 16, 8, 4, 128, 4)
FFMA_LAYOUTS(ffmau, false, 2, 64, 64, 8, 8, 4, 128, 4)
#endif

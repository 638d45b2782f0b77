// gemm_sm90.cuh: the Hopper GEMM kernel body (TMA + wgmma + mbarrier pipeline),
// shared by gemm_sm90.cu (matrix products) and conv_sm90.cu (implicit-GEMM
// convolution, whose producer loads A through an im2col tensor map).  What
// it computes, the layouts, tensor maps and launch shape: gemm_sm90.cu's
// header; the convolution's: conv_sm90.cu's.
#pragma once
#include "conv_loads.cuh"
#include "sm90_epilogue.cuh"
#include "sm90_ptx.cuh"
#include "stream_k.cuh"

#define GA_SM90_SMEM_MAX 232448  // 227 KB: the most dynamic shared memory a block may have

// ---- the epilogue's path ------------------------------------------------------
// How a consumer warpgroup finishes and stores its accumulators, decided once
// a launch (one int through the tile loop: the 128x256 tiles' consumers, at
// setmaxnreg's 232 registers, spilled with a flag for each):
#define GA_EPI_STAGED 0       // fp32 staging, every output by gemm_output
#define GA_EPI_STAGED_FAST 1  // the same, 8 aligned outputs at a time where it can (ga_store8)
#define GA_EPI_PARTIALS 2     // split-K partial sums, straight from the registers
#define GA_EPI_32 3           // an fp32 C straight from the registers
#define GA_EPI_16 4           // a 16-bit C through stmatrix staging (ga_epilogue16)
#define GA_EPI_TMA16 5        // ... stored by the copy engine (ga_epilogue16_tma)
template <int BN, int CONV> GA_D int ga_epilogue_path(const GemmArgs &p) {
    // the transposed fprop: launched only where ga_epilogue16t can finish C
    if constexpr (CONV == GA_CONV_FPROP_T)
        return (p.flags & EPI_TMA_C) && !((unsigned long long)p.c & 15) ? GA_EPI_TMA16 : GA_EPI_16;
    // ga_store8's alignment: 16 bytes (8 bytes for FP8's 8-byte stores)
    const int vec = p.c_type == GEMM_F32 ? 4 : 8, align = p.c_type >= GEMM_E4M3 ? 7 : 15;
    const bool fast = p.splits == 1 && !(p.flags & (EPI_BETA | EPI_SR | EPI_STATS)) && p.ldc % vec == 0 &&
                      p.batch_c % vec == 0 && !((unsigned long long)p.c & align);
    const bool lean = !(p.flags & EPI_AMAX);  // (the amax is kept by gemm_output)
    if (fast && lean && (p.c_type == GEMM_F16 || p.c_type == GEMM_BF16) && !((p.flags & EPI_BIAS) && p.bias_m != 0))
        // the copy engine stores C where the host encoded its map
        return BN % 64 == 0 && (p.flags & EPI_TMA_C) ? GA_EPI_TMA16 : GA_EPI_16;
    if (fast && lean && p.c_type == GEMM_F32) return GA_EPI_32;
    if (p.splits > 1 && p.N % 2 == 0) return GA_EPI_PARTIALS;
    return fast ? GA_EPI_STAGED_FAST : GA_EPI_STAGED;
}

// ---- configuration ---------------------------------------------------------
template <int BM, int BN, int IN, bool PP = false> struct GaSm90Cfg {
    // Consumer warpgroups: one per 64 rows, or for BM = 256 two of 128 rows
    // (two m64 wgmmas a K step, on SUB = 2 accumulator sets).  A 256-row
    // tile reads as many operand bytes per flop as a 128x256 one: layers of
    // few output channels, which leave a 128-row tile short of operand
    // bandwidth from L2 (H100: ~7.9 TB/s into the SMs, 55% tensor-pipe use on
    // 128x128 tiles), get the 128x256 tile's reuse.  Ping-pong (PP): two
    // consumer warpgroups, each holding a whole tile of BM / 64 parts.
    static constexpr int NC = PP ? 2 : BM > 128 ? 2 : BM / 64;
    static constexpr int SUB = PP ? BM / 64 : BM / 64 / NC;  // 64-row parts per consumer warpgroup
    static constexpr int THREADS = 128 * (NC + 1);      // + the producer warpgroup
    static constexpr int ESZ = IN == GA_IN_TF32 ? 4 : IN >= GA_IN_E4M3 ? 1 : 2;
    static constexpr int BK = 128 / ESZ;                // one 128-byte swizzle row of K
    static constexpr int KSTEP = 32 / ESZ;              // K of one wgmma
    // An "n"-major B arrives in 64-wide panels (a 128-byte swizzle row
    // each): a 96-wide tile's second panel is half used, and its stage
    // holds the whole panel.  A "k"-major B is BN rows of 128 bytes.
    static constexpr int B_ROWS = BN > 64 ? (BN + 63) / 64 * 64 : BN;
    static constexpr int A_BYTES = BM * 128, B_BYTES = B_ROWS * 128, STAGE_BYTES = A_BYTES + B_BYTES;
    // the bytes a stage's copies bring, by B's layout
    template <int LB> static constexpr int TX_BYTES = A_BYTES + (LB == GA_MAJOR_K ? BN * 128 : B_BYTES);
    static constexpr int EPI_BYTES = NC * 64 * GA_EPI_STRIDE * 4;  // fp32 staging of 64 x 32 per consumer
    // As many stages as fit (up to 16): a skinny tile streams its operands
    // from DRAM, and one block keeps about STAGES * STAGE_BYTES in flight.
    static constexpr int FIT = (GA_SM90_SMEM_MAX - 1024 - EPI_BYTES - 16 * 17) / STAGE_BYTES;
    static constexpr int STAGES = FIT < 16 ? FIT : 16;
    // + a full and an empty mbarrier per stage, + the cluster K-split's two
    static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + EPI_BYTES + 16 * STAGES + 16;
    // a 64-row part's accumulators as the cluster K-split passes them
    static constexpr int FRAG_BYTES = 64 * BN * 4;
    static_assert(NC * SUB * FRAG_BYTES <= STAGES * STAGE_BYTES, "the accumulators pass through the drained ring");
};

// The cluster K-split.  A launch with cluster dimensions (CS, 1, 1) gives
// each tile to a cluster of CS blocks, block r running the r-th of CS equal
// parts of the tile's K-tiles: skinny products (few tiles, long K) then
// fill the machine in one launch, with no partial sums in DRAM and no
// second kernel.  Blocks 1 .. CS - 1 leave their accumulators in their
// operand rings, drained once every consumer warpgroup is past its
// mainloop (16 bytes a thread side by side: conflict-free), and arrive on
// block 0's `ready` barrier; block 0 adds them in rank order over
// distributed shared memory (so the bits do not depend on timing), then
// arrives on every block's `freed` barrier, which lets their producers
// refill the rings for the next tile, and runs the epilogue.  (No block
// leaves the kernel before a last cluster barrier: a block's shared memory
// lives only as long as the block.)  Returns whether this block finishes
// the tile.  `frag`: this thread's place in its warpgroup's first part's
// FRAG_BYTES (a 64-row part's accumulators); its other parts' follow.
template <int BN, int NC, int SUB>
GA_D bool ga_cluster_reduce(float (&acc)[SUB][BN / 2], unsigned frag, unsigned ready, unsigned freed,
                            unsigned rank, unsigned cs, unsigned parity) {
    constexpr unsigned PART = 64 * BN * 4;
    if (rank != 0) {
        // The ring's last stages may still feed the other consumer
        // warpgroup's wgmmas: every consumer is past its mainloop first.
        if constexpr (NC > 1) ga_consumers_sync<NC>();
        #pragma unroll
        for (int u = 0; u < SUB; ++u) {
            #pragma unroll
            for (int i = 0; i < BN / 2; i += 4)
                ga_sts128f(frag + u * PART + 512 * i, acc[u][i], acc[u][i + 1], acc[u][i + 2], acc[u][i + 3]);
        }
        ga_mbar_arrive_cluster(ga_mapa(ready, 0));
        ga_mbar_wait_cluster(freed, parity);
        return false;
    }
    ga_mbar_wait_cluster(ready, parity);
    for (unsigned r = 1; r < cs; ++r) {
        const unsigned remote = ga_mapa(frag, r);
        #pragma unroll
        for (int u = 0; u < SUB; ++u) {
            #pragma unroll
            for (int i = 0; i < BN / 2; i += 4) {
                const float4 v = ga_ld_cluster128f(remote + u * PART + 512 * i);
                acc[u][i] += v.x;
                acc[u][i + 1] += v.y;
                acc[u][i + 2] += v.z;
                acc[u][i + 3] += v.w;
            }
        }
    }
    for (unsigned r = 0; r < cs; ++r) ga_mbar_arrive_cluster(ga_mapa(freed, r));
    return true;
}

// The schedule's next tile of this block: that of its unit (stream_k.cuh),
// whose MC blocks take its MC row blocks, one each, over the same K-tiles
// (the rank narrows K-tiles only for the cluster K-split).
template <int BM, int BN, int BK, int MC>
GA_D bool ga_next_tile(const GemmArgs &p, GaWork &w, unsigned rank, unsigned cs, GemmTile &g, int &kt0, int &kt1) {
    if (!ga_next_work<BM * MC, BN, BK, MC>(p, w, MC > 1 ? 0u : rank, cs, g, kt0, kt1)) return false;
    if constexpr (MC > 1) g.tm = g.tm * MC + (int)(blockIdx.x % MC);  // the cluster rank (clusters run along x)
    return true;
}

// A drained stage goes back to the producer of every block that writes into
// it: this block's, and with multicast pairs each block of the cluster's.
template <int MC> GA_D void ga_stage_release(unsigned empty) {
    if constexpr (MC > 1) {
        #pragma unroll
        for (int r = 0; r < MC; ++r) ga_mbar_arrive_remote(ga_mapa(empty, r));
    } else {
        ga_mbar_arrive(empty);
    }
}

// Ping-pong (PP): the two consumer warpgroups take the block's tiles in
// turn, each a whole tile, and their mainloops take turns too (named
// barriers 4 and 5): one warpgroup's epilogue runs while the other's
// wgmmas keep the tensor cores busy.  Cooperative tiles (both warpgroups
// on one tile) change tiles together, and the tensor cores idle through
// every epilogue (ncu, H200, VGG-A conv2's fprop on 256x128 tiles of 9
// K-tiles: 60% busy).  128x128 tiles ran 1.03-1.07x faster in ping-pong;
// the cooperative 256x128 and 128x256 tiles, which read fewer operand
// bytes per product, stayed ahead of them.  The host launches it on
// data-parallel schedules only (no split-K, stream-K or clusters).
GA_D void ga_pp_wait(int cw) {
    if (cw == 0) asm volatile("bar.sync 4, 256;" ::: "memory");
    else asm volatile("bar.sync 5, 256;" ::: "memory");
}
GA_D void ga_pp_signal(int cw) {
    if (cw == 0) asm volatile("bar.arrive 5, 256;" ::: "memory");
    else asm volatile("bar.arrive 4, 256;" ::: "memory");
}

// Past n stages of the ring (the other warpgroup's tile, under ping-pong).
template <int STAGES> GA_D void ga_ring_skip(int &s, unsigned &phase, int n) {
    const int t = s + n;
    phase ^= (unsigned)(t / STAGES) & 1u;
    s = t % STAGES;
}

// CONV (GA_CONV_*): the producer gathers one operand by im2col (conv_sm90.cu).
// PROMOTE (FP8): each K-tile's products are summed by the tensor cores into
// a second accumulator set, which is then added to the first in fp32 --
// the tensor cores' own FP8 accumulation keeps fewer bits than fp32
// (cuBLASLt's default does the same; "fast accumulation" does not).
// MC (multicast pairs; the filter gradient): launched in clusters of MC
// blocks, which take MC vertically adjacent tiles of the schedule's MC*BM
// rows and share their B: each block gathers 1/MC of B's panels into all
// of them (one L2 read for MC blocks: the filter gradient's 128x256 tiles
// ran at 92% of L2 throughput and 75% tensor-pipe use without it), and a
// stage is free for the next K-tile once every block's consumers are done
// with it.
template <int BM, int BN, int IN, int LA, int LB, int CONV = GA_CONV_NONE, bool PROMOTE = false, int MC = 1,
          bool PP = false>
GA_D void ga_gemm_sm90(const GemmArgs &p, const ConvGeom *cg = nullptr) {
    typedef GaSm90Cfg<BM, BN, IN, PP> C;
    static_assert(MC == 1 || (CONV == GA_CONV_UPDATE && !PROMOTE), "multicast pairs: the filter gradient's B");
    static_assert(!PP || (MC == 1 && !PROMOTE && BM <= 128), "ping-pong: whole tiles of at most 128 rows");
    extern __shared__ unsigned char smem_raw[];
    // 128-byte swizzle repeats every 1024 bytes; tiles start on that period
    // so that descriptors need no base offset.
    const unsigned base = (ga_smem_addr(smem_raw) + 1023) & ~1023u;
    // [stages][epilogue staging][full[STAGES]][empty[STAGES]][ready][freed]
    const unsigned bars = base + C::STAGES * C::STAGE_BYTES + C::EPI_BYTES;
    const unsigned ready = bars + 16 * C::STAGES, freed = ready + 8;
    const int wg = threadIdx.x / 128;
    // cs: blocks of the cluster K-split (ga_cluster_reduce); 1 with multicast pairs
    const unsigned cs = MC > 1 ? 1u : ga_cluster_size(), rank = ga_cluster_rank();
    if (threadIdx.x == 0) {
        for (int s = 0; s < C::STAGES; ++s) {
            ga_mbar_init(bars + 8 * s, 1);                         // the producer's expect_tx
            // per consumer warp (of the tile's warpgroup under ping-pong) of each block
            ga_mbar_init(bars + 8 * (C::STAGES + s), 4 * (PP ? 1 : C::NC) * MC);
        }
        // ga_cluster_reduce: every consumer thread of the other blocks; block 0's
        // (each thread's own release: one arrival per warp measured no faster,
        // and the sanitizer's racecheck cannot follow its ordering)
        ga_mbar_init(ready, cs > 1 ? (cs - 1) * 128 * C::NC : 1);
        ga_mbar_init(freed, 128 * C::NC);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // The other blocks of a cluster arrive on this one's barriers: they are
    // initialised first.  (This barrier costs about 0.7 us.  Split into an
    // arrival here and a wait before the first access to another block, it
    // saved 0.4 us at 4096 x 32 x 4096 but racecheck no longer finished.)
    if (MC > 1 || cs > 1) ga_cluster_sync();
    else __syncthreads();
    // Launched as a dependent (host: every sm90 product and convolution),
    // the launch, the barriers' set-up and the cluster's sync above overlap
    // the previous kernel's last wave; nothing before this point touches
    // global memory.
    ga_grid_dependency_wait();
    // a K-split cluster works on one tile at a time (ga_cluster_reduce), a
    // multicast cluster on MC adjacent ones
    GaWork work = ga_work_start<MC>(p, BM * MC, BN, C::BK, cs);
    GemmTile g;
    int kt0, kt1;

    if (wg == 0) {
        // Producer: one thread keeps the ring full, running ahead across tiles.
        if constexpr (C::NC == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"(&p.tmap_a) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"(&p.tmap_b) : "memory");
            int s = 0;
            unsigned phase = 0, it = 0;
            for (; ga_next_tile<BM, BN, C::BK, MC>(p, work, rank, cs, g, kt0, kt1); ++it) {
                // the ring holds the cluster's accumulators until block 0 has read them
                if (cs > 1 && it > 0) ga_mbar_wait_cluster(freed, (it - 1) & 1);
                for (int kt = kt0; kt < kt1; ++kt) {
                    int db, k0;
                    gemm_k_tile(p, g.ob, kt, C::BK, &db, &k0);
                    const unsigned full = bars + 8 * s, sa = base + s * C::STAGE_BYTES, sb = sa + C::A_BYTES;
                    ga_mbar_wait(bars + 8 * (C::STAGES + s), phase ^ 1);
                    ga_mbar_expect_tx(full, C::template TX_BYTES<LB>);
                    // A broadcast operand (batch stride 0) has a one-batch tensor map.
                    const int dba = p.batch_a ? db : 0, dbb = p.batch_b ? db : 0;
                    const int m0 = g.tm * BM, n0 = g.tn * BN;
                    if constexpr (CONV == GA_CONV_FPROP || CONV == GA_CONV_BPROP || CONV == GA_CONV_FPROP_T) {
                        ga_conv_loads<BN, CONV>(*cg, p, sa, sb, full, kt, m0, n0);
                    } else if constexpr (CONV == GA_CONV_UPDATE) {
                        ga_conv_update_loads<BM, BN, MC>(*cg, p, sa, sb, full, kt, m0, n0);
                    } else {
                        if constexpr (LA == GA_MAJOR_K) {
                            ga_tma_load(sa, &p.tmap_a, full, k0, m0, dba);
                        } else {
                            #pragma unroll
                            for (int c = 0; c < BM / 64; ++c)
                                ga_tma_load(sa + c * 8192, &p.tmap_a, full, m0 + 64 * c, k0, dba);
                        }
                        if constexpr (LB == GA_MAJOR_K) {
                            ga_tma_load(sb, &p.tmap_b, full, k0, n0, dbb);
                        } else {
                            #pragma unroll
                            for (int c = 0; c < (BN + 63) / 64; ++c)
                                ga_tma_load(sb + c * 8192, &p.tmap_b, full, n0 + 64 * c, k0, dbb);
                        }
                    }
                    if (++s == C::STAGES) { s = 0; phase ^= 1; }
                }
            }
            // Every copy is queued: the next dependent kernel may launch once
            // each block of this grid is here (all of them resident, so its
            // blocks, waiting for this grid's end, cannot keep one of ours
            // from starting).  Late rather than at the start: on the H200,
            // chains of products and convolutions ran 0-1% faster with the
            // trigger at each block's last tile than at its start.
            ga_launch_dependents();
        }
    } else {
        if constexpr (C::NC == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int cw = wg - 1, lane = threadIdx.x & 31;
        // Descriptor constants per operand layout (see the header's table).
        constexpr unsigned A_KSTEP = LA == GA_MAJOR_K ? 32 : 2048;  // bytes per wgmma K step
        constexpr unsigned B_KSTEP = LB == GA_MAJOR_K ? 32 : (BN < 64 ? 1024 : 2048);
        constexpr unsigned A_LBO = LA == GA_MAJOR_K ? 16 : 8192, A_SBO = 1024;
        constexpr unsigned B_LBO = LB == GA_MAJOR_K ? 16 : (BN < 64 ? 4096 : 8192);
        constexpr unsigned B_SBO = LB == GA_MAJOR_K || BN >= 64 ? 1024 : 512;
        constexpr unsigned B_SWZ = LB == GA_MAJOR_K || BN >= 64 ? 1 : 2;
        // A's 64-row parts in a stage: 64 rows of 128 bytes ("k"-major) or one 64-wide panel
        constexpr unsigned A_PART = LA == GA_MAJOR_K ? 64 * 128 : 8192;
        const unsigned a_off = PP ? 0 : cw * C::SUB * A_PART;
        const int path = ga_epilogue_path<BN, CONV>(p);
        GemmEpi st = gemm_epi_init(p);
        const bool plain = !(p.flags & (EPI_BIAS | EPI_RELU)) && st.post == 1.f;
        // Skinny tiles are bound by the latency of dependent wgmmas, not by
        // their issue rate: alternate K steps between two accumulator sets so
        // that two chains are in flight, and add them at the end.
        // (PROMOTE's second set holds a K-tile's partial sums instead: of
        // the whole tile, or of each half in turn for BN = 256, whose two
        // full sets would not fit in the registers.)
        // (A warpgroup of two 64-row parts has two chains already.)
        static_assert(!PROMOTE || C::SUB == 1, "FP8's promoted K-tiles: 64 rows a warpgroup");
        constexpr bool DUAL = !PROMOTE && C::SUB == 1 && (BN <= 64 || (C::NC == 1 && BN <= 128));
        constexpr int PART = BN == 256 ? BN / 4 : BN / 2;
        float acc[C::SUB][BN / 2], acc2[DUAL || PROMOTE ? PART : 1];
        const unsigned frag = base + cw * C::SUB * C::FRAG_BYTES + 16 * (threadIdx.x & 127);
        int s = 0;
        unsigned phase = 0, it = 0;
        for (; ga_next_tile<BM, BN, C::BK, MC>(p, work, rank, cs, g, kt0, kt1); ++it) {
            if constexpr (PP) {
                if ((int)(it & 1) != cw) {  // the other warpgroup's tile
                    ga_ring_skip<C::STAGES>(s, phase, kt1 - kt0);
                    continue;
                }
                if (it > 0) ga_pp_wait(cw);  // its mainloop has issued its last wgmma
            }
            #pragma unroll
            for (int u = 0; u < C::SUB; ++u) {
                #pragma unroll
                for (int i = 0; i < BN / 2; ++i) acc[u][i] = 0.f;
                ga_fence_regs(acc[u]);
            }
            #pragma unroll
            for (int i = 0; i < (DUAL ? BN / 2 : 1); ++i) acc2[i] = 0.f;  // (PROMOTE overwrites it)
            ga_fence_regs(acc2);
            int prev = -1;
            for (int kt = kt0; kt < kt1; ++kt) {
                ga_mbar_wait(bars + 8 * s, phase);
                const unsigned sa = base + s * C::STAGE_BYTES + a_off, sb = base + s * C::STAGE_BYTES + C::A_BYTES;
                ga_wgmma_fence();
                if constexpr (PROMOTE) {
                    // the K-tile into acc2, waited for and added in fp32.
                    // The other consumer warpgroup keeps the tensor cores
                    // busy meanwhile: on the H200 a 128x128 tile ran 1030
                    // TFLOP/s at 8192^3 this way against 817 for a
                    // ping-pong between two half-width partial sets.
                    if constexpr (BN == 256) {
                        // each half of the columns in turn (B rows 128 ..,
                        // 128 bytes each: +16384 bytes, +1024 in the
                        // descriptor's address field)
                        #pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            if (h) ga_wgmma_fence();
                            ga_fp8_ktile<BN / 2, IN, C::BK / C::KSTEP>(acc2, ga_desc(sa, A_LBO, A_SBO, 1),
                                                                       ga_desc(sb, B_LBO, B_SBO, B_SWZ) + 1024 * h);
                            ga_wgmma_commit();
                            ga_wgmma_wait<0>();
                            ga_promote_at(acc[0], acc2, h * BN / 4);
                        }
                    } else {
                        ga_fp8_ktile<BN, IN, C::BK / C::KSTEP>(acc2, ga_desc(sa, A_LBO, A_SBO, 1),
                                                               ga_desc(sb, B_LBO, B_SBO, B_SWZ));
                        ga_wgmma_commit();
                        ga_wgmma_wait<0>();
                        ga_promote_at(acc[0], acc2, 0);
                    }
                    if (lane == 0) ga_mbar_arrive(bars + 8 * (C::STAGES + s));
                } else {
                    #pragma unroll
                    for (int kk = 0; kk < C::BK / C::KSTEP; ++kk) {
                        #pragma unroll
                        for (int u = 0; u < C::SUB; ++u)
                            GaWgmma<BN>::template mma<IN, LA, LB>(DUAL && (kk & 1) ? acc2 : acc[u],
                                                                  ga_desc(sa + u * A_PART + kk * A_KSTEP, A_LBO,
                                                                          A_SBO, 1),
                                                                  ga_desc(sb + kk * B_KSTEP, B_LBO, B_SBO, B_SWZ));
                    }
                    ga_wgmma_commit();
                    // Keep one K-tile of wgmma in flight; the one before it has
                    // finished reading its stage, which goes back to the producer.
                    ga_wgmma_wait<1>();
                    if (prev >= 0 && lane == 0) ga_stage_release<MC>(bars + 8 * (C::STAGES + prev));
                    prev = s;
                }
                if (++s == C::STAGES) { s = 0; phase ^= 1; }
            }
            // the other warpgroup's next tile may start issuing (data-parallel: it exists
            // while this block's schedule has a tile left)
            if constexpr (PP) {
                if (work.next < work.end) ga_pp_signal(cw);
            }
            ga_wgmma_wait<0>();
            #pragma unroll
            for (int u = 0; u < C::SUB; ++u) ga_fence_regs(acc[u]);
            ga_fence_regs(acc2);
            if (prev >= 0 && lane == 0) ga_stage_release<MC>(bars + 8 * (C::STAGES + prev));
            if constexpr (DUAL) {
                #pragma unroll
                for (int i = 0; i < BN / 2; ++i) acc[0][i] += acc2[i];
            }
            if constexpr (!PP) {
                if (cs > 1 && !ga_cluster_reduce<BN, C::NC, C::SUB>(acc, frag, ready, freed, rank, cs, it & 1))
                    continue;
            }
            // (not with PROMOTE: FP8's second accumulator set leaves no
            // registers for the fix-up, and its planner never asks for it)
            if constexpr (!PROMOTE && !PP) {
                if (p.flags & SCHED_STREAM_K) {
                    bool finish = true;  // (the same answer for every part)
                    const int part0 = (int)(blockIdx.x % MC) * (BM / 64) + cw * C::SUB;  // of the unit's tile
                    #pragma unroll
                    for (int u = 0; u < C::SUB; ++u)
                        finish = ga_stream_k_fixup<BM * MC, BN, MC>(p, work, acc[u], kt0, kt1, cw, part0 + u);
                    if (!finish) continue;
                }
            }

            // Accumulator layout of m64nN: thread (warp, lane) holds rows
            // 16 warp + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) (+ 1).
            // A 16-bit or fp32 C with at most alpha, bias, relu and an
            // output scale is finished from the registers (the epilogue's
            // share of a tile fell from 10-45% to 2-14%).
            #pragma unroll
            for (int u = 0; u < C::SUB; ++u) {
                const int m0 = g.tm * BM + ((PP ? 0 : cw * C::SUB) + u) * 64, n0 = g.tn * BN;
                // this warpgroup's staging, as ga_epilogue16(t) use it
                const unsigned stage = base + C::STAGES * C::STAGE_BYTES + cw * 64 * GA_EPI_STRIDE * 4;
                if constexpr (CONV == GA_CONV_FPROP_T) {
                    if (path == GA_EPI_TMA16) ga_epilogue16t<BN, true>(p, st, acc[u], stage, g.ob, m0, n0, cw);
                    else ga_epilogue16t<BN, false>(p, st, acc[u], stage, g.ob, m0, n0, cw);
                } else if (path == GA_EPI_TMA16) {
                    if constexpr (BN % 64 == 0) {
                        if (plain) ga_epilogue16_tma<BN, true>(p, st, acc[u], stage, g.ob, m0, n0, cw);
                        else ga_epilogue16_tma<BN, false>(p, st, acc[u], stage, g.ob, m0, n0, cw);
                    }
                } else if (path == GA_EPI_16) {
                    if (plain) ga_epilogue16<BN, true>(p, st, acc[u], stage, g.ob, m0, n0, cw);
                    else ga_epilogue16<BN, false>(p, st, acc[u], stage, g.ob, m0, n0, cw);
                } else if (path == GA_EPI_32) {
                    if (plain) ga_epilogue32<BN, true>(p, st, acc[u], g.ob, m0, n0);
                    else ga_epilogue32<BN, false>(p, st, acc[u], g.ob, m0, n0);
                } else if (path == GA_EPI_PARTIALS) {
                    ga_partials32<BN>(p, g, acc[u], m0, n0);
                } else {
                    // (made here, not kept through the tile loop: the
                    // 128x256 tiles' consumers have no register to spare)
                    float *ep = (float *)__cvta_shared_to_generic(stage);
                    ga_epilogue_staged<BN>(p, g, st, acc[u], ep, m0, n0, path == GA_EPI_STAGED_FAST, cw);
                }
            }
        }
        // the copy engine's last stores read this block's shared memory
        if (path == GA_EPI_TMA16 && (threadIdx.x & 127) == 0) ga_bulk_wait();
        gemm_epi_flush(p, st);
    }
    // No block of a cluster leaves while another may still read its shared
    // memory or arrive on its barriers (a block's shared memory ends with it).
    if (MC > 1 || cs > 1) {
        ga_cluster_arrive();
        ga_cluster_wait();
    }
}


// sm90_epilogue.cuh: the Hopper GEMM body's epilogues (gemm_sm90.cuh): a
// consumer warpgroup's 64 x BN accumulators (the wgmma m64nN layout: thread
// (warp, lane) holds rows 16 warp + lane / 4 (+ 8), columns 8 j + 2 (lane %
// 4) (+ 1)) finished and stored -- straight from the registers for a 16-bit
// or fp32 C with at most alpha, bias, relu and an output scale, as split-K
// partial sums, or staged through shared memory 32 columns at a time for
// the rest of gemm_common.cuh's epilogue (beta, stochastic rounding,
// statistics, FP8).
#pragma once
#include "sm90_ptx.cuh"

// Row stride (floats) of the epilogue staging: 64-bit stores of a half-warp
// (4 rows x 8 floats) then hit 32 distinct banks.
#define GA_EPI_STRIDE 40

// Eight adjacent outputs (m, n .. n + 7) when neither beta, stochastic
// rounding nor statistics is on: gemm_finish's arithmetic (gemm_value, the
// amax, the output scale), one 16-byte store (two for fp32, one of 8 bytes
// for FP8).
GA_D void ga_store8(const GemmArgs &p, GemmEpi &st, int ob, int m, int n, const float *src) {
    float4 lo = *(const float4 *)src, hi = *(const float4 *)(src + 4);
    float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    #pragma unroll
    for (int i = 0; i < 8; ++i) {
        v[i] = gemm_value(p, st, ob, m, n + i, v[i]);
        if (p.flags & EPI_AMAX) st.amax = fmaxf(st.amax, fabsf(v[i]));
        if (st.post != 1.f) v[i] = __fmul_rn(v[i], st.post);
    }
    long long ci = ob * p.batch_c + m * p.ldc + n;
    if (p.c_type >= GEMM_E4M3) {
        unsigned w[2];
        #pragma unroll
        for (int i = 0; i < 2; ++i)
            w[i] = gemm_fp8x2_bits(v[4 * i], v[4 * i + 1], p.c_type) |
                   ((unsigned)gemm_fp8x2_bits(v[4 * i + 2], v[4 * i + 3], p.c_type) << 16);
        *(uint2 *)((unsigned char *)p.c + ci) = make_uint2(w[0], w[1]);
    } else if (p.c_type == GEMM_F32) {
        *(float4 *)((float *)p.c + ci) = make_float4(v[0], v[1], v[2], v[3]);
        *(float4 *)((float *)p.c + ci + 4) = make_float4(v[4], v[5], v[6], v[7]);
    } else {
        unsigned w[4];
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            unsigned a = p.c_type == GEMM_F16 ? ga_f2h_bits(v[2 * i]) : ga_f2bf_bits(v[2 * i]);
            unsigned b = p.c_type == GEMM_F16 ? ga_f2h_bits(v[2 * i + 1]) : ga_f2bf_bits(v[2 * i + 1]);
            w[i] = a | (b << 16);
        }
        *(uint4 *)((ga_half *)p.c + ci) = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

// Outputs of one staged 64 x 32 chunk whose corner is (m0, n0), by the 128
// threads of a consumer warpgroup, row by row (coalesced).
GA_D void ga_epilogue_chunk(const GemmArgs &p, const GemmTile &g, const float *ep, int m0, int n0, bool fast,
                            GemmEpi &st) {
    const int tid = threadIdx.x & 127;
    if (fast) {
        for (int q = tid; q < 64 * 4; q += 128) {
            const int r = q >> 2, m = m0 + r, n = n0 + 8 * (q & 3);
            const float *src = ep + r * GA_EPI_STRIDE + 8 * (q & 3);
            if (m >= p.M) continue;
            if (n + 8 <= p.N) {
                ga_store8(p, st, g.ob, m, n, src);
            } else {
                for (int i = 0; i < 8; ++i) gemm_output(p, g, m, n + i, src[i], st);
            }
        }
    } else {
        for (int e = tid; e < 64 * 32; e += 128) {
            const int r = e >> 5, col = e & 31;
            gemm_output(p, g, m0 + r, n0 + col, ep[r * GA_EPI_STRIDE + col], st);
        }
    }
}

// One output's value in ga_epilogue16/32: gemm_finish's arithmetic for alpha,
// bias, relu and the output scale (the same roundings, so the same bits);
// PLAIN: alpha alone (no bias or relu, output scale 1).  Outputs past M or N
// are computed too (ga_epilogue16 rounds whole fragments) but never stored:
// they read no bias, which ends at M x N.  (ga_epilogue16 takes it for
// PLAIN only, ga_epi_lean otherwise.)
template <bool PLAIN>
GA_D float ga_epi_value(const GemmArgs &p, const GemmEpi &st, int m, int n, float acc) {
    float v = __fmul_rn(st.pre, acc);
    if constexpr (!PLAIN) {
        if ((p.flags & EPI_BIAS) && m < p.M && n < p.N)
            v = __fadd_rn(v, gemm_load(p.bias, p.bias_type, m * p.bias_m + n * p.bias_n));
        if (p.flags & EPI_RELU) v = v < 0.f ? 0.f : v;  // NaN passes
        if (st.post != 1.f) v = __fmul_rn(v, st.post);
    }
    return v;
}

// One output's value in ga_epilogue16 (not PLAIN), `b` its bias: the flags
// tested once a tile, not per value, and the bias read from shared memory:
// ga_epi_value's arithmetic and roundings, so the same bits.
GA_D float ga_epi_lean(const GemmEpi &st, float acc, float b, bool bias, bool relu) {
    float v = __fmul_rn(st.pre, acc);
    if (bias) v = __fadd_rn(v, b);
    if (relu) v = v < 0.f ? 0.f : v;  // NaN passes
    if (st.post != 1.f) v = __fmul_rn(v, st.post);
    return v;
}

// The outputs of a 16-byte piece x of eight 16-bit values, the first at
// index i of C's row (or column) of `end`, that lie inside it, one by one.
GA_D void ga_store16_edge(unsigned short *dst, const uint4 &x, int i, int end) {
    const unsigned words[4] = {x.x, x.y, x.z, x.w};
    #pragma unroll
    for (int e = 0; e < 8; ++e)
        if (i + e < end) dst[e] = (unsigned short)(words[e / 2] >> (16 * (e & 1)));
}

// The tile's bias along columns, copied to `sbias` in this warpgroup's
// staging (zeros past N) for ga_epi16_words; none when PLAIN or unbiased.
template <int BN, bool PLAIN>
GA_D void ga_stage_bias(const GemmArgs &p, unsigned sbias, int n0, int cw) {
    if constexpr (!PLAIN) {
        if (!(p.flags & EPI_BIAS)) return;
        for (int i = threadIdx.x & 127; i < BN; i += 128)
            ga_sts32f(sbias + 4 * i, n0 + i < p.N ? gemm_load(p.bias, p.bias_type, (n0 + i) * p.bias_n) : 0.f);
        ga_wg_sync(cw);
    }
}

// The four words a lane gives one stmatrix_x4 of ga_epilogue16(_tma): the
// finished values of column groups j0 and j0 + 1 (8 columns each) x the
// lane's two rows, rounded two to a word.  `sb`: the staged bias.
template <int BN, bool PLAIN>
GA_D void ga_epi16_words(const GemmArgs &p, const GemmEpi &st, const float (&acc)[BN / 2], const float *sb, int j0,
                         int m0, int n0, unsigned (&w)[4]) {
    const int tid = threadIdx.x & 127, warp = tid / 32, lane = tid & 31;
    // accumulator (row rl (+ 8), columns 8 j + cl, + 1)
    const int rl = warp * 16 + lane / 4, cl = 2 * (lane & 3);
    const bool half = p.c_type == GEMM_F16;
    #pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int j = j0 + (q >> 1), h = q & 1, m = m0 + rl + 8 * h, n = n0 + 8 * j + cl;
        const float a0 = acc[4 * j + 2 * h], a1 = acc[4 * j + 2 * h + 1];
        if constexpr (PLAIN) {
            w[q] = ga_pack16(ga_epi_value<true>(p, st, m, n, a0), ga_epi_value<true>(p, st, m, n + 1, a1), half);
        } else {
            const bool bias = p.flags & EPI_BIAS, relu = p.flags & EPI_RELU;
            const float2 b = bias ? *(const float2 *)(sb + (n - n0)) : make_float2(0.f, 0.f);
            w[q] = ga_pack16(ga_epi_lean(st, a0, b.x, bias, relu), ga_epi_lean(st, a1, b.y, bias, relu), half);
        }
    }
}

// A consumer warpgroup's 64 x BN outputs (corner m0, n0) straight from its
// accumulators, when C is fp16/bf16 in 16-byte aligned rows and the
// epilogue is at most alpha, bias, relu and an output scale: the values are
// finished in registers and rounded two to a word, written to the
// warpgroup's 8 KB of staging as 8 x 8 matrices (stmatrix; 128-byte rows
// whose 16-byte pieces are XOR-swizzled by row, so neither side has bank
// conflicts), 64 columns at a time, then copied out one 16-byte piece a
// thread, a row's pieces side by side.  Against staging fp32 values 32
// columns at a time and finishing them there, this halves the barriers and
// cuts the instructions per output about sixfold: that epilogue took 10-45%
// of a 128x256 tile's time (H100: 4096^3 214 -> 181 us without it).
//
// A bias along columns (bias_m = 0: a convolution's or dense layer's) is
// first copied to the 2 KB past the staging (this warpgroup's share of the
// fp32 staging, 64 x GA_EPI_STRIDE floats, holds 8 KB + 2 KB), one load
// latency a tile, and the flags are read once a value from the constant
// bank.  Loaded per value from global memory, behind per-value tests,
// they stalled a convolution's short tiles: VGG-A's conv2 fprop (fp16,
// H100, 128x128 tiles, K = 576) took 241 us plain, 377 with relu and 512
// with bias and relu.  It still costs: 225 us plain, 262 with bias and
// relu on 256x128 tiles (H200; an L1 prefetch of the bias as the tile's
// loads began changed nothing); the transposed fprop, whose bias runs
// along the rows (two values a thread, in registers), 236 and 242.
// (Another bias takes the staged epilogue: a row bias would need
// registers the 128x256 tiles do not have to spare.)
template <int BN, bool PLAIN>
GA_D void ga_epilogue16(const GemmArgs &p, const GemmEpi &st, const float (&acc)[BN / 2], unsigned stage, int ob,
                        int m0, int n0, int cw) {
    // chunk width (a divisor of BN); 16-byte pieces per row
    constexpr int CW = BN < 64 ? BN : BN % 64 ? 32 : 64, VPR = CW / 8;
    const int tid = threadIdx.x & 127, warp = tid / 32, lane = tid & 31;
    const unsigned sbias = stage + 64 * 128;
    static_assert(64 * GA_EPI_STRIDE * 4 >= 64 * 128 + 256 * 4, "no room for the tile's bias");
    ga_stage_bias<BN, PLAIN>(p, sbias, n0, cw);
    // the staged bias read as plain loads (not volatile asm, each a barrier
    // to the compiler): a pair's two reads become one, issued together
    // with the others of its step
    const float *sb = (const float *)__cvta_shared_to_generic(sbias);
    // this lane's stmatrix row
    const int srow = warp * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);
    unsigned short *c = (unsigned short *)p.c + (long long)ob * p.batch_c;
    #pragma unroll
    for (int k = 0; k < BN / CW; ++k) {
        #pragma unroll
        for (int pr = 0; pr < CW / 16; ++pr) {
            // matrices: column groups j, j + 1 (8 columns each) x row halves
            unsigned w[4];
            ga_epi16_words<BN, PLAIN>(p, st, acc, sb, k * VPR + 2 * pr, m0, n0, w);
            const int piece = 2 * pr + (lane >> 4);
            ga_stmatrix_x4(stage + srow * 128 + ((piece ^ (srow & 7)) << 4), w);
        }
        ga_wg_sync(cw);
        #pragma unroll
        for (int i = 0; i < 64 * VPR / 128; ++i) {
            const int v = tid + 128 * i, r = v / VPR, piece = v % VPR;
            const int m = m0 + r, n = n0 + k * CW + 8 * piece;
            const uint4 x = ga_lds128(stage + r * 128 + ((piece ^ (r & 7)) << 4));
            if (m >= p.M || n >= p.N) continue;
            unsigned short *dst = c + m * p.ldc + n;
            if (n + 8 <= p.N) *(uint4 *)dst = x;
            else ga_store16_edge(dst, x, n, p.N);
        }
        ga_wg_sync(cw);
    }
}

// Hands a staged chunk of C to the copy engine: every thread of the
// warpgroup fences its stmatrix writes for the async proxy; thread 0 waits
// until its previous store has read the other buffer (which the next chunk
// rewrites); after the warpgroup's barrier, thread 0 stores this one at
// (c0, c1) of batch ob of p.tmap_c.  tid: the thread's index in its warpgroup.
GA_D void ga_store_chunk(const GemmArgs &p, unsigned buf, int c0, int c1, int ob, int tid, int cw) {
    ga_fence_proxy_async();
    if (tid == 0) ga_bulk_wait_read();
    ga_wg_sync(cw);
    if (tid == 0) {
        ga_tma_store(&p.tmap_c, buf, c0, c1, ob);
        ga_bulk_commit();
    }
}

// ga_epilogue16 with the copy engine storing C (flags & EPI_TMA_C: the
// host encoded p.tmap_c, dims {N, M, batch}, box {32, 64, 1}, 64-byte
// swizzle).  The values are finished and stmatrix-ed as there, 32 columns
// at a time into one of two 4 KB buffers in turn (64-byte rows, 16-byte
// pieces XOR-swizzled by row / 2: the copy engine's 64-byte pattern, and
// no bank conflicts on either side); one thread of the warpgroup then
// hands the chunk to the copy engine, which clips it at M and N.  The
// threads go on to the next chunk, and after the last to the next tile's
// mainloop, while the copies run: the store loop of ga_epilogue16 kept
// them (skipping its copy-out saved 2.5% at 4096^3 and 10-14% on
// convolution-shaped products with short K, C's DRAM writes included; this
// gained 0.3% and 1% on VGG-A's convolutions, H200).  One barrier a chunk
// (ga_store_chunk).  (A tile's chunks are even in number, so every tile
// starts on buffer 0, freed by the last chunk's wait.)
template <int BN, bool PLAIN>
GA_D void ga_epilogue16_tma(const GemmArgs &p, const GemmEpi &st, const float (&acc)[BN / 2], unsigned stage, int ob,
                            int m0, int n0, int cw) {
    static_assert(BN % 64 == 0, "an even number of 32-column chunks");
    const int tid = threadIdx.x & 127, warp = tid / 32, lane = tid & 31;
    const unsigned sbias = stage + 64 * 128;
    ga_stage_bias<BN, PLAIN>(p, sbias, n0, cw);
    const float *sb = (const float *)__cvta_shared_to_generic(sbias);
    const int srow = warp * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);
    #pragma unroll
    for (int k = 0; k < BN / 32; ++k) {
        const unsigned buf = stage + (k & 1) * 64 * 64;
        #pragma unroll
        for (int pr = 0; pr < 2; ++pr) {
            unsigned w[4];
            ga_epi16_words<BN, PLAIN>(p, st, acc, sb, 4 * k + 2 * pr, m0, n0, w);
            const int piece = 2 * pr + (lane >> 4);
            ga_stmatrix_x4(buf + srow * 64 + ((piece ^ ((srow >> 1) & 3)) << 4), w);
        }
        ga_store_chunk(p, buf, n0 + 32 * k, m0, ob, tid, cw);
    }
}

// ga_epilogue16 for a C stored transposed (the transposed fprop: rows m are
// filters, columns n output positions, C[m, n] at c[n * ldc + m]), with a
// bias along m (bias_m; bias_n unused) and at most alpha, bias, relu and an
// output scale.  Each 8 x 8 matrix of the accumulators goes to the staging
// transposed (stmatrix .trans): 64 output positions of the warpgroup's 64
// filters a chunk, a position's 128 bytes one swizzled staging row, copied
// out one 16-byte piece a thread.  A thread's two bias values (its rows m
// and m + 8) are loaded once a tile.  TMA (flags & EPI_TMA_C): the copy
// engine stores C instead, 32 positions at a time from two 4 KB buffers in
// turn, as ga_epilogue16_tma does (p.tmap_c: dims {M, N, batch}, box
// {64, 32, 1}, 128-byte swizzle: the staging's own pattern).
template <int BN, bool TMA>
GA_D void ga_epilogue16t(const GemmArgs &p, const GemmEpi &st, const float (&acc)[BN / 2], unsigned stage, int ob,
                         int m0, int n0, int cw) {
    static_assert(BN % 64 == 0, "whole chunks of 64 output positions");
    const int tid = threadIdx.x & 127, warp = tid / 32, lane = tid & 31;
    const bool half = p.c_type == GEMM_F16, bias = p.flags & EPI_BIAS, relu = p.flags & EPI_RELU;
    const int rl = warp * 16 + lane / 4;
    float b[2];
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int m = m0 + rl + 8 * h;
        b[h] = bias && m < p.M ? gemm_load(p.bias, p.bias_type, m * p.bias_m) : 0.f;
    }
    // this lane's stored row (an output position within 16) and 16-byte
    // piece (8 filters) for stmatrix: matrix lane / 8 is column group
    // (lane / 16) of a pair and row half (lane / 8) % 2
    const int nrow = 8 * (lane >> 4) + (lane & 7), piece = 2 * warp + ((lane >> 3) & 1);
    unsigned short *c = (unsigned short *)p.c + (long long)ob * p.batch_c;
    #pragma unroll
    for (int k = 0; k < BN / 64; ++k) {
        #pragma unroll
        for (int pr = 0; pr < 4; ++pr) {
            unsigned w[4];
            #pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int j = 8 * k + 2 * pr + (q >> 1), h = q & 1;
                w[q] = ga_pack16(ga_epi_lean(st, acc[4 * j + 2 * h], b[h], bias, relu),
                                 ga_epi_lean(st, acc[4 * j + 2 * h + 1], b[h], bias, relu), half);
            }
            if constexpr (TMA) {
                const int r = 16 * (pr & 1) + nrow;
                const unsigned buf = stage + (pr >> 1) * 32 * 128;
                ga_stmatrix_x4_trans(buf + r * 128 + ((piece ^ (r & 7)) << 4), w);
                if (pr & 1) ga_store_chunk(p, buf, m0, n0 + 64 * k + 32 * (pr >> 1), ob, tid, cw);
            } else {
                const int r = 16 * pr + nrow;
                ga_stmatrix_x4_trans(stage + r * 128 + ((piece ^ (r & 7)) << 4), w);
            }
        }
        if constexpr (!TMA) {
            ga_wg_sync(cw);
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int v = tid + 128 * i, r = v / 8, pc = v % 8;
                const int n = n0 + 64 * k + r, m = m0 + 8 * pc;
                const uint4 x = ga_lds128(stage + r * 128 + ((pc ^ (r & 7)) << 4));
                if (n >= p.N || m >= p.M) continue;
                unsigned short *dst = c + (long long)n * p.ldc + m;
                if (m + 8 <= p.M) *(uint4 *)dst = x;
                else ga_store16_edge(dst, x, m, p.M);
            }
            ga_wg_sync(cw);
        }
    }
}

// The same for an fp32 C in 16-byte aligned rows: each pair of values goes
// straight from the accumulators to memory as one 8-byte store (four lanes
// fill a 32-byte sector), with no staging and no barrier.
template <int BN, bool PLAIN>
GA_D void ga_epilogue32(const GemmArgs &p, const GemmEpi &st, const float (&acc)[BN / 2], int ob, int m0, int n0) {
    const int tid = threadIdx.x & 127, warp = tid / 32, lane = tid & 31;
    const int rl = warp * 16 + lane / 4, cl = 2 * (lane & 3);
    float *c = (float *)p.c + (long long)ob * p.batch_c;
    #pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = m0 + rl + 8 * h, n = n0 + 8 * j + cl;
            if (m >= p.M || n >= p.N) continue;
            const float v0 = ga_epi_value<PLAIN>(p, st, m, n, acc[4 * j + 2 * h]);
            float *dst = c + m * p.ldc + n;
            if (n + 2 <= p.N)
                *(float2 *)dst = make_float2(v0, ga_epi_value<PLAIN>(p, st, m, n + 1, acc[4 * j + 2 * h + 1]));
            else
                *dst = v0;
        }
    }
}

// A consumer warpgroup's 64 x BN split-K partial sums (corner m0, n0) straight
// from its accumulators into the split's fp32 slab (rows of N floats; N even),
// as ga_epilogue32 stores: 8-byte pairs, four lanes to a 32-byte sector.
// Staging them 32 columns at a time cost two warpgroup barriers a chunk.
template <int BN>
GA_D void ga_partials32(const GemmArgs &p, const GemmTile &g, const float (&acc)[BN / 2], int m0, int n0) {
    const int tid = threadIdx.x & 127, warp = tid / 32, lane = tid & 31;
    const int rl = warp * 16 + lane / 4, cl = 2 * (lane & 3);
    float *slab = p.partial + (long long)(g.split * p.batch + g.ob) * p.M * p.N;
    #pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = m0 + rl + 8 * h, n = n0 + 8 * j + cl;
            if (m < p.M && n < p.N)
                *(float2 *)(slab + (long long)m * p.N + n) = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
        }
    }
}

// A consumer warpgroup's 64 x BN outputs (corner m0, n0) otherwise: staged
// through its fp32 staging `ep` 32 columns at a time and finished by
// ga_epilogue_chunk.  The loop stays rolled (one copy of the epilogue
// code), and each chunk's registers are picked by compile-time indices.
template <int BN>
GA_D void ga_epilogue_staged(const GemmArgs &p, const GemmTile &g, GemmEpi &st, const float (&acc)[BN / 2], float *ep,
                             int m0, int n0, bool fast, int cw) {
    const int warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31;
    const int rl = warp * 16 + lane / 4, cl = 2 * (lane & 3);
    #pragma unroll 1
    for (int c = 0; c < BN / 32; ++c) {
        ga_wg_sync(cw);
        #pragma unroll
        for (int cc = 0; cc < BN / 32; ++cc) {
            if (cc != c) continue;
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                #pragma unroll
                for (int h = 0; h < 2; ++h)
                    *(float2 *)(ep + (rl + 8 * h) * GA_EPI_STRIDE + 8 * j + cl) =
                        make_float2(acc[16 * cc + 4 * j + 2 * h], acc[16 * cc + 4 * j + 2 * h + 1]);
            }
        }
        ga_wg_sync(cw);
        ga_epilogue_chunk(p, g, ep, m0, n0 + 32 * c, fast, st);
    }
}

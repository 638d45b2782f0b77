// gemm_common.cuh: the argument block and epilogue every GEMM kernel shares.
//
// What it computes: nothing by itself.  It fixes the ABI between the GEMM
// kernels in this folder and gpuarray/gemm/catalogue.py (which packs GemmArgs
// byte for byte), and holds the pieces all kernel families reuse:
//   * tile scheduling: which output tile, batch and K-split a block (or a
//     persistent block's iteration) works on, with a grouped raster so that
//     neighbouring blocks share A and B tiles in L2;
//   * the virtual K axis: K-tiles of all batches summed into one output
//     (batched_dot into a 2-D C) run as one long K loop;
//   * the epilogue: C = scale_c * (relu(alpha * scale_a * scale_b * acc +
//     bias) + beta * C), rounded to C's type (nearest even, or
//     stochastically for fp16/bf16; FP8 saturates to its largest finite
//     value), with optional statistics (max |C| over finite values, count
//     of non-finite values) and amax (max |value before scale_c|, FP8's
//     delayed-scaling statistic).  The scales are device floats (null: 1)
//     read once per thread; a host value of scale_c travels as post_scale.
//
// Layouts: operand element (m, k) of A's data batch i is at
//   a + i * batch_a + m * a_m + k * a_k        (strides in elements)
// and (k, n) of B at b + i * batch_b + k * b_k + n * b_n.  A kernel variant is
// compiled for one layout: A "k" (a_k == 1, row-major M x K) or "m" (a_m == 1,
// A given as a transposed view), B "n" (b_n == 1, row-major K x N) or "k"
// (b_k == 1).  C is always row-major: (m, n) of output batch j at
// c + j * batch_c + m * ldc + n.  Python swaps A and B to compute C^T when
// the user's C is column-major.
//
// Parameters (cuBLAS/cuDNN names): M, N, K; batch = output batches; kbatch =
// data batches summed into each output (1, or the batch count of an
// accumulate-over-batch product); splits = K-splits, each covering
// tiles_per_split K-tiles of the virtual K axis (kbatch * ceil(K / BK) tiles).
// With splits > 1 a kernel stores raw fp32 sums to `partial`
// ([splits][batch][M][N]) and gemm_splitk.cu applies the epilogue.
//
// Launch shape: chosen by each kernel family; blocks map their tile index
// through gemm_tile(), over tiles_m * tiles_n * batch * splits tiles.
#pragma once
#include "../gpuarray/fusion/prelude.cuh"

// element types of C and of the bias (GemmArgs::c_type, ::bias_type)
#define GEMM_F32 0
#define GEMM_F16 1
#define GEMM_BF16 2
#define GEMM_E4M3 3   // float8_e4m3fn: largest finite 448, no infinities
#define GEMM_E5M2 4   // float8_e5m2: largest finite 57344

// GemmArgs::flags
#define EPI_RELU 1
#define EPI_BIAS 2
#define EPI_BETA 4    // read C: beta != 0
#define EPI_SR 8      // stochastic rounding of fp16/bf16 outputs, keeping
                      // (flags >> EPI_SR_BITS_SHIFT) mantissa bits
#define EPI_STATS 16  // fill stats[0] = max |C| (finite values), stats[1] += non-finite count
#define EPI_AMAX 32   // amax[0] = max |value before scale_c| (NaN ignored)
#define EPI_SR_BITS_SHIFT 8
// (bits 64, 128: SCHED_STREAM_K, SCHED_WHOLE_FIRST, the sm90 kernels'
// schedule: stream_k.cuh; bits 8-12: the stochastic rounding's bits)
#define EPI_TMA_C 8192  // the sm90 kernels: tmap_c is encoded (sm90_epilogue.cuh's ga_epilogue16_tma)

#define GEMM_GROUP_M 8  // tile rows per raster group

// Opaque TMA descriptor (CUtensorMap), encoded on the host by
// gpuarray/cuda/driver.py; 3-D: (contiguous dim, other dim, data batch).
struct alignas(64) GemmTmap { unsigned long long opaque[16]; };

// Packed by gpuarray/gemm/catalogue.py (ARGS_FORMAT); keep both in step.
struct alignas(64) GemmArgs {
    GemmTmap tmap_a, tmap_b;              // TMA kernels only
    GemmTmap tmap_c;                      // with EPI_TMA_C only: C as {N, M, batch}
    const void *a, *b;
    void *c;
    const void *bias;                     // bias[m * bias_m + n * bias_n]
    float *partial;                       // split-K sums, or null
    float *stats;                         // [max |C|, non-finite count], or null
    long long a_m, a_k, b_k, b_n, ldc;    // element strides
    long long batch_a, batch_b, batch_c;  // element strides between batches
    long long bias_m, bias_n;
    unsigned long long seed;              // stochastic rounding: Philox key
    int M, N, K;
    int batch, kbatch, splits, tiles_per_split;
    int flags, c_type, bias_type;
    float alpha, beta;
    unsigned call;                        // Philox counter word: one per launch
    float post_scale;                     // a host scale_c (1 when none)
    const float *scale_a, *scale_b;       // FP8 dequantisation scales, or null
    const float *scale_c;                 // output scale, or null
    float *amax;                          // [max |value before scale_c|], or null
};
static_assert(sizeof(GemmArgs) == 640, "GemmArgs ABI changed: update gemm/catalogue.py");

// One unit of work: output tile (tm, tn) of output batch ob, K-split `split`.
struct GemmTile { int tm, tn, ob, split; };

GA_D int gemm_tiles_total(const GemmArgs &p, int BM, int BN) {
    return ((p.M + BM - 1) / BM) * ((p.N + BN - 1) / BN) * p.batch * p.splits;
}

// Tile t of gemm_tiles_total(): splits vary slowest, then batches, then a
// grouped raster (GEMM_GROUP_M tile rows swept column by column).
GA_D GemmTile gemm_tile(const GemmArgs &p, int t, int BM, int BN) {
    int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;
    int per_batch = tiles_m * tiles_n;
    GemmTile g;
    g.split = t / (per_batch * p.batch);
    t -= g.split * per_batch * p.batch;
    g.ob = t / per_batch;
    t -= g.ob * per_batch;
    int group = t / (GEMM_GROUP_M * tiles_n);
    int first_m = group * GEMM_GROUP_M;
    int rows = min(tiles_m - first_m, GEMM_GROUP_M);
    int within = t - group * GEMM_GROUP_M * tiles_n;
    g.tm = first_m + within % rows;
    g.tn = within / rows;
    return g;
}

// K-tiles of the virtual K axis: every data batch's K-tiles, one after another.
GA_D int gemm_ktiles(const GemmArgs &p, int BK) { return p.kbatch * ((p.K + BK - 1) / BK); }

// The K-tiles [*t0, *t1) of the virtual K axis that split `split` covers.
GA_D void gemm_k_range(const GemmArgs &p, int split, int BK, int *t0, int *t1) {
    int total = gemm_ktiles(p, BK);
    *t0 = min(split * p.tiles_per_split, total);
    *t1 = min(*t0 + p.tiles_per_split, total);
}

// Virtual K-tile t -> (data batch, first k) for output batch ob.
GA_D void gemm_k_tile(const GemmArgs &p, int ob, int t, int BK, int *data_batch, int *k0) {
    int ktiles = (p.K + BK - 1) / BK;
    int kb = t / ktiles;
    *data_batch = ob * p.kbatch + kb;
    *k0 = (t - kb * ktiles) * BK;
}

// ---- epilogue -------------------------------------------------------------
GA_D float gemm_load(const void *base, int type, long long i) {
    if (type == GEMM_F16) return ga_value<float>(((const ga_half *)base)[i]);
    if (type == GEMM_BF16) return ga_value<float>(((const ga_bf16 *)base)[i]);
    return ((const float *)base)[i];
}

// FP8 (sm_89 and later: the conversions are instructions there).  cvt
// saturates out-of-range values to the largest finite one and keeps NaN,
// as cuBLASLt's FP8 outputs; the pair form converts two floats, `hi` in the
// upper byte.
GA_D unsigned short gemm_fp8x2_bits(float lo, float hi, int type) {
    unsigned short bits = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if (type == GEMM_E4M3) asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(bits) : "f"(hi), "f"(lo));
    else asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(bits) : "f"(hi), "f"(lo));
#else
    __trap();  // Python sends FP8 outputs to sm_90 kernels only
#endif
    return bits;
}
// The float an FP8 byte holds.
GA_D float gemm_fp8_value(unsigned char byte, int type) {
    unsigned h2 = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    unsigned short in = byte;
    if (type == GEMM_E4M3) asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(in));
    else asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(in));
#else
    __trap();
#endif
    ga_half h;
    h.bits = (unsigned short)h2;
    return ga_value<float>(h);
}

// Per-thread epilogue state: the scales, read once, and the statistics,
// flushed once at the end with gemm_epi_flush().
struct GemmEpi {
    float pre;        // alpha * scale_a * scale_b
    float post;       // post_scale * scale_c
    float max_abs;    // statistics: max |C| over finite stored values
    unsigned nonfinite;
    float amax;       // max |value before the output scale|
};
GA_D GemmEpi gemm_epi_init(const GemmArgs &p) {
    GemmEpi e;
    e.pre = p.alpha;  // ((alpha * scale_a) * scale_b), as gemm/reference.py
    if (p.scale_a) e.pre = __fmul_rn(e.pre, *p.scale_a);
    if (p.scale_b) e.pre = __fmul_rn(e.pre, *p.scale_b);
    e.post = p.scale_c ? __fmul_rn(p.post_scale, *p.scale_c) : p.post_scale;
    e.max_abs = 0.f;
    e.nonfinite = 0u;
    e.amax = 0.f;
    return e;
}

// The value stored for accumulator `acc` of output (m, n) of batch ob,
// before the output scale and rounding: scales and alpha, bias, relu, beta.
GA_D float gemm_value(const GemmArgs &p, const GemmEpi &st, int ob, int m, int n, float acc) {
    // explicit roundings (no contraction into FMAs): the same bits in every
    // kernel family and in a vectorised copy of this epilogue, as numpy's
    float v = __fmul_rn(st.pre, acc);
    if (p.flags & EPI_BIAS) v = __fadd_rn(v, gemm_load(p.bias, p.bias_type, m * p.bias_m + n * p.bias_n));
    if (p.flags & EPI_RELU) v = v < 0.f ? 0.f : v;  // NaN passes, as numpy's maximum
    if (p.flags & EPI_BETA) {
        long long ci = ob * p.batch_c + m * p.ldc + n;
        v = __fadd_rn(v, __fmul_rn(p.beta, gemm_load(p.c, p.c_type, ci)));
    }
    return v;
}

// Final value of output (ob, m, n) from the accumulator `acc`: gemm_value,
// the amax, the output scale, rounding to C's type; stored, and counted
// into `st`.
GA_D void gemm_finish(const GemmArgs &p, int ob, int m, int n, float acc, GemmEpi &st) {
    float v = gemm_value(p, st, ob, m, n, acc);
    if (p.flags & EPI_AMAX) st.amax = fmaxf(st.amax, fabsf(v));
    if (st.post != 1.f) v = __fmul_rn(v, st.post);
    long long ci = ob * p.batch_c + m * p.ldc + n;
    if (p.c_type == GEMM_F32) {
        ((float *)p.c)[ci] = v;
    } else if (p.c_type >= GEMM_E4M3) {
        unsigned char byte = (unsigned char)gemm_fp8x2_bits(v, 0.f, p.c_type);
        ((unsigned char *)p.c)[ci] = byte;
        v = gemm_fp8_value(byte, p.c_type);
    } else {
        bool half = p.c_type == GEMM_F16;
        if (p.flags & EPI_SR) {
            unsigned long long index = ((unsigned long long)ob * p.M + m) * p.N + n;
            unsigned noise = ga_philox(p.seed, index, 0x47454d4du, p.call).x;
            v = ga_stochastic_round(v, noise, (p.flags >> EPI_SR_BITS_SHIFT) & 31, half);
        }
        if (half) {
            ga_half h = ga_conv<ga_half>::to(v);
            ((ga_half *)p.c)[ci] = h;
            v = ga_value<float>(h);
        } else {
            ga_bf16 h = ga_conv<ga_bf16>::to(v);
            ((ga_bf16 *)p.c)[ci] = h;
            v = ga_value<float>(h);
        }
    }
    if (p.flags & EPI_STATS) {
        float a = fabsf(v);
        if (a <= 3.402823466e38f) st.max_abs = fmaxf(st.max_abs, a);
        else st.nonfinite += 1;
    }
}

// Where split-K is on, a kernel stores its raw sums instead of finishing.
GA_D void gemm_store_partial(const GemmArgs &p, const GemmTile &g, int m, int n, float acc) {
    long long slab = (long long)(g.split * p.batch + g.ob) * p.M;
    p.partial[(slab + m) * p.N + n] = acc;
}

// Element (m, n) of tile g: finish it, or store its partial sum.
GA_D void gemm_output(const GemmArgs &p, const GemmTile &g, int m, int n, float acc, GemmEpi &st) {
    if (m >= p.M || n >= p.N) return;
    if (p.splits > 1) gemm_store_partial(p, g, m, n, acc);
    else gemm_finish(p, g.ob, m, n, acc, st);
}

// Warp-combine the statistics and the amax and add them to p.stats and
// p.amax.  Every lane of the warp must call this (after its last
// gemm_finish).  A non-negative float's bit pattern orders like the float
// (+inf above every number), so max is an integer atomicMax.
GA_D void gemm_epi_flush(const GemmArgs &p, const GemmEpi &st) {
    if (p.flags & EPI_AMAX) {
        unsigned bits = __reduce_max_sync(0xffffffffu, __float_as_uint(st.amax));
        if ((threadIdx.x & 31) == 0) atomicMax((unsigned *)p.amax, bits);
    }
    if (!(p.flags & EPI_STATS)) return;
    unsigned bits = __reduce_max_sync(0xffffffffu, __float_as_uint(st.max_abs));
    unsigned count = __reduce_add_sync(0xffffffffu, st.nonfinite);
    if ((threadIdx.x & 31) == 0) {
        atomicMax((unsigned *)p.stats, bits);
        if (count) atomicAdd(p.stats + 1, (float)count);
    }
}

// conv_small_c_fprop.cuh: conv_small_c.cu's forward -- the tensor-core
// fprop of 16-bit data (A fragments gathered from the halo, the K chunk's
// filters ldmatrix'd, an epilogue staged through shared memory) and the
// fp32 fprop on FFMAs.
//
// In: SmallCArgs (I, F, the bias, alpha, beta); out: O.  Layouts, the
// algorithm and the launch shapes: conv_small_c.cu's header.  No kernel is
// defined here.
#pragma once
#include "conv_small_c_common.cuh"

// -- fprop ----------------------------------------------------------------------

// One k-step's A fragments of this thread's 2 m16 tiles: rows roff, taps tp
template <bool TAIL>
__device__ __forceinline__ void gather_a(uint32_t (&af)[2][4], const unsigned short *halo,
                                         const int (&roff)[2][2], int4 tp) {
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) {
        const unsigned short *r0 = halo + roff[mi][0], *r1 = halo + roff[mi][1];
        if (TAIL) {
            af[mi][0] = pack2(tp.x < 0 ? 0 : r0[tp.x], tp.y < 0 ? 0 : r0[tp.y]);
            af[mi][1] = pack2(tp.x < 0 ? 0 : r1[tp.x], tp.y < 0 ? 0 : r1[tp.y]);
            af[mi][2] = pack2(tp.z < 0 ? 0 : r0[tp.z], tp.w < 0 ? 0 : r0[tp.w]);
            af[mi][3] = pack2(tp.z < 0 ? 0 : r1[tp.z], tp.w < 0 ? 0 : r1[tp.w]);
        } else {
            af[mi][0] = pack2(r0[tp.x], r0[tp.y]);
            af[mi][1] = pack2(r1[tp.x], r1[tp.y]);
            af[mi][2] = pack2(r0[tp.z], r0[tp.w]);
            af[mi][3] = pack2(r1[tp.z], r1[tp.w]);
        }
    }
}

template <typename T, bool TAIL>
__device__ __forceinline__ void fprop_step(float (&acc)[2][8][4], const unsigned short *halo,
                                           const int (&roff)[2][2], int4 tp, uint32_t b_addr,
                                           uint32_t pair_bytes) {
    uint32_t af[2][4];
    gather_a<TAIL>(af, halo, roff, tp);
#pragma unroll
    for (int np = 0; np < 4; ++np) {
        uint32_t b[4];
        sm80::ldsm_x4(b_addr + np * pair_bytes, b);
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) {
            mma16816<T>(acc[mi][2 * np], af[mi], b[0], b[1]);
            mma16816<T>(acc[mi][2 * np + 1], af[mi], b[2], b[3]);
        }
    }
}

// The K chunk's filters into shared memory, [64][KWP], zeros past K and RSC
template <typename T>
__device__ void load_filters(const SmallCArgs &a, int kchunk, T *fs) {
    const unsigned short *F = reinterpret_cast<const unsigned short *>(a.B);
    unsigned short *dst = reinterpret_cast<unsigned short *>(fs);
    const int kwp = filter_pitch(a.KW);
    for (int k = threadIdx.x / 32; k < SC_BK; k += SC_THREADS / 32) {
        int kg = kchunk * SC_BK + k;
        for (int j = threadIdx.x % 32; j < kwp; j += 32)
            dst[k * kwp + j] = kg < a.K && j < a.RSC ? F[(long long)kg * a.RSC + j] : 0;
    }
}

__device__ __forceinline__ float bias_value(const SmallCArgs &a, int k) {
    long long i = (long long)k * a.bias_stride;
    switch (a.bias_kind) {
    case 1: return reinterpret_cast<const float *>(a.extra)[i];
    case 2: return to_f32(reinterpret_cast<const __half *>(a.extra)[i]);
    case 3: return to_f32(reinterpret_cast<const __nv_bfloat16 *>(a.extra)[i]);
    default: return 0.f;
    }
}

template <typename T> struct Pair;
template <> struct Pair<__half> {
    typedef __half2 type;
    static __device__ __forceinline__ __half2 make(float x, float y) { return __floats2half2_rn(x, y); }
    static __device__ __forceinline__ float2 split(__half2 v) { return __half22float2(v); }
};
template <> struct Pair<__nv_bfloat16> {
    typedef __nv_bfloat162 type;
    static __device__ __forceinline__ __nv_bfloat162 make(float x, float y) {
        return __floats2bfloat162_rn(x, y);
    }
    static __device__ __forceinline__ float2 split(__nv_bfloat162 v) { return __bfloat1622float2(v); }
};

// fprop's halo region, which the epilogue reuses to stage the tile's sums
__device__ __forceinline__ int fprop_halo_bytes(const SmallCArgs &a) {
    return max(halo_bytes(a), SC_BM * SC_SP * 4);
}

// relu(alpha * acc + bias) staged in fp32 through shared memory, then
// written (beta * O added) as 16-byte pieces, 8 channels each: a warp's
// store covers whole 128-byte rows (the mma layout's 4-byte pairs left
// every 32-byte sector half written)
template <typename T>
__device__ void fprop_epilogue(const SmallCArgs &a, const float (&acc)[2][8][4], int n, int m0,
                               int kchunk, float *stage) {
    typedef typename Pair<T>::type T2;
    const int warp = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    const int PQ = a.P * a.Q;
    const float alpha = (float)a.alpha, beta = (float)a.beta;
    __syncthreads();  // every warp is done with the halo
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
        int k = kchunk * SC_BK + nt * 8 + 2 * t;
        float b0 = k < a.K ? bias_value(a, k) : 0.f, b1 = k < a.K ? bias_value(a, k + 1) : 0.f;
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
            for (int hi = 0; hi < 2; ++hi) {
                float v0 = __fadd_rn(__fmul_rn(alpha, acc[mi][nt][2 * hi]), b0);
                float v1 = __fadd_rn(__fmul_rn(alpha, acc[mi][nt][2 * hi + 1]), b1);
                if (a.relu) {
                    v0 = fmaxf(v0, 0.f);
                    v1 = fmaxf(v1, 0.f);
                }
                int row = warp * 32 + mi * 16 + hi * 8 + g;
                *reinterpret_cast<float2 *>(stage + row * SC_SP + nt * 8 + 2 * t) = make_float2(v0, v1);
            }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < SC_BM * (SC_BK / 8); i += SC_THREADS) {
        int row = i / (SC_BK / 8), piece = i % (SC_BK / 8);
        int m = m0 + row, k = kchunk * SC_BK + piece * 8;
        if (m >= PQ || k >= a.K) continue;  // K % 8 == 0: a piece is whole or absent
        const float4 *src = reinterpret_cast<const float4 *>(stage + row * SC_SP + piece * 8);
        float4 lo = src[0], hi = src[1];
        float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        uint4 *dst = reinterpret_cast<uint4 *>(reinterpret_cast<T *>(a.out) +
                                               ((long long)n * PQ + m) * a.ld + k);
        if (a.beta != 0.0) {
            uint4 old = *dst;
            const T2 *pairs = reinterpret_cast<const T2 *>(&old);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float2 o = Pair<T>::split(pairs[e]);
                v[2 * e] = __fadd_rn(v[2 * e], __fmul_rn(beta, o.x));
                v[2 * e + 1] = __fadd_rn(v[2 * e + 1], __fmul_rn(beta, o.y));
            }
        }
        uint4 out;
        T2 *pairs = reinterpret_cast<T2 *>(&out);
#pragma unroll
        for (int e = 0; e < 4; ++e) pairs[e] = Pair<T>::make(v[2 * e], v[2 * e + 1]);
        *dst = out;
    }
}

template <typename T>
__device__ void small_c_fprop(const SmallCArgs &a) {
    extern __shared__ __align__(16) unsigned char smem[];
    T *halo = reinterpret_cast<T *>(smem);
    T *fs = reinterpret_cast<T *>(smem + fprop_halo_bytes(a));
    const int kwp = filter_pitch(a.KW);
    int4 *taps = reinterpret_cast<int4 *>(fs + SC_BK * kwp);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int PQ = a.P * a.Q, steps = a.KW / 16, per_chunk = a.N * a.tiles;

    // per k-step and thread: the offsets of taps 2t, 2t+1, 2t+8, 2t+9
    for (int i = threadIdx.x; i < steps * 4; i += SC_THREADS) {
        int j = (i / 4) * 16 + 2 * (i % 4);
        taps[i] = make_int4(tap_offset(a, j), tap_offset(a, j + 1), tap_offset(a, j + 8),
                            tap_offset(a, j + 9));
    }
    // ldmatrix: lanes 0-7, 8-15, 16-23, 24-31 address filter rows of
    // (n-tile 2np, taps 0-7), (2np, 8-15), (2np+1, 0-7), (2np+1, 8-15)
    const uint32_t b_lane = sm80::smem_u32(fs + ((lane / 16) * 8 + lane % 8) * kwp + ((lane / 8) % 2) * 8);
    const uint32_t pair_bytes = 16 * kwp * 2;  // two n8 tiles of filters
    const unsigned short *hs = reinterpret_cast<const unsigned short *>(halo);
    int loaded = -1;
    for (int index = blockIdx.x; index < per_chunk * a.kchunks; index += gridDim.x) {
        int kchunk = divide(a.by_images, index), rest = index - kchunk * per_chunk;
        int n = divide(a.by_tiles, rest), tile = rest - n * a.tiles, m0 = tile * SC_BM;
        __syncthreads();  // the previous tile's reads of the halo (and filters) are done
        if (kchunk != loaded) {
            load_filters(a, kchunk, fs);
            loaded = kchunk;
        }
        int p_first, rows;
        tile_rows(a, tile, p_first, rows);
        load_halo(a, reinterpret_cast<const T *>(a.I) + (long long)n * a.H * a.W * a.C,
                  p_first * a.str_h - a.pad_h, rows, halo);
        int roff[2][2];
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
            for (int hi = 0; hi < 2; ++hi)  // positions past P*Q repeat the last (not stored)
                roff[mi][hi] = row_offset(a, min(m0 + warp * 32 + mi * 16 + hi * 8 + g, PQ - 1), p_first);
        float acc[2][8][4] = {};
        int kk = 0;
#pragma unroll 2
        for (; kk < steps - 1; ++kk)
            fprop_step<T, false>(acc, hs, roff, taps[kk * 4 + t], b_lane + kk * 32, pair_bytes);
        fprop_step<T, true>(acc, hs, roff, taps[kk * 4 + t], b_lane + kk * 32, pair_bytes);
        fprop_epilogue<T>(a, acc, n, m0, kchunk, reinterpret_cast<float *>(smem));
    }
}

// -- fprop, fp32 ----------------------------------------------------------------

// Copy input rows h0 .. h0 + rows - 1 of image `img` (fp32) into the halo as
// 4-float pieces (zeros outside the image), as load_halo does for 16-bit
// data; plain loads: the tile's compute waits on them anyway
__device__ void load_halo_f32(const SmallCArgs &a, const float *img, int h0, int rows, float *halo) {
    const int pieces = a.pitch / 4;
    const int d0 = a.lead + a.pad_w * a.C, d1 = d0 + a.row_elems;
    for (int i = threadIdx.x; i < rows * pieces; i += SC_THREADS) {
        const int hr = divide(a.by_pieces, i), e0 = (i - hr * pieces) * 4, h = h0 + hr;
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int x = e0 + e;
            v[e] = (unsigned)h < (unsigned)a.H && x >= d0 && x < d1
                ? img[(long long)h * a.W * a.C + (x - d0)] : 0.f;
        }
        *reinterpret_cast<float4 *>(halo + hr * a.pitch + e0) = make_float4(v[0], v[1], v[2], v[3]);
    }
    __syncthreads();
}

// fp32 data has no tensor-core path that keeps fp32's precision: FFMAs.
// Thread t owns positions m0 + pg + 16 i (i < 8, pg = t % 16) of the tile
// and filters 8 fg .. 8 fg + 7 (fg = t / 16) of the K chunk: 64
// accumulators.  Per tap j (ascending, the gather route's order), 8 halo
// loads and two float4 filter loads (the filters sit [RSC][64] in shared
// memory) feed 64 FFMAs.  A warp's 16 positions are consecutive (halo
// words str_w * C apart) and its two filter groups 32 bytes apart.
__device__ void small_c_fprop_f32(const SmallCArgs &a) {
    extern __shared__ __align__(16) unsigned char smem[];
    float *halo = reinterpret_cast<float *>(smem);
    float *fs = halo + (a.halo_rows * a.pitch + 3) / 4 * 4;
    int *taps = reinterpret_cast<int *>(fs + a.RSC * SC_BK);
    const float *F = reinterpret_cast<const float *>(a.B);
    const int pg = threadIdx.x % 16, fg = threadIdx.x / 16;
    const int PQ = a.P * a.Q, per_chunk = a.N * a.tiles;
    for (int j = threadIdx.x; j < a.RSC; j += SC_THREADS) taps[j] = tap_offset(a, j);
    int loaded = -1;
    for (int index = blockIdx.x; index < per_chunk * a.kchunks; index += gridDim.x) {
        const int kchunk = divide(a.by_images, index), rest = index - kchunk * per_chunk;
        const int n = divide(a.by_tiles, rest), tile = rest - n * a.tiles, m0 = tile * SC_BM;
        __syncthreads();  // the previous tile's reads of the halo (and filters) are done
        if (kchunk != loaded) {
            for (int i = threadIdx.x; i < a.RSC * SC_BK; i += SC_THREADS) {
                const int j = i / SC_BK, k = kchunk * SC_BK + i % SC_BK;
                fs[i] = k < a.K ? F[(long long)k * a.RSC + j] : 0.f;
            }
            loaded = kchunk;
        }
        int p_first, rows;
        tile_rows(a, tile, p_first, rows);
        load_halo_f32(a, reinterpret_cast<const float *>(a.I) + (long long)n * a.H * a.W * a.C,
                      p_first * a.str_h - a.pad_h, rows, halo);
        int roff[8];
#pragma unroll
        for (int i = 0; i < 8; ++i)  // positions past P*Q repeat the last (not stored)
            roff[i] = row_offset(a, min(m0 + pg + 16 * i, PQ - 1), p_first);
        float acc[8][8] = {};
        const float4 *f4 = reinterpret_cast<const float4 *>(fs) + 2 * fg;
#pragma unroll 2
        for (int j = 0; j < a.RSC; ++j) {
            const int tap = taps[j];
            const float4 f0 = f4[j * (SC_BK / 4)], f1 = f4[j * (SC_BK / 4) + 1];
            const float f[8] = {f0.x, f0.y, f0.z, f0.w, f1.x, f1.y, f1.z, f1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const float x = halo[roff[i] + tap];
#pragma unroll
                for (int k = 0; k < 8; ++k) acc[i][k] = fmaf(x, f[k], acc[i][k]);
            }
        }
        // relu(alpha * acc + bias) (+ beta * O), 8 filters a 32-byte piece
        const int k0 = kchunk * SC_BK + 8 * fg;
        if (k0 >= a.K)  // K % 8 == 0: a group is whole or absent
            continue;
        const float alpha = (float)a.alpha, beta = (float)a.beta;
        float bias[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) bias[k] = bias_value(a, k0 + k);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int m = m0 + pg + 16 * i;
            if (m >= PQ)
                continue;
            float v[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                v[k] = __fadd_rn(__fmul_rn(alpha, acc[i][k]), bias[k]);
                if (a.relu) v[k] = fmaxf(v[k], 0.f);
            }
            float4 *dst = reinterpret_cast<float4 *>(reinterpret_cast<float *>(a.out) +
                                                     ((long long)n * PQ + m) * a.ld + k0);
            if (a.beta != 0.0) {
                const float4 o0 = dst[0], o1 = dst[1];
                const float old[8] = {o0.x, o0.y, o0.z, o0.w, o1.x, o1.y, o1.z, o1.w};
#pragma unroll
                for (int k = 0; k < 8; ++k) v[k] = __fadd_rn(v[k], __fmul_rn(beta, old[k]));
            }
            dst[0] = make_float4(v[0], v[1], v[2], v[3]);
            dst[1] = make_float4(v[4], v[5], v[6], v[7]);
        }
    }
}

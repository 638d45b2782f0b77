// conv_small_c.cu: convolutions of few input channels (the first layers of
// image networks, C = 1 .. 4) on the tensor cores, the filter held on chip;
// fp32 fprop on FFMAs.
//
// What it computes (cuDNN's cross-correlation, 2-D):
//   fprop   O[n, p, q, k] = relu(alpha * sum_{r,s,c} I[n, h, w, c] F[k, r, s, c]
//                                + bias[k]) + beta * O[n, p, q, k]
//           with h = p*str_h + r*dil_h - pad_h, w = q*str_w + s*dil_w - pad_w
//           (0 outside the image);
//   bprop   grad_I[n, h, w, c] = alpha * sum over the taps (r, s) and filters k
//           with h = p*str_h + r*dil_h - pad_h (w likewise) of E[n, p, q, k] F[k, r, s, c]
//           + beta * grad_I[n, h, w, c];
//   update  part[b, k, j] = sum over block b's positions (n, p, q) of
//           E[n, p, q, k] * I[n, h, w, c] (tap j = (r*S + s)*C + c), then
//           grad_F[k, j] = alpha * sum_b part[b, k, j] + beta * grad_F[k, j]
//           (ga_small_c_reduce: the blocks' partial sums added in block order,
//           so the result is the same bits on every run; no atomics).
// Why a kernel of its own: with C = 3 a GEMM over im2col(I) writes and reads
// back a matrix R*S times the input's size (GoogLeNet's conv1: 488 MB), and
// the copy engine's im2col moves one 6-byte pixel per request.  Here a block
// copies the input rows a tile of output positions needs into shared memory
// once (the halo, zero-padded) and reads each im2col element from there
// while it loads the mma fragments: the im2col matrix never exists.
//
// Layouts: I (N, H, W, C), F and grad_F (K, R, S, C), O and E (N, P, Q, K)
// with row stride ld (O, E may be channel slices with 16-byte aligned
// rows), channel innermost; the taps j = (r*S + s)*C + c run over
// RSC = R*S*C, padded to KW (a multiple of 16, one mma k-step) with zero
// filter taps.  fp16 or bf16 data, fp32 accumulation (mma.sync m16n8k16,
// sm_80 and later); fp32 fprop: fp32 data, halo rows in 4-float pieces,
// the filters [RSC][64] unpadded, FFMAs in ascending tap order (see
// small_c_fprop_f32).
//
// The halo: a tile of BM = 128 consecutive output positions of one image
// (row-major over P x Q, so it may span several output rows) needs input
// rows h0 .. h0 + rows - 1 (h0 = p_first*str_h - pad_h) and columns
// -pad_w .. (Q-1)*str_w + (S-1)*dil_w - pad_w.  Shared row hr holds input
// row h0 + hr: `lead` unused elements, then the columns from -pad_w on, C
// channels each, zeros outside the image, `pitch` elements a row.  `lead`
// puts column 0 on a 16-byte boundary, so that rows whose start is aligned
// in global memory (W*C % 8 == 0, I 16-byte aligned: `vec`) copy as 16-byte
// cp.async pieces.  Element (m, j) of the im2col matrix is then at
// row_offset(m) + tap_offset(j), with
//   row_offset = (p - p_first)*str_h*pitch + lead + q*str_w*C,
//   tap_offset = r*dil_h*pitch + s*dil_w*C + c.
//
// fprop.  A block of 4 warps owns 64 filters (one K chunk) and walks tiles
// (kchunk, n, tile) with a grid stride; the K chunk's filter sits in shared
// memory as [64][KWP] (KWP = KW, +8 when KW/8 is even: conflict-free
// ldmatrix).  Warp w computes positions 32w .. 32w + 31 of the tile against
// the 64 filters: 2 x 8 mma tiles, 64 fp32 accumulators a thread; A
// fragments are gathered from the halo by 16-bit loads, B fragments are
// ldmatrix'd.  Taps past RSC (the last k-step) read as zeros, so an
// infinite input cannot make inf * 0 = NaN.  The epilogue stages
// relu(alpha * acc + bias) in fp32 where the halo was, then writes 16-byte
// pieces of 8 channels (beta * O added), so O's rows must be 16-byte
// aligned.
//
// update.  Grid (blocks, jchunks, kchunks): block b adds up the tiles
// [b*T/B, (b+1)*T/B) of all T = N * tiles tiles, for 64 filters and
// JW = 32*NJ taps (warp w: taps w*8*NJ .. + 8*NJ).  Per tile the errors of
// the tile's 128 positions are staged [128][72] (cp.async, zeros past P*Q
// or K) and the halo and a table of the positions' row offsets (-1 past
// P*Q: those read zeros) loaded; each 16-position k-step takes the errors
// by ldmatrix.trans (A = E^T) and the im2col elements by 16-bit loads (B),
// 4 x NJ mma tiles.  The partial sums go to part[kchunk][jchunk][b][64][JW]
// in fp32; ga_small_c_reduce sums them.
//
// bprop.  Input positions h = a + str_h*h' of one phase a (likewise w)
// meet the same filter taps: rows r with (a + pad_h - r*dil_h) % str_h ==
// 0, reading error row h' + (a + pad_h - r*dil_h) / str_h -- a stride-1
// correlation per phase.  A tile is 16 x 16 positions (h', w') of every
// phase of one image (a 16 str_h x 16 str_w pixel block); a block holds
// the whole filter in shared memory ([R*S][C][KP + 8], KP = K rounded up
// to 32) and walks tiles (n, tile) with a grid stride.  It stages the
// errors all phases of the tile read once ([rows][cols][KP + 8],
// cp.async, zeros outside E), then runs the phases in turn: warp w
// computes tile rows 4w .. 4w + 3 (4 m16 tiles) against 8 channels (C <=
// 8, zeros past C; the _c16 kernels: two groups of 8 for 8 < C <= 16);
// per filter column, 16 filters and staged row, one ldmatrix of the
// errors (A, one staged cell a position) serves every (tile row, filter
// row) pair that reads it (dil_h = 1 and at most 4 filter rows a phase, 5
// in the _c16 kernels), the filter (B) read by 4-byte loads.  The
// epilogue writes each position's C channels (alpha, beta).  No atomics:
// every input position is one thread's sum.
//
// Parameters: SmallCArgs below (the host packs it: gpuarray/conv/small_c.py);
// bprop: SmallCBpropArgs.
// Launch shape: block (128, 1, 1); fprop grid (min(tiles, resident), 1, 1)
// and the dynamic shared memory the host computes (max(halo, staged
// output) + filter + taps; fp32: halo + filters + one int a tap); update grid (B, jchunks, kchunks) with halo +
// staged errors + row table; reduce grid (ceil(K*RSC / 32), 1, 1), block
// (256, 1, 1); bprop grid (min(tiles, resident), 1, 1) with the staged
// errors + filter + phase tables.  Index math within an image is 32-bit;
// the host refuses images of 2**31 elements.
//
// Kernels: ga_small_c_fprop_{f16,bf16,f32}, ga_small_c_update_{f16,bf16}_j{1..6}
// (NJ n8 tiles of taps a warp), ga_small_c_reduce_{f16,bf16},
// ga_small_c_bprop_{f16,bf16}, ga_small_c_bprop_c16_{f16,bf16}.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "convert.cuh"
#include "fastdiv.cuh"
#include "sm80_ptx.cuh"

#define SC_THREADS 128
#define SC_BM 128        // output positions of a tile
#define SC_BK 64         // filters of a block
#define SC_EP 72         // staged errors: elements a row (64 + 8: conflict-free ldmatrix.trans)
#define SC_SP 72         // staged output: floats a row (conflict-free 8-byte stores)
#define SC_WARP_ROWS 4   // bprop: a warp's tile rows (16 positions each)
#define SC_TH 16         // bprop: a tile's phase rows (4 warps x SC_WARP_ROWS)
#define SC_TW 16         // bprop: a tile's phase columns
#define SC_MAX_NR 4      // bprop: filter rows a phase meets at most
#define SC_MAX_NR_C16 5  // .. in the _c16 kernels (5x5 filters at stride 1)
#define SC_MAX_STRIDE 8   // bprop: strides up to 8
#define SC_MAX_TAPS 32    // bprop: filter extents up to 32
#define SC_REDUCE_THREADS 256
#define SC_REDUCE_GROUPS 8  // partial sums a reduce element is split over
static_assert(SC_THREADS == SC_BM, "update: a thread fills one position's row offset");

struct SmallCArgs {
    const void *I;       // the input
    const void *B;       // fprop: the filter F; update: the errors E
    void *out;           // fprop: O; update and reduce: the partial sums (fp32)
    void *extra;         // fprop: the bias (or null); reduce: grad_F
    double alpha, beta;  // fprop's epilogue (update: applied by the reduce)
    int N, H, W, C, K, P, Q, R, S;
    int str_h, str_w, pad_h, pad_w, dil_h, dil_w;
    int RSC, KW;         // taps, and taps padded to a multiple of 16
    int ld;              // elements between rows of O (fprop) or E (update)
    int tiles;           // tiles of one image: ceil(P*Q / SC_BM)
    int halo_rows;       // the most input rows a tile needs
    int pitch;           // elements of a halo row (a multiple of 8)
    int lead;            // elements before a halo row's column -pad_w
    int row_elems;       // elements of an input row the halo holds: min(W, columns - pad_w) * C
    int vec;             // 1: input rows copy as 16-byte pieces
    int bias_kind;       // 0 none, 1 fp32, 2 fp16, 3 bf16
    int bias_stride;     // elements between bias values
    int relu;
    int kchunks;         // ceil(K / 64)
    int jw;              // update: taps a block (32 * NJ)
    int blocks;          // update: blocks along x (B)
    int jchunks;         // update: blocks along y
    FastDiv by_q;        // position -> (p, q)
    FastDiv by_tiles;    // tile index -> (n, tile)
    FastDiv by_pieces;   // halo piece -> (row, piece): pitch / 8
    FastDiv by_images;   // fprop tile index -> (kchunk, rest): N * tiles
};
static_assert(sizeof(SmallCArgs) == 224, "gpuarray/conv/small_c.py packs 224 bytes (4 of them padding)");

// bprop's arguments (its tiles are 2-D blocks of each phase's positions)
struct SmallCBpropArgs {
    const void *E;       // the errors
    const void *F;       // the filter
    void *dI;            // grad_I
    const void *unused;  // (the holes' layout of SmallCArgs)
    double alpha, beta;
    int N, H, W, C, K, P, Q, R, S;
    int str_h, str_w, pad_h, pad_w, dil_h, dil_w;
    int ld;                    // elements between rows of E
    int kp;                    // K rounded up to 32 (the staged errors' channels)
    int tiles_h, tiles_w;      // tiles of an image: ceil(ceil(H / str_h) / TH), .. along w
    int halo_rows, halo_cols;  // staged error positions of a tile
    int dr_lo, ds_lo;          // the lowest error row (column) offset of any phase's tap
    FastDiv by_image_tiles;    // tiles_h * tiles_w
    FastDiv by_tiles_w;
    FastDiv by_pieces;         // kp / 8
    FastDiv by_halo_cols;
};
static_assert(sizeof(SmallCBpropArgs) == 192, "gpuarray/conv/small_c.py packs 192 bytes (4 of them padding)");

// -- the mma.sync instructions (sm80_ptx.cuh) by element type -------------------

// d += a b for one m16n8k16 tile: a 4 registers (row-major A), b 2 (B by columns)
template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    sm80::mma<MmaInput<T>::value>(d, a, b0, b1);
}

__device__ __forceinline__ void cp_async_wait_all() {
    sm80::cp_async_commit();
    sm80::cp_async_wait<0>();
}

__device__ __forceinline__ uint32_t pack2(unsigned short lo, unsigned short hi) {
    return (uint32_t)lo | ((uint32_t)hi << 16);
}

// -- the halo -------------------------------------------------------------------

// shared-memory offset of tap j from a position's window corner, -1 past RSC
__device__ int tap_offset(const SmallCArgs &a, int j) {
    if (j >= a.RSC) return -1;
    int r = j / (a.S * a.C), rest = j - r * a.S * a.C;
    int s = rest / a.C, c = rest - s * a.C;
    return r * a.dil_h * a.pitch + s * a.dil_w * a.C + c;
}

// Copy input rows h0 .. h0 + rows - 1 of image `img` into the halo (zeros
// outside the image); returns after every thread's copies landed.
template <typename T>
__device__ void load_halo(const SmallCArgs &a, const T *img, int h0, int rows, T *halo) {
    const int pieces = a.pitch / 8;
    const int d0 = a.lead + a.pad_w * a.C, d1 = d0 + a.row_elems;
    for (int i = threadIdx.x; i < rows * pieces; i += SC_THREADS) {
        int hr = divide(a.by_pieces, i), e0 = (i - hr * pieces) * 8, h = h0 + hr;
        T *dst = halo + hr * a.pitch + e0;
        const T *src = img + (h * a.W * a.C + e0 - d0);
        if ((unsigned)h >= (unsigned)a.H || e0 >= d1 || e0 + 8 <= d0) {
            *reinterpret_cast<uint4 *>(dst) = make_uint4(0, 0, 0, 0);
        } else if (a.vec && e0 >= d0 && e0 + 8 <= d1) {
            sm80::cp_async16(sm80::smem_u32(dst), src, 16);
        } else {  // a row's unaligned end, or rows not 16-byte aligned
            unsigned short v[8];
            for (int e = 0; e < 8; ++e) {
                int x = e0 + e;
                v[e] = x >= d0 && x < d1 ? reinterpret_cast<const unsigned short *>(src)[e] : 0;
            }
            *reinterpret_cast<uint4 *>(dst) = make_uint4(pack2(v[0], v[1]), pack2(v[2], v[3]),
                                                         pack2(v[4], v[5]), pack2(v[6], v[7]));
        }
    }
    cp_async_wait_all();
    __syncthreads();
}

// The first output row of tile `tile`, and the input rows its halo needs
__device__ __forceinline__ void tile_rows(const SmallCArgs &a, int tile, int &p_first, int &rows) {
    int m0 = tile * SC_BM, last = min(m0 + SC_BM, a.P * a.Q) - 1;
    p_first = divide(a.by_q, m0);
    rows = (divide(a.by_q, last) - p_first) * a.str_h + (a.R - 1) * a.dil_h + 1;
}

// Shared offset of position m's window corner in the halo of a tile starting at row p_first
__device__ __forceinline__ int row_offset(const SmallCArgs &a, int m, int p_first) {
    int p = divide(a.by_q, m), q = m - p * a.Q;
    return (p - p_first) * a.str_h * a.pitch + a.lead + q * a.str_w * a.C;
}

__device__ __forceinline__ int filter_pitch(int KW) { return (KW / 8) % 2 ? KW : KW + 8; }

__device__ __forceinline__ int halo_bytes(const SmallCArgs &a) {
    return (a.halo_rows * a.pitch * 2 + 15) / 16 * 16;
}

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

// -- update ---------------------------------------------------------------------

// Stage the errors of positions m0 .. m0 + 127 of image n, filters of K chunk
// kchunk, as [128][SC_EP] (zeros past P*Q and K)
template <typename T>
__device__ void stage_errors(const SmallCArgs &a, int n, int m0, int kchunk, T *es) {
    const T *E = reinterpret_cast<const T *>(a.B);
    const int PQ = a.P * a.Q;
    for (int i = threadIdx.x; i < SC_BM * (SC_BK / 8); i += SC_THREADS) {
        int m = i / (SC_BK / 8), k = (i % (SC_BK / 8)) * 8, kg = kchunk * SC_BK + k;
        bool inside = m0 + m < PQ && kg < a.K;
        const T *src = inside ? E + ((long long)n * PQ + m0 + m) * a.ld + kg : E;
        sm80::cp_async16(sm80::smem_u32(es + m * SC_EP + k), src, inside ? 16 : 0);
    }
}

// One 16-position k-step: A = E^T (4 m16 tiles of filters), B = im2col (NJ n8 tiles)
template <typename T, int NJ, bool PARTIAL>
__device__ __forceinline__ void update_step(float (&acc)[4][NJ][4], uint32_t a_addr,
                                            const unsigned short *halo, const int *rowtab,
                                            const int (&toff)[NJ], int step) {
    const int t = threadIdx.x % 4;
    uint32_t af[4][4];
#pragma unroll
    for (int kt = 0; kt < 4; ++kt) sm80::ldsm_x4_t(a_addr + step * 16 * SC_EP * 2 + kt * 32, af[kt]);
    int2 lo = *reinterpret_cast<const int2 *>(rowtab + step * 16 + 2 * t);
    int2 hi = *reinterpret_cast<const int2 *>(rowtab + step * 16 + 2 * t + 8);
#pragma unroll
    for (int nt = 0; nt < NJ; ++nt) {
        const unsigned short *h = halo + toff[nt];
        uint32_t b0, b1;
        if (PARTIAL) {
            b0 = pack2(lo.x < 0 ? 0 : h[lo.x], lo.y < 0 ? 0 : h[lo.y]);
            b1 = pack2(hi.x < 0 ? 0 : h[hi.x], hi.y < 0 ? 0 : h[hi.y]);
        } else {
            b0 = pack2(h[lo.x], h[lo.y]);
            b1 = pack2(h[hi.x], h[hi.y]);
        }
#pragma unroll
        for (int kt = 0; kt < 4; ++kt) mma16816<T>(acc[kt][nt], af[kt], b0, b1);
    }
}

template <typename T, int NJ>
__device__ void small_c_update(const SmallCArgs &a) {
    extern __shared__ __align__(16) unsigned char smem[];
    T *halo = reinterpret_cast<T *>(smem);
    T *es = reinterpret_cast<T *>(smem + halo_bytes(a));
    int *rowtab = reinterpret_cast<int *>(es + SC_BM * SC_EP);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int PQ = a.P * a.Q, kchunk = blockIdx.z, jchunk = blockIdx.y;
    const int total = a.N * a.tiles;
    const int first = (int)((long long)blockIdx.x * total / a.blocks);
    const int last = (int)((long long)(blockIdx.x + 1) * total / a.blocks);

    // this thread's tap (column g) of each of its n8 tiles; taps past RSC
    // read tap 0 (their sums are dropped)
    int toff[NJ];
#pragma unroll
    for (int nt = 0; nt < NJ; ++nt)
        toff[nt] = max(tap_offset(a, jchunk * a.jw + (warp * NJ + nt) * 8 + g), 0);
    // ldmatrix.trans: lanes 0-7, 8-15, 16-23, 24-31 address staged rows of
    // (positions 0-7, filters 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15)
    const uint32_t a_lane = sm80::smem_u32(es + ((lane / 16) * 8 + lane % 8) * SC_EP + ((lane / 8) % 2) * 8);
    const unsigned short *hs = reinterpret_cast<const unsigned short *>(halo);
    float acc[4][NJ][4] = {};
    for (int index = first; index < last; ++index) {
        int n = divide(a.by_tiles, index), tile = index - n * a.tiles, m0 = tile * SC_BM;
        __syncthreads();  // the previous tile's reads are done
        stage_errors(a, n, m0, kchunk, es);
        int p_first, rows;
        tile_rows(a, tile, p_first, rows);
        int m = m0 + threadIdx.x;
        rowtab[threadIdx.x] = m < PQ ? row_offset(a, m, p_first) : -1;
        load_halo(a, reinterpret_cast<const T *>(a.I) + (long long)n * a.H * a.W * a.C,
                  p_first * a.str_h - a.pad_h, rows, halo);  // (waits for the errors too)
        if (m0 + SC_BM <= PQ) {
#pragma unroll 2
            for (int step = 0; step < SC_BM / 16; ++step)
                update_step<T, NJ, false>(acc, a_lane, hs, rowtab, toff, step);
        } else {
            for (int step = 0; step < SC_BM / 16; ++step)
                update_step<T, NJ, true>(acc, a_lane, hs, rowtab, toff, step);
        }
    }
    // the block's partial sums: part[kchunk][jchunk][b][64][jw]
    float *part = reinterpret_cast<float *>(a.out) +
                  (((long long)kchunk * a.jchunks + jchunk) * a.blocks + blockIdx.x) * SC_BK * a.jw;
#pragma unroll
    for (int kt = 0; kt < 4; ++kt)
#pragma unroll
        for (int nt = 0; nt < NJ; ++nt) {
            int j = (warp * NJ + nt) * 8 + 2 * t, k = kt * 16 + g;
            *reinterpret_cast<float2 *>(part + k * a.jw + j) = make_float2(acc[kt][nt][0], acc[kt][nt][1]);
            *reinterpret_cast<float2 *>(part + (k + 8) * a.jw + j) =
                make_float2(acc[kt][nt][2], acc[kt][nt][3]);
        }
}

// grad_F[k, j] = alpha * sum_b part[..][b][k][j] + beta * grad_F[k, j]: a
// block takes 32 elements; SC_REDUCE_GROUPS threads an element each add
// every 8th block's sums, then one adds the groups' sums in order.
template <typename T>
__device__ void small_c_reduce(const SmallCArgs &a) {
    __shared__ float sums[SC_REDUCE_GROUPS][32];
    const int lane = threadIdx.x % 32, group = threadIdx.x / 32;
    const int e = blockIdx.x * 32 + lane, k = e / a.RSC, j = e - k * a.RSC;
    const bool inside = k < a.K;
    float sum = 0.f;
    if (inside) {
        int jchunk = j / a.jw, jl = j - jchunk * a.jw, kchunk = k / SC_BK, kl = k - kchunk * SC_BK;
        const float *p = reinterpret_cast<const float *>(a.out) +
                         ((long long)kchunk * a.jchunks + jchunk) * a.blocks * SC_BK * a.jw +
                         kl * a.jw + jl;
        for (int b = group; b < a.blocks; b += SC_REDUCE_GROUPS) sum += p[(long long)b * SC_BK * a.jw];
    }
    sums[group][lane] = sum;
    __syncthreads();
    if (group == 0 && inside) {
        float total = 0.f;
        for (int i = 0; i < SC_REDUCE_GROUPS; ++i) total += sums[i][lane];
        T *grad = reinterpret_cast<T *>(a.extra);
        float v = __fmul_rn((float)a.alpha, total);
        if (a.beta != 0.0) v = __fadd_rn(v, __fmul_rn((float)a.beta, to_f32(grad[e])));
        grad[e] = from_f32<T>(v);
    }
}

// -- bprop ----------------------------------------------------------------------

// Per phase a of one axis: its taps (r, error offset - lowest offset over
// all phases), in order, and their count
struct PhaseTaps {
    int2 tap[SC_MAX_STRIDE][SC_MAX_TAPS];
    int count[SC_MAX_STRIDE];
};

// Input position a + stride*h' takes filter row r where (a + pad - r*dil)
// % stride == 0, from error row h' + (a + pad - r*dil) / stride
__device__ void phase_taps(int stride, int pad, int extent, int dil, int lowest, PhaseTaps &out) {
    for (int a = threadIdx.x; a < stride; a += SC_THREADS) {
        int count = 0;
        for (int r = 0; r < extent; ++r) {
            int num = a + pad - r * dil;
            if (num % stride == 0) out.tap[a][count++] = make_int2(r, num / stride - lowest);
        }
        out.count[a] = count;
    }
}

// The whole filter into shared memory as [R*S][C][KP + 8], k contiguous
// (zeros past K): the B fragments of a tap are 4-byte loads
template <typename T>
__device__ void load_bprop_filters(const SmallCBpropArgs &a, T *fs) {
    const unsigned short *F = reinterpret_cast<const unsigned short *>(a.F);
    unsigned short *dst = reinterpret_cast<unsigned short *>(fs);
    const int ep = a.kp + 8, taps = a.R * a.S;
    for (int i = threadIdx.x; i < taps * a.C * ep; i += SC_THREADS) {
        int k = i % ep, rest = i / ep, c = rest % a.C, tap = rest / a.C;
        dst[i] = k < a.K ? F[((long long)k * taps + tap) * a.C + c] : 0;
    }
}

// Stage the errors of tile (n, h0, w0): rows h0 + dr_lo .., columns w0 + ds_lo ..
// of all phases, [halo_rows][halo_cols][KP + 8] (zeros outside E and past K)
template <typename T>
__device__ void stage_bprop_errors(const SmallCBpropArgs &a, int n, int h0, int w0, T *halo) {
    const T *E = reinterpret_cast<const T *>(a.E);
    const int ep = a.kp + 8, pieces = a.kp / 8;
    for (int i = threadIdx.x; i < a.halo_rows * a.halo_cols * pieces; i += SC_THREADS) {
        int cell = divide(a.by_pieces, i), piece = i - cell * pieces;
        int hr = divide(a.by_halo_cols, cell), hc = cell - hr * a.halo_cols;
        int p = h0 + a.dr_lo + hr, q = w0 + a.ds_lo + hc, k = piece * 8;
        bool inside = (unsigned)p < (unsigned)a.P && (unsigned)q < (unsigned)a.Q && k < a.K;
        const T *src = inside ? E + (((long long)n * a.P + p) * a.Q + q) * a.ld + k : E;
        sm80::cp_async16(sm80::smem_u32(halo + cell * ep + k), src, inside ? 16 : 0);
    }
    cp_async_wait_all();
    __syncthreads();
}

// grad_I of the tile's positions of phase (ph_h, ph_w).  With dil_h = 1 a
// phase's filter rows read consecutive error rows (tap ir: offset
// y_0 - ir), so tile row i with tap jr = nr - 1 - ir reads staged row
// ybase + i + jr: each staged row's A fragment serves every (row, tap) pair
// that meets it -- 4 + nr - 1 ldmatrix for the warp's 4 rows x nr taps
// instead of 4 nr.
template <typename T, int NCG, int NR>
__device__ void bprop_phase(const SmallCBpropArgs &a, const PhaseTaps &taps_h, const PhaseTaps &taps_w,
                            int ph_h, int ph_w, int n, int h0, int w0, const T *halo, const T *fs) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int ep = a.kp + 8, nr = taps_h.count[ph_h];
    float acc[SC_WARP_ROWS][NCG][4] = {};
    if (nr > 0) {
        const int ybase = taps_h.tap[ph_h][nr - 1].y;  // the lowest offset: the last tap's
        // ldmatrix: lane l addresses staged row ybase + 4 warp (+ x), column l % 16
        // (+ the tap's), channels 8 (l / 16) on; B: filter channel 8 cg + g of
        // channel group cg (zeros past C)
        const uint32_t a_lane = sm80::smem_u32(halo + ((ybase + SC_WARP_ROWS * warp) * a.halo_cols + lane % 16) * ep +
                                          (lane / 16) * 8);
        const unsigned short *fb = reinterpret_cast<const unsigned short *>(fs) + 2 * t;
        for (int is = 0; is < taps_w.count[ph_w]; ++is) {
            int2 tw = taps_w.tap[ph_w][is];
            const uint32_t col = a_lane + tw.y * ep * 2;
#pragma unroll 2
            for (int k = 0; k < a.kp; k += 16) {
                uint32_t b[NR][NCG][2];
#pragma unroll
                for (int jr = 0; jr < NR; ++jr)
#pragma unroll
                    for (int cg = 0; cg < NCG; ++cg) {
                        const unsigned short *f =
                            fb + ((taps_h.tap[ph_h][max(nr - 1 - jr, 0)].x * a.S + tw.x) * a.C +
                                  min(8 * cg + g, a.C - 1)) * ep + k;
                        bool live = jr < nr && 8 * cg + g < a.C;
                        b[jr][cg][0] = live ? *reinterpret_cast<const uint32_t *>(f) : 0;
                        b[jr][cg][1] = live ? *reinterpret_cast<const uint32_t *>(f + 8) : 0;
                    }
#pragma unroll
                for (int x = 0; x < SC_WARP_ROWS + NR - 1; ++x) {
                    if (x >= SC_WARP_ROWS + nr - 1) break;
                    uint32_t af[4];
                    sm80::ldsm_x4(col + (x * a.halo_cols * ep + k) * 2, af);
#pragma unroll
                    for (int jr = 0; jr < NR; ++jr) {
                        int i = x - jr;
                        if (i >= 0 && i < SC_WARP_ROWS && jr < nr)
#pragma unroll
                            for (int cg = 0; cg < NCG; ++cg) mma16816<T>(acc[i][cg], af, b[jr][cg][0], b[jr][cg][1]);
                    }
                }
            }
        }
    }
    // grad_I = alpha * acc + beta * grad_I for channels 8 cg + 2t, + 1 < C
    T *grad = reinterpret_cast<T *>(a.dI);
    const float alpha = (float)a.alpha, beta = (float)a.beta;
#pragma unroll
    for (int i = 0; i < SC_WARP_ROWS; ++i)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
            int h = ph_h + a.str_h * (h0 + SC_WARP_ROWS * warp + i);
            int w = ph_w + a.str_w * (w0 + g + 8 * hi);
            if (h >= a.H || w >= a.W) continue;
            T *pixel = grad + (((long long)n * a.H + h) * a.W + w) * a.C;
#pragma unroll
            for (int ce = 0; ce < 2 * NCG; ++ce) {
                int cg = ce / 2, e = ce % 2, c = 8 * cg + 2 * t + e;
                if (c >= a.C) continue;
                float v = __fmul_rn(alpha, acc[i][cg][2 * hi + e]);
                if (a.beta != 0.0) v = __fadd_rn(v, __fmul_rn(beta, to_f32(pixel[c])));
                pixel[c] = from_f32<T>(v);
            }
        }
}

template <typename T, int NCG, int NR>
__device__ void small_c_bprop(const SmallCBpropArgs &a) {
    extern __shared__ __align__(16) unsigned char smem[];
    // all dynamic (static shared memory would count against the 48 KB a
    // launch may take without the host raising the limit)
    T *halo = reinterpret_cast<T *>(smem);
    T *fs = reinterpret_cast<T *>(smem + a.halo_rows * a.halo_cols * (a.kp + 8) * 2);
    PhaseTaps &taps_h = *reinterpret_cast<PhaseTaps *>(fs + a.R * a.S * a.C * (a.kp + 8));
    PhaseTaps &taps_w = (&taps_h)[1];
    phase_taps(a.str_h, a.pad_h, a.R, a.dil_h, a.dr_lo, taps_h);
    phase_taps(a.str_w, a.pad_w, a.S, a.dil_w, a.ds_lo, taps_w);
    load_bprop_filters(a, fs);
    const int per_image = a.tiles_h * a.tiles_w;
    for (int index = blockIdx.x; index < a.N * per_image; index += gridDim.x) {
        int n = divide(a.by_image_tiles, index), rest = index - n * per_image;
        int th = divide(a.by_tiles_w, rest), tw = rest - th * a.tiles_w;
        __syncthreads();  // the previous tile's reads are done (and the tables written)
        stage_bprop_errors(a, n, th * SC_TH, tw * SC_TW, halo);
        for (int ph_h = 0; ph_h < a.str_h; ++ph_h)
            for (int ph_w = 0; ph_w < a.str_w; ++ph_w)
                bprop_phase<T, NCG, NR>(a, taps_h, taps_w, ph_h, ph_w, n, th * SC_TH, tw * SC_TW, halo, fs);
    }
}

// -- entry points -----------------------------------------------------------------

#define SC_BPROP(NAME, T, NCG, NR, BLOCKS)                                                         \
    extern "C" __global__ void __launch_bounds__(SC_THREADS, BLOCKS) NAME(const SmallCBpropArgs a) { \
        small_c_bprop<T, NCG, NR>(a);                                                              \
    }
SC_BPROP(ga_small_c_bprop_f16, __half, 1, SC_MAX_NR, 4)
SC_BPROP(ga_small_c_bprop_bf16, __nv_bfloat16, 1, SC_MAX_NR, 4)
SC_BPROP(ga_small_c_bprop_c16_f16, __half, 2, SC_MAX_NR_C16, 3)
SC_BPROP(ga_small_c_bprop_c16_bf16, __nv_bfloat16, 2, SC_MAX_NR_C16, 3)

#define SC_FPROP(NAME, T)                                                                     \
    extern "C" __global__ void __launch_bounds__(SC_THREADS, 3) NAME(const SmallCArgs a) { \
        small_c_fprop<T>(a);                                                                  \
    }
SC_FPROP(ga_small_c_fprop_f16, __half)
SC_FPROP(ga_small_c_fprop_bf16, __nv_bfloat16)
extern "C" __global__ void __launch_bounds__(SC_THREADS, 4) ga_small_c_fprop_f32(const SmallCArgs a) {
    small_c_fprop_f32(a);
}

#define SC_UPDATE(NAME, T, NJ)                                                                \
    extern "C" __global__ void __launch_bounds__(SC_THREADS, 3) NAME(const SmallCArgs a) { \
        small_c_update<T, NJ>(a);                                                             \
    }
#define SC_UPDATES(NJ)                                        \
    SC_UPDATE(ga_small_c_update_f16_j##NJ, __half, NJ)        \
    SC_UPDATE(ga_small_c_update_bf16_j##NJ, __nv_bfloat16, NJ)
SC_UPDATES(1)
SC_UPDATES(2)
SC_UPDATES(3)
SC_UPDATES(4)
SC_UPDATES(5)
SC_UPDATES(6)

#define SC_REDUCE(NAME, T) \
    extern "C" __global__ void __launch_bounds__(SC_REDUCE_THREADS) NAME(const SmallCArgs a) { small_c_reduce<T>(a); }
SC_REDUCE(ga_small_c_reduce_f16, __half)
SC_REDUCE(ga_small_c_reduce_bf16, __nv_bfloat16)

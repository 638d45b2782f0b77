// conv_small_c_common.cuh: what conv_small_c.cu's kernels share -- their
// tile and staging constants, the argument blocks the host packs
// (gpuarray/conv/small_c.py), the mma.sync of a 16-bit type, and the halo:
// copying the input rows a tile of output positions reads into shared
// memory and the offsets of its im2col elements there.
//
// In: the arguments (SmallCArgs, SmallCBpropArgs); out: the halo in shared
// memory.  conv_small_c.cu's header says the layouts, the halo's shape and
// the launch shapes; no kernel is defined here.
#pragma once
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

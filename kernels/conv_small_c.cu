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
#include "conv_small_c_fprop.cuh"
#include "conv_small_c_grads.cuh"

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

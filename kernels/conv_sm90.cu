// conv_sm90.cu: implicit-GEMM convolution on Hopper (TMA im2col + wgmma).
//
// What it computes, as GEMMs of gemm_sm90.cuh whose producer gathers one
// operand straight from the activations through an im2col tensor map (the
// im2col matrix is never written out); the epilogue (alpha, bias, relu,
// beta, fp32 accumulation, split-K) is the GEMM's.
//   fprop  O = epilogue(conv(I, F)), cuDNN's cross-correlation:
//          C[(n, p, q), k]         = O[n, 0, p, q, k]        (M = N*P*Q, N = K)
//          A[(n, p, q), (r, s, c)] = I[n, 0, p*str_h + r*dil_h - pad_h,
//                                        q*str_w + s*dil_w - pad_w, c]  (0 in the padding)
//          B[k, (r, s, c)]         = F[k, 0, r, s, c]
//          K-tile kt: filter tap kt / cchunks, channels 64 * (kt % cchunks) on.
//   update grad_F = epilogue(E^T @ im2col(I)), with Cp = 64 * cchunks:
//          C[k, (r, s, c)]         = grad_F[k, 0, r, s, c]   (M = K, N = R*S*Cp; for
//                                    C % 64 != 0 an fp32 (K, 1, R, S, Cp) result
//                                    whose channels past C the caller drops)
//          A[k, (n, p, q)]         = E[n, 0, p, q, k]        (the reduction: N*P*Q)
//          B[(n, p, q), (r, s, c)] = the fprop's A
//          K-tile kt: output positions 64 kt on; B's 64-column panel j is tap
//          (n0 + 64 j) / Cp, channels from (n0 + 64 j) % Cp.
//   fprop transposed (..._fprop_t): the fprop above as C^T = B A^T, so
//          C[k, (n, p, q)] = O[n, 0, p, q, k] (M = K, N = N*P*Q): A is F
//          (tiled, rows the filters), B the im2col gather of I (BN output
//          positions a copy), C stored transposed (ldc: O's position
//          stride), a bias along C's rows (bias_m); alpha, bias, relu only
//          (no beta), data-parallel.
//   bprop  (unit stride) grad_I = epilogue(conv(E, F')), the fprop above of E
//          with F'[c, r, s, k] = F[k, R-1-r, S-1-s, c] and padding
//          dil*(extent-1) - pad: B is read from F itself, tap R*S-1-tap,
//          as "n"-major panels of 64 channels (no flipped copy is made).
//
// Layouts (cuDNN names): I (N, 1, H, W, C), F and grad_F (K, 1, R, S, C),
// O and E (N, 1, P, Q, K), channel innermost, contiguous; 2-D layers only
// (D = T = 1); C a multiple of 8, K of 8 (update).
//
// Parameters: ConvGemmArgs below: the GEMM's GemmArgs (fprop: M = N*P*Q,
// N = K, K = R*S*cchunks*64, ldc = K, bias_n = 1; update: M = K, N =
// R*S*Cp, K = N*P*Q, ldc = R*S*Cp; batch = kbatch = 1) followed by the
// geometry (ConvGeom in conv_loads.cuh: P, Q, R, S, cchunks = ceil(C/64), C,
// strides, paddings, dilations, and the FastDiv multiply-shifts of P*Q, Q,
// S, cchunks and Cp).  Channels past C and positions past
// N*P*Q read as zeros.
//
// Tensor maps.  im2col (both passes): cuTensorMapEncodeIm2col, rank 4,
// dims {C, W, H, N}, byte strides {C, W*C, H*W*C} * esz, pixel box lower
// corner {-pad_w, -pad_h}, upper corner {pad_w - dil_w*(S-1),
// pad_h - dil_h*(R-1)}, channelsPerPixel 64, pixelsPerColumn BM (fprop)
// or 64 (update), element strides {1, str_w, str_h, 1}, swizzle 128B: a
// tile of pixel rows x 64 channels, which is gemm_sm90's "k"-major A tile
// (fprop) or one 64-wide "n"-major B panel (update).  fprop's B: tiled,
// rank 3, dims {C, K, R*S}, byte strides {R*S*C, C} * esz, box {64, BN, 1},
// swizzle 128B, loaded at (c0, n0, tap); bprop's B: the same map of the
// original F with box {64, 64, 1}, loaded at (n0 + 64 j, c0, R*S-1-tap)
// for each of ceil(BN / 64) panels.
// update's A: tiled, dims {K,
// N*P*Q, 1}, byte strides {K * esz, -}, box {64, 64, 1}, swizzle 128B.
// The output, where the copy engine stores it (flags & EPI_TMA_C; not the
// transposed fprop): gemm_sm90.cu's C map, dims {N, M, 1} of the GEMM.
//
// Launch shape: as gemm_sm90.cu (persistent grid, min(tiles * splits, SMs)
// blocks of 128 * (min(BM / 64, 2) + 1) threads, the same dynamic shared memory;
// the split-K reduce of gemm_splitk.cu after it when splits > 1).  The
// update may instead run the stream-K schedule (stream_k.cuh): flags |=
// SCHED_STREAM_K, splits = 1, min(SMs, tiles * K-tiles) blocks, `partial`
// a workspace of a BM x BN fp32 slot per block and then (BM / 64) flags per
// block, zeroed before each launch.  The update's multicast pairs
// (..._update_mc2): clusters of 2 blocks along x, the grid twice the
// clusters the GPU holds at once (at most), the two blocks of a cluster on
// vertically adjacent tiles (rows 256 t .. 256 t + 255), each gathering
// half of B's panels into both (gemm_sm90.cuh, MC).
//
// Kernels: ga_conv_sm90_<BM>x<BN>x64_<f16|bf16>_<fprop|bprop|update> for the
// tiles 128x256, 128x192 (layers of 192 or 384 channels: no quarter-empty
// tile), 128x128, 128x64, 64x128 and 64x64, and fprop and bprop on 256x128,
// 256x96 and 256x64 (two consumer warpgroups of 128 rows: layers of few
// output channels, whose 128-row tiles wait on operand bytes from L2; 96
// wide for 96 filters or channels, which leave a 128-wide tile a quarter
// empty); the update on 128x256 tiles in multicast pairs; and fprop and
// bprop on 128x128 tiles in ping-pong (..._pp: each consumer warpgroup a
// whole tile, the two in turn; data-parallel schedules only); and fprop
// transposed on 128x256 tiles (..._fprop_t).
#include "gemm_sm90.cuh"

struct ConvGemmArgs {
    GemmArgs p;
    ConvGeom g;
};
static_assert(sizeof(ConvGemmArgs) == 768, "gpuarray/conv/implicit_plan.py's ARGS_BYTES");

// MC: blocks per multicast cluster (gemm_sm90.cuh; 1: none); PP: ping-pong
#define GA_CONV_KERNEL(BM, BN, IN, TY, PASS, LA, LB, MODE, MC, PP)                           \
    extern "C" __global__ void __launch_bounds__(GaSm90Cfg<BM, BN, IN, PP>::THREADS, 1)      \
        ga_conv_sm90_##BM##x##BN##x64_##TY##_##PASS(const __grid_constant__ ConvGemmArgs a) { \
        ga_gemm_sm90<BM, BN, IN, LA, LB, MODE, false, MC, PP>(a.p, &a.g);                    \
    }
#define GA_CONV_DATA_PASSES(BM, BN, IN, TY)                                                \
    GA_CONV_KERNEL(BM, BN, IN, TY, fprop, GA_MAJOR_K, GA_MAJOR_K, GA_CONV_FPROP, 1, false)  \
    GA_CONV_KERNEL(BM, BN, IN, TY, bprop, GA_MAJOR_K, GA_MAJOR_MN, GA_CONV_BPROP, 1, false)
#define GA_CONV_PASSES(BM, BN, IN, TY)    \
    GA_CONV_DATA_PASSES(BM, BN, IN, TY)   \
    GA_CONV_KERNEL(BM, BN, IN, TY, update, GA_MAJOR_MN, GA_MAJOR_MN, GA_CONV_UPDATE, 1, false)
#define GA_CONV_PAIRED_UPDATE(BM, BN, IN, TY) \
    GA_CONV_KERNEL(BM, BN, IN, TY, update_mc2, GA_MAJOR_MN, GA_MAJOR_MN, GA_CONV_UPDATE, 2, false)
#define GA_CONV_TRANSPOSED(BM, BN, IN, TY) \
    GA_CONV_KERNEL(BM, BN, IN, TY, fprop_t, GA_MAJOR_K, GA_MAJOR_K, GA_CONV_FPROP_T, 1, false)
#define GA_CONV_PINGPONG(BM, BN, IN, TY)                                                      \
    GA_CONV_KERNEL(BM, BN, IN, TY, fprop_pp, GA_MAJOR_K, GA_MAJOR_K, GA_CONV_FPROP, 1, true)   \
    GA_CONV_KERNEL(BM, BN, IN, TY, bprop_pp, GA_MAJOR_K, GA_MAJOR_MN, GA_CONV_BPROP, 1, true)
#define GA_CONV_SHAPES(IN, TY)            \
    GA_CONV_DATA_PASSES(256, 128, IN, TY) \
    GA_CONV_DATA_PASSES(256, 96, IN, TY)  \
    GA_CONV_DATA_PASSES(256, 64, IN, TY)  \
    GA_CONV_PASSES(128, 256, IN, TY)      \
    GA_CONV_PAIRED_UPDATE(128, 256, IN, TY) \
    GA_CONV_PASSES(128, 192, IN, TY)      \
    GA_CONV_PASSES(128, 128, IN, TY)      \
    GA_CONV_PINGPONG(128, 128, IN, TY)    \
    GA_CONV_TRANSPOSED(128, 256, IN, TY)  \
    GA_CONV_PASSES(128, 64, IN, TY)       \
    GA_CONV_PASSES(64, 128, IN, TY)       \
    GA_CONV_PASSES(64, 64, IN, TY)

GA_CONV_SHAPES(GA_IN_F16, f16)
GA_CONV_SHAPES(GA_IN_BF16, bf16)

// gemm_fp8_sm90.cu: Hopper FP8 GEMM kernels (TMA + wgmma + mbarrier pipeline).
//
// What it computes: C = scale_c * (relu(alpha * scale_a * scale_b * A @ B +
// bias) + beta * C) per gemm_common.cuh, with amax = max |result before
// scale_c|, for FP8 operands (float8_e4m3fn "e4m3", float8_e5m2 "e5m2", any
// pair) on wgmma m64nNk32; C fp32, fp16, bf16 or FP8 (saturated to its
// largest finite value, as cuBLASLt's).
//
// Accumulation: the tensor cores sum FP8 products into their accumulator
// with fewer bits than fp32 (about 14 of fp32's 24, measured on Hopper
// by DeepSeek-V3's authors).  The default kernels promote: each 128-wide
// K-tile is summed by the tensor cores into a second accumulator set and
// then added to the fp32 accumulators by the CUDA cores (cuBLASLt's
// default).  The "fast" kernels (<in>fast) accumulate in the tensor cores
// throughout (cuBLASLt's use_fast_accum).
//
// Layouts: wgmma reads 8-bit operands from shared memory K-major only, so
// A is "k" (a_k == 1, row-major M x K) and B is "k" (b_k == 1: the
// transpose of a row-major N x K matrix, torch._scaled_mm's layout);
// Python copies other layouts first.  Suffix _kk.
//
// Parameters (cuDNN names): M, N, K, batch, kbatch, splits as GemmArgs;
// the scales are device pointers read once per thread (null: 1), amax is
// zeroed by the host before the launch and combined with atomicMax.
//
// Design, launch shape and tensor maps: gemm_sm90.cu's (this file
// instantiates the same kernel body, gemm_sm90.cuh).  A K-tile is one
// 128-byte swizzle row, here 128 elements (BK = 128); a wgmma K step is 32
// elements, +32 bytes on the descriptors' start address, as for 16-bit
// types.  Tensor maps use data type UINT8 (the copy engine moves bytes).
//
// Kernels: ga_gemm_fp8_sm90_<BM>x<BN>x128_<in>_kk, <in> one of e4m3, e5m2
// (both operands that type), e4m3e5m2, e5m2e4m3 (A's type, then B's),
// promoted; the same names with "fast" after <in> accumulate in the tensor
// cores.  The promoted 128x256 sums each K-tile's two 128-column halves in
// turn (a second full 64 x 256 set per consumer does not fit in the
// registers); on the H200 at 8192^3 it ran 1214 TFLOP/s, 128x128 1127.
//   BM x BN   THREADS  SMEM (B)  stages
//   128x256   384      218192    4
//   128x128   384      218224    6
//   128x64    384      218256    8
//   64x128    256      208016    8
//   64x32     256      208144    16
//
// Alignment (the copy engine's rules): a and b 16-byte aligned; the row
// strides (a_m, b_n: K for packed operands, so K % 16 == 0) and batch
// strides multiples of 16 bytes.  C: none (8-byte stores of 8 FP8 values
// when C and its row stride allow, else one byte at a time).
#include "gemm_sm90.cuh"

#define GA_FP8_KERNEL(BM, BN, IN, TY, PROMOTE)                                                       \
    extern "C" __global__ void __launch_bounds__(GaSm90Cfg<BM, BN, IN>::THREADS, 1)                 \
        ga_gemm_fp8_sm90_##BM##x##BN##x128_##TY##_kk(const __grid_constant__ GemmArgs p) {            \
        ga_gemm_sm90<BM, BN, IN, GA_MAJOR_K, GA_MAJOR_K, GA_CONV_NONE, PROMOTE>(p);                  \
    }
#define GA_FP8_SHAPES(IN, TY)                   \
    GA_FP8_KERNEL(128, 256, IN, TY, true)       \
    GA_FP8_KERNEL(128, 128, IN, TY, true)       \
    GA_FP8_KERNEL(128, 64, IN, TY, true)        \
    GA_FP8_KERNEL(64, 128, IN, TY, true)        \
    GA_FP8_KERNEL(64, 32, IN, TY, true)         \
    GA_FP8_KERNEL(128, 256, IN, TY##fast, false) \
    GA_FP8_KERNEL(128, 128, IN, TY##fast, false) \
    GA_FP8_KERNEL(128, 64, IN, TY##fast, false)  \
    GA_FP8_KERNEL(64, 128, IN, TY##fast, false)  \
    GA_FP8_KERNEL(64, 32, IN, TY##fast, false)

GA_FP8_SHAPES(GA_IN_E4M3, e4m3)
GA_FP8_SHAPES(GA_IN_E5M2, e5m2)
GA_FP8_SHAPES(GA_IN_E4M3_E5M2, e4m3e5m2)
GA_FP8_SHAPES(GA_IN_E5M2_E4M3, e5m2e4m3)

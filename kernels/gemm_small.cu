// gemm_small.cu: exact-fp32 products too small for GEMM tiles, a few lanes an output.
//
// What it computes: C = relu(alpha * sum A @ B + bias) + beta * C (the
// epilogue of gemm_common.cuh, statistics and every C type included) for
// float32 A and B, with fp32 fused multiply-adds and no tensor cores.
// The tiled FFMA kernels (gemm_ffma.cu) stage K-tiles through shared
// memory: a product of a few thousand outputs gets a few dozen tiles, and
// each lone block's K-tiles are latency-bound (1000 x 100 x 10 took 10 us
// on 64 x 64 tiles on an H100).  Here a group of L lanes computes one
// output: lane l sums the terms k = l, l + L, l + 2L, ... of each data
// batch in turn (one, or every batch of an accumulating product), straight
// from global memory (the operands of such products sit in L1/L2), then
// the group adds its lanes' sums with shuffles in a fixed tree and its
// first lane finishes the output.  Deterministic; the order of the sum
// differs from the tiled kernels' ascending k (each is fp32 throughout).
//
// Layouts: any strides (GemmArgs' a_m, a_k, b_k, b_n, batch_a, batch_b,
// element strides): one kernel for every layout; splits must be 1.
//
// Parameters (cuBLAS names): M, N, K; batch output batches; kbatch data
// batches summed into each output.
//
// Launch shape: grid = (ceil(batch * M * N * L / 256), 1, 1), block =
// (256, 1, 1), no shared memory.  Outputs are numbered row-major over
// (batch, M, N): neighbouring groups write neighbouring elements of C.
//
// Kernels: ga_gemm_small_l{1,8,32}_f32 (L = 1 for sums of at most 16
// terms, 8 up to 256, 32 above: gpuarray/gemm/plan.py picks).
#include "gemm_common.cuh"

template <int L>
__device__ __forceinline__ void small_product(const GemmArgs &p) {
    constexpr int THREADS = 256;
    const long long outputs = (long long)p.batch * p.M * p.N;
    const long long out = ((long long)blockIdx.x * THREADS + threadIdx.x) / L;
    const int lane = threadIdx.x % L;
    const bool valid = out < outputs;
    const float *a = (const float *)p.a, *b = (const float *)p.b;
    float acc = 0.f;
    int ob = 0, m = 0, n = 0;
    if (valid) {
        n = (int)(out % p.N);
        long long rest = out / p.N;
        m = (int)(rest % p.M);
        ob = (int)(rest / p.M);
        for (int kb = 0; kb < p.kbatch; ++kb) {
            long long data = (long long)ob * p.kbatch + kb;
            const float *row = a + data * p.batch_a + m * p.a_m;
            const float *col = b + data * p.batch_b + n * p.b_n;
#pragma unroll 4
            for (int k = lane; k < p.K; k += L)
                acc = __fmaf_rn(row[k * p.a_k], col[k * p.b_k], acc);
        }
    }
    // the group's lanes are consecutive lanes of one warp (L divides 32)
#pragma unroll
    for (int offset = L / 2; offset > 0; offset /= 2)
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, offset));
    GemmEpi st = gemm_epi_init(p);
    if (valid && lane == 0) gemm_finish(p, ob, m, n, acc, st);
    gemm_epi_flush(p, st);
}

extern "C" {
__global__ void __launch_bounds__(256) ga_gemm_small_l1_f32(const __grid_constant__ GemmArgs p) {
    small_product<1>(p);
}
__global__ void __launch_bounds__(256) ga_gemm_small_l8_f32(const __grid_constant__ GemmArgs p) {
    small_product<8>(p);
}
__global__ void __launch_bounds__(256) ga_gemm_small_l32_f32(const __grid_constant__ GemmArgs p) {
    small_product<32>(p);
}
}

// bias_grad.cu: a layer's bias gradient, with its ReLU's gradient fused in.
//
// What it computes: the errors E of a conv or dense layer's output, M rows
// of K channels (every position of every image is a row: N*M*P*Q of them
// for a convolution), give the bias gradient
//     grad_b[k] = alpha * sum over rows m of E'[m, k] + beta * grad_b[k]
// with E' = E, or, where the layer ends in a ReLU (the _relu kernels),
// E' = E * (O > 0) from the layer's output O, written to G (which may be E
// itself: the mask in place) -- the gradient the layer's data and filter
// gradients then read.  One pass over E (and O) does both: the unfused
// version masked E in one kernel and summed it in another, reading it again,
// and its column sum over few, very long columns ran at a fifth of HBM's
// bandwidth.
//
// Layouts: E, O and G are row-major matrices of K contiguous channels with
// row strides ldE, ldO, ldG elements (a channel slice of a wider tensor --
// GoogLeNet's concatenations -- has ld > K); rows 16-byte aligned, K a
// multiple of V = 16 / sizeof(T) (8 for fp16/bf16, 4 for fp32): the host
// checks, else the op-tree path runs.  grad_b is K contiguous elements of
// f16, bf16 or f32.  Sums are fp32; the masked E' is exact (E times 1 or 0,
// as the op-tree E * (O > 0) computes it, NaN and -0 included).
//
// One launch, deterministic: ga_bias_grad_{f16,bf16,f32}[_relu] (by E's
// dtype), BiasGradArgs.  Grid (X, Y): the K channels split into Y slices of
// `cols` 16-byte vectors each; block (cols * rps) threads, rps rows of a
// slice a step.  Thread (ry, cv) walks rows blockIdx.x * rps + ry, then
// every X * rps further, UNROLL rows' loads in flight before their sums;
// the block adds its rps rows of sums in shared memory and writes one
// partial row: partial[x][Kp] floats, Kp = Y * cols * V (columns past K
// hold zeros).  The last block of a slice to finish (counters[y], which
// reads zero at the launch -- gpuarray.cuda.semaphores -- and which that
// block leaves zero again) adds the slice's X partial rows, float4 column q
// of rows g, g + G, ... by thread (g, q), then the G sums in order, and
// stores grad_b (of f16, bf16 or f32: gb_type, GEMM_F32 / _F16 / _BF16's
// numbering; beta = 0 does not read it).  The order of every sum is fixed
// by the launch shape, not by which block finishes last: the result repeats
// bitwise.  (A finishing kernel of its own cost a launch and its gap: on
// the H200 about 2.5 + 2.5 us a layer, 58 layers in GoogLeNet's step.)
#include "convert.cuh"

// threads of a partial block at most, and blocks a multiprocessor holds (64 registers)
#define BG_THREADS 512
#define BG_BLOCKS 2
// rows of loads a thread keeps in flight
#define BG_UNROLL 4

struct BiasGradArgs {
    const void* E;
    const void* O;
    void* G;
    float* partial;
    void* grad_b;
    unsigned* counters;         // one per slice: zero at the launch, left zero
    double alpha, beta;         // (doubles: the host patches 8-byte holes)
    long long M;                // rows
    long long ldE, ldO, ldG;    // row strides, elements
    int K;                      // channels
    int cols;                   // 16-byte vectors of a slice
    int Kp;                     // floats of a partial row
    int gb_type;                // grad_b's dtype: 0 f32, 1 f16, 2 bf16
};

// the host packs it as gpuarray/conv/bias.py's ARGS
static_assert(sizeof(BiasGradArgs) == 112, "BiasGradArgs: 112 bytes, as bias.ARGS");

__device__ __forceinline__ float bg_load(const void* p, int type, int i) {
    if (type == 1) return to_f32(static_cast<const __half*>(p)[i]);
    if (type == 2) return to_f32(static_cast<const __nv_bfloat16*>(p)[i]);
    return static_cast<const float*>(p)[i];
}

__device__ __forceinline__ void bg_store(void* p, int type, int i, float v) {
    if (type == 1) static_cast<__half*>(p)[i] = from_f32<__half>(v);
    else if (type == 2) static_cast<__nv_bfloat16*>(p)[i] = from_f32<__nv_bfloat16>(v);
    else static_cast<float*>(p)[i] = v;
}

// The last block of slice blockIdx.y: its `width` columns of the X partial
// rows summed into grad_b (`red`: the block's shared float4s, free again).
// Not inlined: the partial loop's registers stay as they were (the fp32
// ReLU kernel spilled on sm_80 with it inlined).
__device__ __noinline__ void bias_finish(const float* partial, void* grad_b, int gb_type, double alpha_d,
                                         double beta_d, int K, int Kp, int width, float4* red) {
    const int width4 = width / 4;
    const int groups = blockDim.x / width4;
    const int q = threadIdx.x % width4, g = threadIdx.x / width4;
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    if (g < groups) {
        // written by other blocks: read from L2 (__ldcg), not a stale L1 line
        const float4* column = reinterpret_cast<const float4*>(partial + blockIdx.y * width) + q;
        const int pitch = Kp / 4;
#pragma unroll 4
        for (int r = g; r < (int)gridDim.x; r += groups) {
            const float4 v = __ldcg(column + (long long)r * pitch);
            s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
        }
        red[threadIdx.x] = s;
    }
    __syncthreads();
    if (g != 0) return;
    for (int y = 1; y < groups; ++y) {
        const float4 v = red[y * width4 + q];
        s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    const float total[4] = {s.x, s.y, s.z, s.w};
    const float alpha = (float)alpha_d, beta = (float)beta_d;
    const int k0 = blockIdx.y * width + 4 * q;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (k0 + j >= K) break;
        float v = alpha * total[j];
        if (beta != 0.f) v += beta * bg_load(grad_b, gb_type, k0 + j);
        bg_store(grad_b, gb_type, k0 + j, v);
    }
}

template <typename T, bool RELU>
__device__ __forceinline__ void bias_grad(const BiasGradArgs& a) {
    constexpr int V = 16 / sizeof(T);
    __shared__ float4 red[BG_THREADS * V / 4];
    const int cv = threadIdx.x % a.cols, ry = threadIdx.x / a.cols;
    const int rps = blockDim.x / a.cols;
    const int k0 = (blockIdx.y * a.cols + cv) * V;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = 0.f;
    if (k0 < a.K) {
        const long long step = (long long)gridDim.x * rps;
        const T* E = static_cast<const T*>(a.E) + k0;
        const T* O = static_cast<const T*>(a.O) + k0;
        T* G = static_cast<T*>(a.G) + k0;
        for (long long m = (long long)blockIdx.x * rps + ry; m < a.M; m += BG_UNROLL * step) {
            uint4 e[BG_UNROLL], o[BG_UNROLL];
#pragma unroll
            for (int u = 0; u < BG_UNROLL; ++u) {
                const long long r = m + u * step;
                if (r < a.M) {
                    e[u] = *reinterpret_cast<const uint4*>(E + r * a.ldE);
                    if constexpr (RELU) o[u] = *reinterpret_cast<const uint4*>(O + r * a.ldO);
                }
            }
#pragma unroll
            for (int u = 0; u < BG_UNROLL; ++u) {
                const long long r = m + u * step;
                if (r >= a.M) continue;
                const T* ev = reinterpret_cast<const T*>(&e[u]);
                if constexpr (RELU) {
                    const T* ov = reinterpret_cast<const T*>(&o[u]);
                    uint4 g;
                    T* gv = reinterpret_cast<T*>(&g);
#pragma unroll
                    for (int j = 0; j < V; ++j) {
                        // E * (O > 0), exact in T: E times 1 or 0
                        const float v = to_f32(ev[j]) * (to_f32(ov[j]) > 0.f ? 1.f : 0.f);
                        gv[j] = from_f32<T>(v);
                        acc[j] += v;
                    }
                    *reinterpret_cast<uint4*>(G + r * a.ldG) = g;
                } else {
#pragma unroll
                    for (int j = 0; j < V; ++j) acc[j] += to_f32(ev[j]);
                }
            }
        }
    }
#pragma unroll
    for (int p = 0; p < V / 4; ++p)
        red[threadIdx.x * (V / 4) + p] = make_float4(acc[4 * p], acc[4 * p + 1], acc[4 * p + 2],
                                                     acc[4 * p + 3]);
    __syncthreads();
    // thread (ry, cv) stored its sums at floats (ry * cols + cv) * V: a slice
    // column c of step row r sits at r * cols * V + c
    const int width = a.cols * V;
    const float* sums = reinterpret_cast<const float*>(red);
    float* out = a.partial + (long long)blockIdx.x * a.Kp + blockIdx.y * width;
    for (int c = threadIdx.x; c < width; c += blockDim.x) {
        float s = 0.f;
        for (int r = 0; r < rps; ++r) s += sums[r * width + c];
        out[c] = s;
    }
    // every thread's partial stores ordered before the block counts itself done
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(a.counters + blockIdx.y, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    bias_finish(a.partial, a.grad_b, a.gb_type, a.alpha, a.beta, a.K, a.Kp, width, red);
    if (threadIdx.x == 0) a.counters[blockIdx.y] = 0;
}

#define BIAS_GRAD(NAME, T, RELU)                                                      \
    extern "C" __global__ void __launch_bounds__(BG_THREADS, BG_BLOCKS)              \
        NAME(const BiasGradArgs a) { bias_grad<T, RELU>(a); }

BIAS_GRAD(ga_bias_grad_f16, __half, false)
BIAS_GRAD(ga_bias_grad_f16_relu, __half, true)
BIAS_GRAD(ga_bias_grad_bf16, __nv_bfloat16, false)
BIAS_GRAD(ga_bias_grad_bf16_relu, __nv_bfloat16, true)
BIAS_GRAD(ga_bias_grad_f32, float, false)
BIAS_GRAD(ga_bias_grad_f32_relu, float, true)

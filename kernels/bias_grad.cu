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
// Two kernels, no atomics, deterministic:
//   ga_bias_grad_{f16,bf16,f32}[_relu] -- BiasGradArgs.  Grid (X, Y): the K
//     channels split into Y slices of `cols` 16-byte vectors each; block
//     (cols * rps) threads, rps rows of a slice a step.  Thread (ry, cv)
//     walks rows blockIdx.x * rps + ry, then every X * rps further, UNROLL
//     rows' loads in flight before their sums; the block adds its rps rows
//     of sums in shared memory and writes one partial row: partial[x][Kp]
//     floats, Kp = Y * cols * V (columns past K hold zeros).
//   ga_bias_finish_{f16,bf16,f32} (by grad_b's dtype) -- BiasFinishArgs.
//     Grid (ceil(Kp / 4 / bx)), block (bx, by): thread (x, y) adds float4
//     column blockIdx.x * bx + x of partial rows y, y + by, ...; the block
//     adds its by sums in shared memory and stores grad_b.  beta = 0 does
//     not read grad_b.
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
    long long M;                // rows
    long long ldE, ldO, ldG;    // row strides, elements
    int K;                      // channels
    int cols;                   // 16-byte vectors of a slice
    int Kp;                     // floats of a partial row
};

struct BiasFinishArgs {
    const float* partial;
    void* grad_b;
    double alpha, beta;         // (doubles: the host patches 8-byte holes)
    int rows;                   // partial rows (the partial kernel's grid.x)
    int K, Kp;
};

// the host packs these as gpuarray/conv/bias.py's ARGS and FINISH_ARGS
static_assert(sizeof(BiasGradArgs) == 80, "BiasGradArgs: 80 bytes, as bias.ARGS");
static_assert(sizeof(BiasFinishArgs) == 48, "BiasFinishArgs: 48 bytes, as bias.FINISH_ARGS");

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
}

template <typename T>
__device__ __forceinline__ void bias_finish(const BiasFinishArgs& a) {
    __shared__ float4 red[BG_THREADS];
    const int q = blockIdx.x * blockDim.x + threadIdx.x;  // float4 column
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    if (4 * q < a.K) {
        const float4* column = reinterpret_cast<const float4*>(a.partial) + q;
        const int pitch = a.Kp / 4;
#pragma unroll 4
        for (int r = threadIdx.y; r < a.rows; r += blockDim.y) {
            const float4 v = column[(long long)r * pitch];
            s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
        }
    }
    red[threadIdx.y * blockDim.x + threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y != 0 || 4 * q >= a.K) return;
    for (int y = 1; y < blockDim.y; ++y) {
        const float4 v = red[y * blockDim.x + threadIdx.x];
        s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    T* grad_b = static_cast<T*>(a.grad_b) + 4 * q;
    const float total[4] = {s.x, s.y, s.z, s.w};
    const float alpha = (float)a.alpha, beta = (float)a.beta;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float v = alpha * total[j];
        if (beta != 0.f) v += beta * to_f32(grad_b[j]);
        grad_b[j] = from_f32<T>(v);
    }
}

#define BIAS_GRAD(NAME, T, RELU)                                                      \
    extern "C" __global__ void __launch_bounds__(BG_THREADS, BG_BLOCKS)              \
        NAME(const BiasGradArgs a) { bias_grad<T, RELU>(a); }
#define BIAS_FINISH(NAME, T) \
    extern "C" __global__ void __launch_bounds__(BG_THREADS) NAME(const BiasFinishArgs a) { bias_finish<T>(a); }

BIAS_GRAD(ga_bias_grad_f16, __half, false)
BIAS_GRAD(ga_bias_grad_f16_relu, __half, true)
BIAS_GRAD(ga_bias_grad_bf16, __nv_bfloat16, false)
BIAS_GRAD(ga_bias_grad_bf16_relu, __nv_bfloat16, true)
BIAS_GRAD(ga_bias_grad_f32, float, false)
BIAS_GRAD(ga_bias_grad_f32_relu, float, true)
BIAS_FINISH(ga_bias_finish_f16, __half)
BIAS_FINISH(ga_bias_finish_bf16, __nv_bfloat16)
BIAS_FINISH(ga_bias_finish_f32, float)

// pool.cuh: what the pooling kernels share (pool.cu, pool_window.cu).
//
// PoolArgs, the one parameter of every pooling kernel (its divisions are
// fastdiv.cuh's multiply-shifts); 16-byte vector loads and stores; the
// window arithmetic (elements inside the input, outputs whose windows hold
// an input position).  Layouts and conventions: see pool.cu.
#pragma once
#include "convert.cuh"
#include "fastdiv.cuh"

#define POOL_THREADS 256

struct PoolArgs {
    const void *I;       // input (fprop)
    void *O;             // output (fprop; may be null when only argmax is wanted)
    void *argmax;        // max pooling: written by fprop, read by bprop (may be null in fprop)
    const void *E;       // errors (bprop)
    void *grad_I;        // input gradient (bprop)
    long long N;
    int size[4];         // C D H W
    int out[4];          // K M P Q
    int window[4];       // J T R S
    int stride[4];
    int pad[4];
    int include_padding;
    // divisors that split a thread's index within an image into (channel group,
    // width, height, depth): fprop (K / V, Q, P), bprop (C / V, W, H)
    FastDiv div[3];
    FastDiv by_stride[4];  // the strides, per pooled axis
};

// V consecutive elements moved as one access (16 bytes when V * sizeof(T) == 16)
template <typename T, int V> struct alignas(sizeof(T) * V) Pack { T v[V]; };

template <typename T, int V>
__device__ __forceinline__ void load(const T *src, float (&x)[V]) {
    Pack<T, V> pack = *reinterpret_cast<const Pack<T, V> *>(src);
    #pragma unroll
    for (int i = 0; i < V; ++i) x[i] = to_f32(pack.v[i]);
}

template <typename T, int V>
__device__ __forceinline__ void store(T *dst, const float (&x)[V]) {
    Pack<T, V> pack;
    #pragma unroll
    for (int i = 0; i < V; ++i) pack.v[i] = from_f32<T>(x[i]);
    *reinterpret_cast<Pack<T, V> *>(dst) = pack;
}

// A thread's position within an image: its first channel and (x, y, z) along
// the width, height and depth of the outputs (fprop) or inputs (bprop).
// Threads walk V channels fastest, then the width, height and depth: thread
// g of image n owns elements (n * threads per image + g) * V onwards.
struct Position {
    int channel, x, y, z;
};

template <int V>
__device__ __forceinline__ Position position(const PoolArgs &p, int g) {
    Position at;
    int rest = divide(p.div[0], g);
    at.channel = (g - rest * p.div[0].d) * V;
    int next = divide(p.div[1], rest);
    at.x = rest - next * p.div[1].d;
    at.z = divide(p.div[2], next);
    at.y = next - at.z * p.div[2].d;
    return at;
}

// Elements along axis a of a window starting at `start` that lie inside the input.
__device__ __forceinline__ int inside_along(const PoolArgs &p, int a, int start) {
    return min(start + p.window[a], p.size[a]) - max(start, 0);
}

// First and last output along axis a whose window holds input position x
// (at most ceil(window / stride) of them).
__device__ __forceinline__ void outputs_holding(const PoolArgs &p, int a, int x, int &lo, int &hi) {
    int first = x + p.pad[a] - p.window[a] + 1;
    lo = first <= 0 ? 0 : divide(p.by_stride[a], first + p.stride[a] - 1);
    hi = min(divide(p.by_stride[a], x + p.pad[a]), p.out[a] - 1);
}

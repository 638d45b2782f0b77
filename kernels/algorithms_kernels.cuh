// algorithms_kernels.cuh: the device code of algorithms_host.cu -- the sort
// keys' encoding and decoding, the batched sort's composed keys, the NaN
// move after a float sort, gathers and scatters, the histogram's bins, the
// sorted search and iota -- as __global__ kernels and the __device__
// helpers they share.  What each computes, the layouts and the launch shape
// (256-thread blocks, grid-stride loops): algorithms_host.cu's header,
// whose typed host wrappers launch them.  Internal linkage (an anonymous
// namespace): this header is included by algorithms_host.cu only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

enum KeyKind { kUnsigned = 0, kSigned = 1, kFloat = 2, kBFloat = 3 };

// 16-byte elements (complex128) move as a pair of words
struct alignas(16) Bits128 {
  uint64_t lo, hi;
};

// the exponent-all-ones-and-nonzero-mantissa test of each float format,
// on the bits without the sign: NaN when they exceed the infinity's bits
template <typename U> __device__ U infinity_bits(int kind);
template <> __device__ uint16_t infinity_bits<uint16_t>(int kind) {
  return kind == kBFloat ? 0x7f80u : 0x7c00u;
}
template <> __device__ uint32_t infinity_bits<uint32_t>(int) { return 0x7f800000u; }
template <> __device__ uint64_t infinity_bits<uint64_t>(int) { return 0x7ff0000000000000ull; }
template <> __device__ uint8_t infinity_bits<uint8_t>(int) { return 0xffu; }

template <typename U>
__device__ U encode(U b, int kind, bool merge_zeros) {
  const U sign = U(U(1) << (sizeof(U) * 8 - 1));
  if (kind == kSigned) return U(b ^ sign);
  if (kind == kUnsigned) return b;
  const U magnitude = U(b & U(~sign));
  if (magnitude > infinity_bits<U>(kind)) return U(~U(0));
  if (merge_zeros && magnitude == 0) return sign;
  return (b & sign) ? U(~b) : U(b | sign);
}

template <typename U>
__device__ U decode(U k, int kind) {
  const U sign = U(U(1) << (sizeof(U) * 8 - 1));
  if (kind == kSigned) return U(k ^ sign);
  if (kind == kUnsigned) return k;
  return (k & sign) ? U(k & U(~sign)) : U(~k);
}

template <typename U>
__global__ void encode_kernel(const U* src, U* dst, int64_t n, int kind, bool merge_zeros,
                              bool descending) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    U k = encode(src[i], kind, merge_zeros);
    dst[i] = descending ? U(~k) : k;
  }
}

template <typename U>
__global__ void decode_kernel(const U* src, U* dst, int64_t n, int kind, bool descending) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    U k = src[i];
    dst[i] = decode(descending ? U(~k) : k, kind);
  }
}

template <typename U>
__global__ void compose_kernel(const U* src, uint64_t* dst, int64_t n, int64_t length, int kind,
                               bool merge_zeros, bool descending) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    U k = encode(src[i], kind, merge_zeros);
    if (descending) k = U(~k);
    dst[i] = (uint64_t(i / length) << (8 * sizeof(U))) | uint64_t(k);
  }
}

template <typename U>
__global__ void decompose_kernel(const uint64_t* src, U* dst, int64_t n, int kind,
                                 bool descending) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const U k = U(src[i]);
    dst[i] = decode(descending ? U(~k) : k, kind);
  }
}

// whether the bits hold a NaN with the sign bit set (what CUB sorts first)
template <typename U>
__device__ __forceinline__ bool negative_nan(U b, int kind) {
  const U sign = U(U(1) << (sizeof(U) * 8 - 1));
  return (b & sign) && U(b & U(~sign)) > infinity_bits<U>(kind);
}

// the length of the leading run of negative NaNs of sorted values
template <typename U>
__device__ int64_t leading_nans(const U* v, int64_t n, int kind) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (negative_nan(v[mid], kind)) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// scratch = values rotated left by the leading run, and *moved = 1 (nothing when
// there is none); *moved is zeroed before the launch
template <typename U>
__global__ void rotate_nans_kernel(const U* values, U* scratch, int64_t n, int kind,
                                   int* moved) {
  if (!negative_nan(values[0], kind)) return;
  if (blockIdx.x == 0 && threadIdx.x == 0) *moved = 1;
  const int64_t k = leading_nans(values, n, kind);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    scratch[i] = values[i + k < n ? i + k : i + k - n];
}

// values = scratch where the first kernel rotated (the flag, not values[0], says
// so: other threads overwrite values[0] meanwhile)
template <typename U>
__global__ void restore_nans_kernel(U* values, const U* scratch, int64_t n, const int* moved) {
  if (!*moved) return;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    values[i] = scratch[i];
}

struct GatherShape {
  int64_t outer, J, A, inner;      // output (outer, J, inner); source (outer, A, inner)
  int64_t is_o, is_j, is_i;        // index strides, in elements
};

template <typename T>
__global__ void gather_kernel(const T* src, const int64_t* idx, T* dst, GatherShape g,
                              unsigned long long* bad) {
  const int64_t n = g.outer * g.J * g.inner;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < n;
       p += int64_t(gridDim.x) * blockDim.x) {
    // 64-bit divisions cost dozens of instructions each: a 1-D take (inner
    // and outer 1, the common case) makes none, a take along the last axis one
    int64_t i = 0, j = p, o = 0;
    if (g.inner != 1) {
      i = p % g.inner;
      j = p / g.inner;
    }
    if (g.outer != 1) {
      o = j / g.J;
      j -= o * g.J;
    }
    int64_t k = idx[o * g.is_o + j * g.is_j + i * g.is_i];
    if (k < 0) k += g.A;
    if (k < 0 || k >= g.A) {
      dst[p] = T{};
      if (bad) atomicMin(bad, (unsigned long long)p);
    } else {
      dst[p] = src[(o * g.A + k) * g.inner + i];
    }
  }
}

template <typename T>
__global__ void scatter_kernel(const T* src, const int64_t* idx, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[idx[i]] = src[i];
}

__global__ void count_bins_kernel(const int64_t* idx, int64_t n, unsigned long long* counts) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(counts + idx[i], 1ull);
}

constexpr int kSharedBins = 8192;

template <typename T> __device__ __forceinline__ double widen(T v) { return double(v); }
template <> __device__ __forceinline__ double widen<__half>(__half v) {
  return double(__half2float(v));
}
template <> __device__ __forceinline__ double widen<__nv_bfloat16>(__nv_bfloat16 v) {
  return double(__bfloat162float(v));
}

// the bin of v among edges[0..nbins], or -1 (outside, or NaN)
__device__ __forceinline__ int bin_of(double v, const double* edges, int nbins) {
  if (!(v >= edges[0] && v <= edges[nbins])) return -1;
  if (v == edges[nbins]) return nbins - 1;
  int lo = 0, hi = nbins + 1;  // the first edge above v, minus one
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (edges[mid] <= v) lo = mid + 1; else hi = mid;
  }
  return lo - 1;
}

template <typename T>
__global__ void histogram_kernel(const T* values, int64_t n, const double* edges, int nbins,
                                 unsigned long long* counts) {
  extern __shared__ unsigned int local[];  // nbins counters when shared
  const bool shared = nbins <= kSharedBins;
  if (shared)
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int b = bin_of(widen(values[i]), edges, nbins);
    if (b < 0) continue;
    if (shared) atomicAdd(local + b, 1u); else atomicAdd(counts + b, 1ull);
  }
  __syncthreads();
  if (shared)
    for (int b = threadIdx.x; b < nbins; b += blockDim.x)
      if (local[b]) atomicAdd(counts + b, (unsigned long long)local[b]);
}

__global__ void iota_kernel(int64_t* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = i;
}

template <typename U>
__global__ void search_kernel(const U* sorted, int64_t n, const U* needles, int64_t m,
                              int64_t* out, int side) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m;
       i += int64_t(gridDim.x) * blockDim.x) {
    const U v = needles[i];
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      const U s = sorted[mid];
      if (side ? (s <= v) : (s < v)) lo = mid + 1; else hi = mid;
    }
    out[i] = lo;
  }
}

}  // namespace

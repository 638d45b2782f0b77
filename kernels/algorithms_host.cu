// algorithms_host.cu: the data-dependent device algorithms -- radix sort,
// stream compaction, prefix sums -- and the small kernels around them (sort
// key encoding, gathers, binary search), as a shared library of host
// entry points that gpuarray/cuda/algorithms.py calls through ctypes.  The
// small kernels' device code is in algorithms_kernels.cuh; this file holds
// the typed host wrappers that launch them and CUB, and the C entries.
//
// What it computes:
//   * ga_encode_keys / ga_decode_keys: element bits <-> unsigned radix keys
//     whose unsigned order is numpy's sort order.  Unsigned integers and
//     bool keep their bits; signed integers flip the sign bit; IEEE floats
//     (fp16, bf16, fp32, fp64) flip the sign bit of non-negative values and
//     every bit of negative ones.  Every NaN encodes as the all-ones key, so
//     NaNs sort last (numpy's order) and compare equal to each other.  With
//     `merge_zeros`, -0.0 encodes as +0.0 (argsort, searchsorted and unique
//     treat them as equal, so a stable sort must keep their order); without,
//     -0.0 sorts just before +0.0 and decodes back to itself.  `descending`
//     complements the key (a stable ascending sort of complemented keys is
//     a stable descending sort).
//   * ga_compose_keys / ga_decompose_keys: the 64-bit key of a batched sort,
//     the row number (i / length) above the element's key of 1, 2 or 4
//     bytes, so that one radix sort orders rows and, within each, elements;
//     and back to the element's value from the low bits.
//   * ga_sort_keys / ga_sort_pairs: CUB's LSD radix sort (onesweep) of keys
//     of 1, 2, 4 or 8 bytes over bits [begin_bit, end_bit), the pairs form
//     carrying int64 values (the original positions for argsort).  Stable.
//   * ga_sort_floats: CUB's radix sort of fp16, bf16, fp32 or fp64 values as
//     themselves (CUB orders floats, -0.0 equal to +0.0, stable): no key
//     passes.  Its one difference from numpy's order -- NaNs with the sign
//     bit set come first -- ga_move_nans undoes on the device: it moves that
//     leading run to the end (through `scratch`, n elements, and a flag
//     `moved`), and costs a 4-byte memset and two near-empty launches when
//     there is none.
//   * ga_select_flagged: the positions i (int64, ascending) where flags[i]
//     is nonzero, and their count, written to the device (CUB DeviceSelect).
//   * ga_select_values: the elements (1, 2, 4 or 8 bytes) where flags[i] is
//     nonzero, in order, and their count (CUB DeviceSelect).
//   * ga_scan: running sums or products (op 0: +, 1: *) of uint64 (every
//     integer type: the same bits modulo 2**64), fp32 or fp64 (type 0..2)
//     along rows of `length` elements: CUB's single-pass (decoupled
//     look-back) scan, by key (the row) when there is more than one row.
//   * ga_iota: dst[i] = i (int64), the positions argsort carries.
//   * ga_count_bins: counts[idx[i]] += 1 for i < n (int64 counts, zeroed by
//     the caller; indices in range): 64-bit integer atomics, so the result
//     is exact and independent of the threads' order.
//   * ga_sum_runs_f64: the sums of float64 values over runs of equal int64
//     keys (CUB DeviceReduce::ReduceByKey: deterministic), the runs' keys
//     and their count.
//   * ga_histogram: counts[b] += how many values lie in [edges[b], edges[b+1])
//     -- the last bin closed, NaN and values outside the edges nowhere
//     (numpy's histogram) -- for values of any dtype (type code below),
//     compared with the edges as float64 (every widening is exact, so the
//     comparisons are those of numpy's bin dtype).  Each block counts in
//     shared memory (4 bytes a bin, up to kSharedBins bins; beyond, in the
//     global counts directly), then adds to the int64 counts.
//   * ga_gather: dst[(o*J + j)*inner + i] = src[(o*A + k)*inner + i] with
//     k = idx[o*is_o + j*is_j + i*is_i], negative k counted from the end of
//     the axis (numpy's take and take_along_axis, elements of 1, 2, 4, 8 or
//     16 bytes).  An index outside [-A, A) writes zero to dst and records the
//     smallest flat output position that held one in *bad (an unsigned
//     64-bit minimum; the caller sets it to all-ones before the launch), or
//     nowhere when bad is NULL (indices known to be in range).
//   * ga_scatter: dst[idx[i]] = src[i] for i < n (indices in range, distinct).
//   * ga_search: for each needle key, the first (side 0, numpy's "left") or
//     one past the last (side 1, "right") position of a sorted key array
//     where it would be inserted; keys as encoded above.
//
// Layouts: every array is contiguous; keys and elements are handled as raw
// bits of their width, so one instantiation serves every dtype of a size.
//
// Parameters: element counts are int64; `stream` is a CUstream (0: the
// legacy default stream of the current context -- the caller's context is
// current, so the runtime adopts it).  The CUB entries take (temp,
// temp_bytes): with temp == NULL they only store the scratch size needed.
// Every entry returns a cudaError_t (0: success); ga_error_string names it.
//
// Launch shape: the small kernels run 256-thread blocks, a grid-stride loop
// over at most 32 blocks per SM of the device's SM count (fetched once).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cuda/std/functional>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "algorithms_kernels.cuh"

namespace {

int grid_for(int64_t n) {
  static int sms = 0;
  if (sms == 0) {
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (sms <= 0) sms = 1;
  }
  int64_t blocks = (n + kThreads - 1) / kThreads;
  int64_t most = int64_t(sms) * 32;
  if (blocks > most) blocks = most;
  return blocks < 1 ? 1 : int(blocks);
}

template <typename U>
cudaError_t encode_as(const void* src, void* dst, int64_t n, int kind, int merge_zeros,
                      int descending, cudaStream_t s) {
  encode_kernel<U><<<grid_for(n), kThreads, 0, s>>>(
      static_cast<const U*>(src), static_cast<U*>(dst), n, kind, merge_zeros != 0,
      descending != 0);
  return cudaGetLastError();
}

template <typename U>
cudaError_t decode_as(const void* src, void* dst, int64_t n, int kind, int descending,
                      cudaStream_t s) {
  decode_kernel<U><<<grid_for(n), kThreads, 0, s>>>(
      static_cast<const U*>(src), static_cast<U*>(dst), n, kind, descending != 0);
  return cudaGetLastError();
}

template <typename U>
cudaError_t compose_as(const void* src, void* dst, int64_t n, int64_t length, int kind,
                       int merge_zeros, int descending, cudaStream_t s) {
  if constexpr (sizeof(U) >= 8) {
    return cudaErrorInvalidValue;  // no room left for the row
  } else {
    compose_kernel<U><<<grid_for(n), kThreads, 0, s>>>(
        static_cast<const U*>(src), static_cast<uint64_t*>(dst), n, length, kind,
        merge_zeros != 0, descending != 0);
    return cudaGetLastError();
  }
}

template <typename U>
cudaError_t decompose_as(const void* src, void* dst, int64_t n, int kind, int descending,
                         cudaStream_t s) {
  decompose_kernel<U><<<grid_for(n), kThreads, 0, s>>>(
      static_cast<const uint64_t*>(src), static_cast<U*>(dst), n, kind, descending != 0);
  return cudaGetLastError();
}

template <typename T>
cudaError_t sort_floats_as(void* temp, size_t* temp_bytes, const void* kin, void* kout,
                           int64_t n, cudaStream_t s) {
  return cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, static_cast<const T*>(kin),
                                        static_cast<T*>(kout), n, 0, int(sizeof(T) * 8), s);
}

template <typename U>
cudaError_t move_nans_as(void* values, void* scratch, int* moved, int64_t n, int kind,
                         cudaStream_t s) {
  U* v = static_cast<U*>(values);
  U* tmp = static_cast<U*>(scratch);
  cudaError_t err = cudaMemsetAsync(moved, 0, sizeof(int), s);
  if (err != cudaSuccess) return err;
  rotate_nans_kernel<U><<<grid_for(n), kThreads, 0, s>>>(v, tmp, n, kind, moved);
  restore_nans_kernel<U><<<grid_for(n), kThreads, 0, s>>>(v, tmp, n, moved);
  return cudaGetLastError();
}

template <typename U>
cudaError_t sort_keys_as(void* temp, size_t* temp_bytes, const void* kin, void* kout,
                         int64_t n, int begin_bit, int end_bit, cudaStream_t s) {
  return cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, static_cast<const U*>(kin),
                                        static_cast<U*>(kout), n, begin_bit, end_bit, s);
}

template <typename U>
cudaError_t sort_pairs_as(void* temp, size_t* temp_bytes, const void* kin, void* kout,
                          const int64_t* vin, int64_t* vout, int64_t n, int begin_bit,
                          int end_bit, cudaStream_t s) {
  return cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, static_cast<const U*>(kin),
                                         static_cast<U*>(kout), vin, vout, n, begin_bit,
                                         end_bit, s);
}

// the row of a flat position: the key of a scan by rows
struct RowOf {
  int64_t length;
  __host__ __device__ int64_t operator()(int64_t i) const { return i / length; }
};

template <typename T, typename Op>
cudaError_t scan_as(void* temp, size_t* temp_bytes, const void* src, void* dst, int64_t n,
                    int64_t length, cudaStream_t s) {
  const T* in = static_cast<const T*>(src);
  T* out = static_cast<T*>(dst);
  if (length >= n) return cub::DeviceScan::InclusiveScan(temp, *temp_bytes, in, out, Op{}, n, s);
  auto rows = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                              RowOf{length});
  return cub::DeviceScan::InclusiveScanByKey(temp, *temp_bytes, rows, in, out, Op{}, n,
                                             cuda::std::equal_to<>{}, s);
}

template <typename T>
cudaError_t scan_op_as(int op, void* temp, size_t* temp_bytes, const void* src, void* dst,
                       int64_t n, int64_t length, cudaStream_t s) {
  if (op == 0) return scan_as<T, cuda::std::plus<>>(temp, temp_bytes, src, dst, n, length, s);
  return scan_as<T, cuda::std::multiplies<>>(temp, temp_bytes, src, dst, n, length, s);
}

template <typename U>
cudaError_t select_values_as(void* temp, size_t* temp_bytes, const void* values,
                             const uint8_t* flags, void* out, int64_t* count, int64_t n,
                             cudaStream_t s) {
  return cub::DeviceSelect::Flagged(temp, *temp_bytes, static_cast<const U*>(values), flags,
                                    static_cast<U*>(out), count, n, s);
}

template <typename T>
cudaError_t gather_as(const void* src, const int64_t* idx, void* dst, GatherShape g,
                      unsigned long long* bad, cudaStream_t s) {
  gather_kernel<T><<<grid_for(g.outer * g.J * g.inner), kThreads, 0, s>>>(
      static_cast<const T*>(src), idx, static_cast<T*>(dst), g, bad);
  return cudaGetLastError();
}

template <typename T>
cudaError_t scatter_as(const void* src, const int64_t* idx, void* dst, int64_t n,
                       cudaStream_t s) {
  scatter_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(src), idx,
                                                     static_cast<T*>(dst), n);
  return cudaGetLastError();
}

template <typename U>
cudaError_t search_as(const void* sorted, int64_t n, const void* needles, int64_t m,
                      int64_t* out, int side, cudaStream_t s) {
  search_kernel<U><<<grid_for(m), kThreads, 0, s>>>(static_cast<const U*>(sorted), n,
                                                    static_cast<const U*>(needles), m, out,
                                                    side);
  return cudaGetLastError();
}

// value type codes of ga_histogram
enum ValueType { kF64, kF32, kF16, kBF16, kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64 };

template <typename T>
cudaError_t histogram_as(const void* values, int64_t n, const double* edges, int nbins,
                         int64_t* counts, cudaStream_t s) {
  const size_t smem = nbins <= kSharedBins ? size_t(nbins) * sizeof(unsigned int) : 0;
  histogram_kernel<T><<<grid_for(n), kThreads, smem, s>>>(
      static_cast<const T*>(values), n, edges, nbins,
      reinterpret_cast<unsigned long long*>(counts));
  return cudaGetLastError();
}

}  // namespace

// one switch on the key or element width for every entry point
#define GA_BY_WIDTH(bytes, CALL)                                  \
  switch (bytes) {                                                \
    case 1: { using U = uint8_t; return CALL; }                   \
    case 2: { using U = uint16_t; return CALL; }                  \
    case 4: { using U = uint32_t; return CALL; }                  \
    case 8: { using U = uint64_t; return CALL; }                  \
    default: return cudaErrorInvalidValue;                        \
  }

extern "C" {

const char* ga_error_string(int err) { return cudaGetErrorString(cudaError_t(err)); }

int ga_encode_keys(int bytes, int kind, const void* src, void* dst, int64_t n, int merge_zeros,
                   int descending, cudaStream_t s) {
  GA_BY_WIDTH(bytes, encode_as<U>(src, dst, n, kind, merge_zeros, descending, s))
}

int ga_decode_keys(int bytes, int kind, const void* src, void* dst, int64_t n, int descending,
                   cudaStream_t s) {
  GA_BY_WIDTH(bytes, decode_as<U>(src, dst, n, kind, descending, s))
}

int ga_compose_keys(int bytes, int kind, const void* src, void* dst, int64_t n, int64_t length,
                    int merge_zeros, int descending, cudaStream_t s) {
  GA_BY_WIDTH(bytes, compose_as<U>(src, dst, n, length, kind, merge_zeros, descending, s))
}

int ga_decompose_keys(int bytes, int kind, const void* src, void* dst, int64_t n,
                      int descending, cudaStream_t s) {
  GA_BY_WIDTH(bytes, decompose_as<U>(src, dst, n, kind, descending, s))
}

int ga_sort_floats(int bytes, int kind, void* temp, size_t* temp_bytes, const void* kin,
                   void* kout, int64_t n, cudaStream_t s) {
  switch (bytes) {
    case 2:
      if (kind == kBFloat) return sort_floats_as<__nv_bfloat16>(temp, temp_bytes, kin, kout, n, s);
      return sort_floats_as<__half>(temp, temp_bytes, kin, kout, n, s);
    case 4: return sort_floats_as<float>(temp, temp_bytes, kin, kout, n, s);
    case 8: return sort_floats_as<double>(temp, temp_bytes, kin, kout, n, s);
    default: return cudaErrorInvalidValue;
  }
}

int ga_move_nans(int bytes, int kind, void* values, void* scratch, int* moved, int64_t n,
                 cudaStream_t s) {
  GA_BY_WIDTH(bytes, move_nans_as<U>(values, scratch, moved, n, kind, s))
}

int ga_sort_keys(int bytes, void* temp, size_t* temp_bytes, const void* kin, void* kout,
                 int64_t n, int begin_bit, int end_bit, cudaStream_t s) {
  GA_BY_WIDTH(bytes, sort_keys_as<U>(temp, temp_bytes, kin, kout, n, begin_bit, end_bit, s))
}

int ga_sort_pairs(int bytes, void* temp, size_t* temp_bytes, const void* kin, void* kout,
                  const int64_t* vin, int64_t* vout, int64_t n, int begin_bit, int end_bit,
                  cudaStream_t s) {
  GA_BY_WIDTH(bytes, sort_pairs_as<U>(temp, temp_bytes, kin, kout, vin, vout, n, begin_bit,
                                      end_bit, s))
}

int ga_select_flagged(void* temp, size_t* temp_bytes, const uint8_t* flags, int64_t* out,
                      int64_t* count, int64_t n, cudaStream_t s) {
  return cub::DeviceSelect::Flagged(temp, *temp_bytes, thrust::counting_iterator<int64_t>(0),
                                    flags, out, count, n, s);
}

int ga_select_values(int bytes, void* temp, size_t* temp_bytes, const void* values,
                     const uint8_t* flags, void* out, int64_t* count, int64_t n,
                     cudaStream_t s) {
  GA_BY_WIDTH(bytes, select_values_as<U>(temp, temp_bytes, values, flags, out, count, n, s))
}

int ga_scan(int type, int op, void* temp, size_t* temp_bytes, const void* src, void* dst,
            int64_t n, int64_t length, cudaStream_t s) {
  switch (type) {
    case 0: return scan_op_as<uint64_t>(op, temp, temp_bytes, src, dst, n, length, s);
    case 1: return scan_op_as<float>(op, temp, temp_bytes, src, dst, n, length, s);
    case 2: return scan_op_as<double>(op, temp, temp_bytes, src, dst, n, length, s);
    default: return cudaErrorInvalidValue;
  }
}

int ga_iota(int64_t* dst, int64_t n, cudaStream_t s) {
  iota_kernel<<<grid_for(n), kThreads, 0, s>>>(dst, n);
  return cudaGetLastError();
}

int ga_histogram(int type, const void* values, int64_t n, const double* edges, int nbins,
                 int64_t* counts, cudaStream_t s) {
  switch (type) {
    case kF64: return histogram_as<double>(values, n, edges, nbins, counts, s);
    case kF32: return histogram_as<float>(values, n, edges, nbins, counts, s);
    case kF16: return histogram_as<__half>(values, n, edges, nbins, counts, s);
    case kBF16: return histogram_as<__nv_bfloat16>(values, n, edges, nbins, counts, s);
    case kI8: return histogram_as<int8_t>(values, n, edges, nbins, counts, s);
    case kU8: return histogram_as<uint8_t>(values, n, edges, nbins, counts, s);
    case kI16: return histogram_as<int16_t>(values, n, edges, nbins, counts, s);
    case kU16: return histogram_as<uint16_t>(values, n, edges, nbins, counts, s);
    case kI32: return histogram_as<int32_t>(values, n, edges, nbins, counts, s);
    case kU32: return histogram_as<uint32_t>(values, n, edges, nbins, counts, s);
    case kI64: return histogram_as<int64_t>(values, n, edges, nbins, counts, s);
    case kU64: return histogram_as<uint64_t>(values, n, edges, nbins, counts, s);
    default: return cudaErrorInvalidValue;
  }
}

int ga_count_bins(const int64_t* idx, int64_t n, int64_t* counts, cudaStream_t s) {
  count_bins_kernel<<<grid_for(n), kThreads, 0, s>>>(
      idx, n, reinterpret_cast<unsigned long long*>(counts));
  return cudaGetLastError();
}

int ga_sum_runs_f64(void* temp, size_t* temp_bytes, const int64_t* keys, int64_t* run_keys,
                    const double* values, double* sums, int64_t* runs, int64_t n,
                    cudaStream_t s) {
  return cub::DeviceReduce::ReduceByKey(temp, *temp_bytes, keys, run_keys, values, sums, runs,
                                        cuda::std::plus<>{}, n, s);
}

int ga_gather(int bytes, const void* src, const int64_t* idx, void* dst, int64_t outer,
              int64_t J, int64_t A, int64_t inner, int64_t is_o, int64_t is_j, int64_t is_i,
              unsigned long long* bad, cudaStream_t s) {
  const GatherShape g{outer, J, A, inner, is_o, is_j, is_i};
  if (bytes == 16) return gather_as<Bits128>(src, idx, dst, g, bad, s);
  GA_BY_WIDTH(bytes, gather_as<U>(src, idx, dst, g, bad, s))
}

int ga_scatter(int bytes, const void* src, const int64_t* idx, void* dst, int64_t n,
               cudaStream_t s) {
  if (bytes == 16) return scatter_as<Bits128>(src, idx, dst, n, s);
  GA_BY_WIDTH(bytes, scatter_as<U>(src, idx, dst, n, s))
}

int ga_search(int bytes, const void* sorted, int64_t n, const void* needles, int64_t m,
              int64_t* out, int side, cudaStream_t s) {
  GA_BY_WIDTH(bytes, search_as<U>(sorted, n, needles, m, out, side, s))
}

}  // extern "C"

// fastdiv.cuh: division by a runtime divisor as a multiply and a shift.
//
// A hardware integer division is a subroutine of ~20 dependent instructions;
// kernels that split indices by launch-time sizes (pooling positions, the
// implicit-GEMM convolution producer's taps and output positions) take the
// divisor's FastDiv from their arguments instead.  Host side:
// gpuarray/conv/fastdiv.py.
#pragma once

// n / d for 0 <= n < 2**31: (n * magic) >> shift, with shift = 31 + ceil(log2 d)
// and magic = ceil(2**shift / d) < 2**32.  The error n * (magic - 2**shift / d)
// / 2**shift stays below 1 / d, so the floor is exact.
struct FastDiv {
    unsigned int magic, shift;
    int d;
};

__device__ __forceinline__ int divide(const FastDiv &f, int n) {
    return (int)(((unsigned long long)(unsigned)n * f.magic) >> f.shift);
}

// The FastDiv of d >= 1 made on the device (one 64-bit division), for
// kernels whose divisors are sizes they derive themselves.
__device__ __forceinline__ FastDiv fast_divisor(int d) {
    const unsigned shift = 31 + (d > 1 ? 32 - __clz(d - 1) : 0);
    const unsigned long long magic = ((1ull << shift) + d - 1) / d;
    return FastDiv{(unsigned)magic, shift, d};
}

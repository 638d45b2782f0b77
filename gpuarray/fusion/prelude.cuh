// gpuarray prelude: the device functions every generated kernel uses.
//
// What it computes: one overload set per op of gpuarray/core/ops.py (ga_<op>),
// numpy's semantics for each loop dtype (integer wrap-around, Python-style
// floor division and modulo, NaN-propagating maximum...), loads and stores
// of float16/bfloat16 storage (math runs in float; stores round to nearest
// even or stochastically), those of the 8-bit floats (float8.cuh, beside
// this file), Philox4x32-10 random numbers, and the reduction combiners.
// No system header is included so that NVRTC compiles a kernel in a few
// tens of milliseconds.
//
// Layouts: float16 and bfloat16 are stored as 16-bit patterns (ga_half,
// ga_bf16), float8_e4m3fn and float8_e5m2 as 8-bit ones (ga_fp8e4m3,
// ga_fp8e5m2); complex64 and complex128 as ga_complex<float> / <double>, the
// real part then the imaginary part (numpy's layout); every other dtype is
// its C type.
#define GA_D __device__ __forceinline__

struct __align__(2) ga_half { unsigned short bits; };
struct __align__(2) ga_bf16 { unsigned short bits; };

// ---- loads and stores ------------------------------------------------------
// Conversions work on values, never on addresses, so that vector loads and
// stores staged in register arrays stay in registers.
template <class C, class S> GA_D C ga_value(S v) { return (C)v; }
// cvt turns every NaN into the positive canonical NaN.  Kernels whose result
// can show a NaN's sign -- copies and casts, copysign (signbit) -- define
// GA_KEEP_NAN_SIGN and put the sign bit back (a no-op for numbers), as numpy
// keeps -nan; the others skip it: on fp16 batch-norm it cost 1.7x.
template <class C> GA_D C ga_value(ga_half h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
#ifdef GA_KEEP_NAN_SIGN
    f = __uint_as_float(__float_as_uint(f) | ((unsigned)(h.bits & 0x8000u) << 16));
#endif
    return (C)f;
}
template <class C> GA_D C ga_value(ga_bf16 h) { return (C)__uint_as_float(((unsigned)h.bits) << 16); }

GA_D unsigned short ga_f2h_bits(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
#ifdef GA_KEEP_NAN_SIGN
    h |= (unsigned short)((__float_as_uint(f) >> 16) & 0x8000u);
#endif
    return h;
}
GA_D unsigned short ga_f2bf_bits(float f) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
#ifdef GA_KEEP_NAN_SIGN
    h |= (unsigned short)((__float_as_uint(f) >> 16) & 0x8000u);
#endif
    return h;
}

// Storage value of a computed value (round to nearest even for fp16/bf16).
template <class S> struct ga_conv { template <class C> static GA_D S to(C v) { return (S)v; } };
template <> struct ga_conv<ga_half> {
    template <class C> static GA_D ga_half to(C v) { ga_half h; h.bits = ga_f2h_bits((float)v); return h; }
};
template <> struct ga_conv<ga_bf16> {
    template <class C> static GA_D ga_bf16 to(C v) { ga_bf16 h; h.bits = ga_f2bf_bits((float)v); return h; }
};

// N elements of T read or written as one aligned vector access (16 bytes at most)
template <class T, int N> struct alignas(sizeof(T) * N) ga_vec { T v[N]; };

// An explicit astype to fp16/bf16 rounds even when the value stays in float.
GA_D float ga_round_half(float v) { return ga_value<float>(ga_conv<ga_half>::to(v)); }
GA_D float ga_round_bf16(float v) { return ga_value<float>(ga_conv<ga_bf16>::to(v)); }

// float8_e4m3fn and float8_e5m2: storage, rounding, nextafter/spacing, stochastic rounding
#include "float8.cuh"

// ---- Philox4x32-10 ---------------------------------------------------------
struct ga_u4 { unsigned x, y, z, w; };
GA_D ga_u4 ga_philox(unsigned long long seed, unsigned long long index,
                     unsigned stream, unsigned call) {
    unsigned c0 = (unsigned)index, c1 = (unsigned)(index >> 32), c2 = stream, c3 = call;
    unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
    #pragma unroll
    for (int r = 0; r < 10; ++r) {
        unsigned hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        unsigned hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    ga_u4 r = {c0, c1, c2, c3};
    return r;
}
// The Philox key of a launch: the factory's seed, mixed with the number of
// captured-graph replays so far (a device word each replay that draws random
// numbers increments), so that a replayed kernel, whose call counter the
// graph froze, draws fresh numbers.  0 replays leave the seed as it is.
GA_D unsigned long long ga_key(unsigned long long seed, const unsigned long long* replays) {
    return seed ^ (__ldg(replays) * 0x9E3779B97F4A7C15ull);
}
// uniform [0, 1) with 24 random bits
GA_D float ga_uniform(unsigned long long seed, unsigned long long index, unsigned stream, unsigned call) {
    return (ga_philox(seed, index, stream, call).x >> 8) * 5.9604644775390625e-08f;
}

// Stochastic rounding of float to nbits mantissa bits of fp16 (is_half) or
// bf16: add random bits below the kept ones, truncate (see cpu.stochastic_round).
GA_D float ga_stochastic_round(float v, unsigned noise, int nbits, bool is_half) {
    unsigned bits = __float_as_uint(v);
    int exponent = (int)((bits >> 23) & 0xFF);
    if (exponent == 0xFF) return v;
    int drop = 23 - nbits;
    if (is_half) drop += min(max(-14 - (exponent - 127), 0), nbits);
    unsigned long long wide = (unsigned long long)bits + (noise & ((1u << drop) - 1u));
    return __uint_as_float((unsigned)((wide >> drop) << drop));
}

// ---- integer helpers -------------------------------------------------------
template <class T> struct ga_unsigned { typedef T type; };
template <> struct ga_unsigned<signed char> { typedef unsigned char type; };
template <> struct ga_unsigned<short> { typedef unsigned short type; };
template <> struct ga_unsigned<int> { typedef unsigned type; };
template <> struct ga_unsigned<long long> { typedef unsigned long long type; };
#define GA_U(T) typename ga_unsigned<T>::type

// ---- arithmetic: templates serve the integer types, overloads the floats ---
template <class T> GA_D T ga_add(T a, T b) { return (T)((GA_U(T))a + (GA_U(T))b); }
template <class T> GA_D T ga_subtract(T a, T b) { return (T)((GA_U(T))a - (GA_U(T))b); }
template <class T> GA_D T ga_multiply(T a, T b) { return (T)((GA_U(T))a * (GA_U(T))b); }
template <class T> GA_D T ga_negative(T a) { return (T)(-(GA_U(T))a); }
template <class T> GA_D T ga_square(T a) { return ga_multiply(a, a); }
template <class T> GA_D T ga_absolute(T a) { return a < (T)0 ? ga_negative(a) : a; }
template <class T> GA_D T ga_sign(T a) { return (T)((a > (T)0) - (a < (T)0)); }
template <class T> GA_D T ga_floor_divide(T a, T b) {
    if (b == (T)0) return (T)0;
    if ((T)-1 < (T)0 && b == (T)-1) return ga_negative(a);
    T q = a / b;
    if ((a % b != 0) && ((a < (T)0) != (b < (T)0))) q = q - (T)1;
    return q;
}
template <class T> GA_D T ga_mod(T a, T b) {
    if (b == (T)0 || ((T)-1 < (T)0 && b == (T)-1)) return (T)0;
    T r = a % b;
    if (r != 0 && ((r < (T)0) != (b < (T)0))) r = r + b;
    return r;
}
template <class T> GA_D T ga_power(T a, T b) {
    if (b < (T)0) return a == (T)1 ? (T)1 : (a == (T)-1 ? ((b & 1) ? a : (T)1) : (T)0);
    T r = (T)1;
    while (b) { if (b & 1) r = ga_multiply(r, a); a = ga_multiply(a, a); b = b >> 1; }
    return r;
}
template <class T> GA_D T ga_reciprocal(T a) { return a == (T)0 ? (T)0 : (T)((T)1 / a); }
template <class T> GA_D T ga_maximum(T a, T b) { return a >= b ? a : b; }
template <class T> GA_D T ga_minimum(T a, T b) { return a <= b ? a : b; }
template <class T> GA_D T ga_floor(T a) { return a; }
template <class T> GA_D T ga_ceil(T a) { return a; }
template <class T> GA_D T ga_trunc(T a) { return a; }
template <class T> GA_D bool ga_isnan(T) { return false; }
template <class T> GA_D bool ga_isinf(T) { return false; }
template <class T> GA_D bool ga_isfinite(T) { return true; }
template <class T> GA_D T ga_relu(T a) { return ga_maximum(a, (T)0); }
template <class T> GA_D T ga_bitwise_and(T a, T b) { return a & b; }
template <class T> GA_D T ga_bitwise_or(T a, T b) { return a | b; }
template <class T> GA_D T ga_bitwise_xor(T a, T b) { return a ^ b; }
template <class T> GA_D T ga_invert(T a) { return (T)~a; }
template <class T> GA_D T ga_left_shift(T a, T b) {
    return (b < (T)0 || b >= (T)(8 * sizeof(T))) ? (T)0 : (T)((GA_U(T))a << b);
}
// numpy's gcd and lcm of integers: Euclid on the magnitudes, taken unsigned
// so that the most negative value wraps as numpy's does (gcd(-128, 0) = -128)
template <class T> GA_D GA_U(T) ga_magnitude(T a) {
    return a < (T)0 ? (GA_U(T))0 - (GA_U(T))a : (GA_U(T))a;
}
template <class T> GA_D T ga_gcd(T a, T b) {
    GA_U(T) x = ga_magnitude(a), y = ga_magnitude(b);
    while (y != 0) { GA_U(T) t = x % y; x = y; y = t; }
    return (T)x;
}
template <class T> GA_D T ga_lcm(T a, T b) {
    GA_U(T) g = (GA_U(T))ga_gcd(a, b);
    return g == 0 ? (T)0 : (T)(ga_magnitude(a) / g * ga_magnitude(b));
}
template <class T> GA_D T ga_right_shift(T a, T b) {
    if (b < (T)0 || b >= (T)(8 * sizeof(T))) return a < (T)0 ? (T)-1 : (T)0;
    return (T)(a >> b);
}
GA_D bool ga_add(bool a, bool b) { return a || b; }
GA_D bool ga_multiply(bool a, bool b) { return a && b; }
GA_D bool ga_absolute(bool a) { return a; }
GA_D bool ga_maximum(bool a, bool b) { return a || b; }
GA_D bool ga_minimum(bool a, bool b) { return a && b; }
GA_D bool ga_invert(bool a) { return !a; }

// comparisons and logic, any type
template <class T> GA_D bool ga_equal(T a, T b) { return a == b; }
template <class T> GA_D bool ga_not_equal(T a, T b) { return a != b; }
template <class T> GA_D bool ga_less(T a, T b) { return a < b; }
template <class T> GA_D bool ga_less_equal(T a, T b) { return a <= b; }
template <class T> GA_D bool ga_greater(T a, T b) { return a > b; }
template <class T> GA_D bool ga_greater_equal(T a, T b) { return a >= b; }
// numpy compares int64 with uint64 exactly, without a common type
#define GA_MIXED_COMPARE(name, op)                                                           \
    GA_D bool name(long long a, unsigned long long b) {                                      \
        return a < 0 ? (0 op 1) : ((unsigned long long)a op b);                              \
    }                                                                                        \
    GA_D bool name(unsigned long long a, long long b) {                                      \
        return b < 0 ? (1 op 0) : (a op (unsigned long long)b);                              \
    }
GA_MIXED_COMPARE(ga_equal, ==)
GA_MIXED_COMPARE(ga_not_equal, !=)
GA_MIXED_COMPARE(ga_less, <)
GA_MIXED_COMPARE(ga_less_equal, <=)
GA_MIXED_COMPARE(ga_greater, >)
GA_MIXED_COMPARE(ga_greater_equal, >=)
template <class T> GA_D bool ga_logical_and(T a, T b) { return (a != (T)0) && (b != (T)0); }
template <class T> GA_D bool ga_logical_or(T a, T b) { return (a != (T)0) || (b != (T)0); }
template <class T> GA_D bool ga_logical_xor(T a, T b) { return (a != (T)0) != (b != (T)0); }
template <class T> GA_D bool ga_logical_not(T a) { return a == (T)0; }

// floating point: float and double overloads of the same numpy semantics
#define GA_FLOAT_OPS(T, F)                                                                 \
    GA_D T ga_add(T a, T b) { return a + b; }                                              \
    GA_D T ga_subtract(T a, T b) { return a - b; }                                         \
    GA_D T ga_multiply(T a, T b) { return a * b; }                                         \
    GA_D T ga_divide(T a, T b) { return a / b; }                                           \
    GA_D T ga_negative(T a) { return -a; }                                                 \
    GA_D T ga_absolute(T a) { return fabs##F(a); }                                         \
    GA_D T ga_square(T a) { return a * a; }                                                \
    GA_D T ga_reciprocal(T a) { return (T)1 / a; }                                         \
    GA_D T ga_mod(T a, T b) {                                                              \
        if (b == (T)0) return fmod##F(a, b);                                               \
        T m = fmod##F(a, b);                                                               \
        if (m != (T)0) { if ((b < (T)0) != (m < (T)0)) m += b; }                           \
        else m = copysign##F((T)0, b);                                                     \
        return m;                                                                          \
    }                                                                                      \
    GA_D T ga_floor_divide(T a, T b) {                                                     \
        if (b == (T)0) return a / b;                                                       \
        T m = fmod##F(a, b), d = (a - m) / b;                                              \
        if (m != (T)0 && ((b < (T)0) != (m < (T)0))) d -= (T)1;                           \
        if (d == (T)0) return copysign##F((T)0, a / b);                                    \
        T f = floor##F(d);                                                                 \
        return (d - f > (T)0.5) ? f + (T)1 : f;                                            \
    }                                                                                      \
    GA_D T ga_power(T a, T b) { return pow##F(a, b); }                                     \
    GA_D T ga_maximum(T a, T b) { return (a >= b || a != a) ? a : b; }                     \
    GA_D T ga_minimum(T a, T b) { return (a <= b || a != a) ? a : b; }                     \
    GA_D T ga_relu(T a) { return ga_maximum(a, (T)0); }                                    \
    GA_D T ga_sign(T a) { return a != a ? a : (T)((a > (T)0) - (a < (T)0)); }              \
    GA_D T ga_sqrt(T a) { return sqrt##F(a); }                                             \
    GA_D T ga_rsqrt(T a) { return rsqrt##F(a); }                                           \
    GA_D T ga_cbrt(T a) { return cbrt##F(a); }                                             \
    GA_D T ga_exp(T a) { return exp##F(a); }                                               \
    GA_D T ga_exp2(T a) { return exp2##F(a); }                                             \
    GA_D T ga_expm1(T a) { return expm1##F(a); }                                           \
    GA_D T ga_log(T a) { return log##F(a); }                                               \
    GA_D T ga_log2(T a) { return log2##F(a); }                                             \
    GA_D T ga_log10(T a) { return log10##F(a); }                                           \
    GA_D T ga_log1p(T a) { return log1p##F(a); }                                           \
    GA_D T ga_sin(T a) { return sin##F(a); }                                               \
    GA_D T ga_cos(T a) { return cos##F(a); }                                               \
    GA_D T ga_tan(T a) { return tan##F(a); }                                               \
    GA_D T ga_arcsin(T a) { return asin##F(a); }                                           \
    GA_D T ga_arccos(T a) { return acos##F(a); }                                           \
    GA_D T ga_arctan(T a) { return atan##F(a); }                                           \
    GA_D T ga_arctan2(T a, T b) { return atan2##F(a, b); }                                 \
    GA_D T ga_sinh(T a) { return sinh##F(a); }                                             \
    GA_D T ga_cosh(T a) { return cosh##F(a); }                                             \
    GA_D T ga_tanh(T a) { return tanh##F(a); }                                             \
    GA_D T ga_arcsinh(T a) { return asinh##F(a); }                                         \
    GA_D T ga_arccosh(T a) { return acosh##F(a); }                                         \
    GA_D T ga_arctanh(T a) { return atanh##F(a); }                                         \
    GA_D T ga_erf(T a) { return erf##F(a); }                                               \
    GA_D T ga_erfc(T a) { return erfc##F(a); }                                             \
    GA_D T ga_sigmoid(T a) { return (T)1 / ((T)1 + exp##F(-a)); }                          \
    GA_D T ga_copysign(T a, T b) { return copysign##F(a, b); }                             \
    /* IEEE hypot: +inf beside an infinity even with NaN, and +inf on overflow */          \
    /* (CUDA's double hypot misses the overflow of hypot(DBL_MAX, DBL_MAX)); below */       \
    /* half the top exponent nothing can overflow and the library call serves */         \
    GA_D T ga_hypot(T a, T b) {                                                            \
        a = fabs##F(a);                                                                    \
        b = fabs##F(b);                                                                    \
        if (a == a && a - a != a - a) return a;                                            \
        if (b == b && b - b != b - b) return b;                                            \
        const T big = a > b ? a : b, small = a > b ? b : a;                                \
        if (!(big > (T)(sizeof(T) == 8 ? 0x1p1023 : 0x1p127))) return hypot##F(a, b);      \
        const T r = small / big;                                                           \
        return big * sqrt##F((T)1 + r * r);                                                \
    }                                                                                      \
    GA_D T ga_floor(T a) { return floor##F(a); }                                           \
    GA_D T ga_ceil(T a) { return ceil##F(a); }                                             \
    GA_D T ga_trunc(T a) { return trunc##F(a); }                                           \
    GA_D T ga_rint(T a) { return rint##F(a); }                                             \
    GA_D bool ga_isnan(T a) { return a != a; }                                             \
    GA_D bool ga_isinf(T a) { return fabs##F(a) == (T)__int_as_float(0x7f800000); }       \
    GA_D bool ga_isfinite(T a) { return !ga_isnan(a) && !ga_isinf(a); }

GA_FLOAT_OPS(float, f)
GA_FLOAT_OPS(double, )

// nextafter steps one unit in the last place of the dtype; spacing is that
// unit, signed as x (+0 and -0 give the smallest positive number), as numpy.
GA_D float ga_nextafter(float a, float b) { return nextafterf(a, b); }
GA_D double ga_nextafter(double a, double b) { return nextafter(a, b); }
template <class T> GA_D T ga_spacing(T a) {
    const T inf = (T)__int_as_float(0x7f800000);
    if (ga_isinf(a)) return a - a;
    return ga_nextafter(a, a < (T)0 ? -inf : inf) - a;
}
// float16 and bfloat16 values held in float step in their own units: the
// value is rounded to the format and its 16-bit pattern moved by one.
template <bool HALF> GA_D unsigned short ga_bits16(float v) {
    return HALF ? ga_f2h_bits(v) : ga_f2bf_bits(v);
}
template <bool HALF> GA_D float ga_from_bits16(unsigned short bits) {
    if (!HALF) return __uint_as_float(((unsigned)bits) << 16);
    ga_half h;
    h.bits = bits;
    return ga_value<float>(h);
}
template <bool HALF> GA_D float ga_nextafter16(float a, float b) {
    const float x = ga_from_bits16<HALF>(ga_bits16<HALF>(a));
    const float y = ga_from_bits16<HALF>(ga_bits16<HALF>(b));
    if (x != x || y != y) return x + y;
    if (x == y) return y;
    if (x == 0.0f) return ga_from_bits16<HALF>((unsigned short)(y < 0.0f ? 0x8001u : 0x0001u));
    const unsigned short bits = ga_bits16<HALF>(x);
    return ga_from_bits16<HALF>((unsigned short)(((x < y) == (x > 0.0f)) ? bits + 1 : bits - 1));
}
GA_D float ga_nextafter_half(float a, float b) { return ga_nextafter16<true>(a, b); }
GA_D float ga_nextafter_bf16(float a, float b) { return ga_nextafter16<false>(a, b); }
// numpy's float16 spacing always steps up (spacing(-1) is 2**-11, and
// spacing(-65504) is 32); ml_dtypes' bfloat16 steps away from zero as the
// sign bit says (spacing(-0.0) is negative)
GA_D float ga_spacing_half(float a) {
    const float x = ga_from_bits16<true>(ga_bits16<true>(a));
    if (ga_isinf(x)) return x - x;
    return ga_nextafter16<true>(x, __int_as_float(0x7f800000)) - x;
}
GA_D float ga_spacing_bf16(float a) {
    const float x = ga_from_bits16<false>(ga_bits16<false>(a)), inf = __int_as_float(0x7f800000);
    if (ga_isinf(x)) return x - x;
    return ga_nextafter16<false>(x, (__float_as_uint(x) >> 31) ? -inf : inf) - x;
}

// ---- reductions --------------------------------------------------------------
// Combiners of per-thread accumulators; max/min propagate NaN as numpy does.
template <class T> GA_D T ga_red_sum(T a, T b) { return ga_add(a, b); }
template <class T> GA_D T ga_red_prod(T a, T b) { return ga_multiply(a, b); }
template <class T> GA_D T ga_red_max(T a, T b) { return ga_maximum(a, b); }
template <class T> GA_D T ga_red_min(T a, T b) { return ga_minimum(a, b); }
GA_D bool ga_red_any(bool a, bool b) { return a || b; }
GA_D bool ga_red_all(bool a, bool b) { return a && b; }

// argmax/argmin: NaN wins (first NaN, as numpy), then the larger (smaller)
// value, ties to the lower index.
template <class T> GA_D bool ga_arg_better(T a, long long ia, T b, long long ib, bool want_max) {
    bool an = a != a, bn = b != b;
    if (an || bn) return an && (!bn || ia < ib);
    if (a == b) return ia < ib;
    return want_max ? a > b : a < b;
}

// Warp shuffles for every accumulator type (narrow ints travel as int).
GA_D float ga_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
GA_D double ga_shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
GA_D long long ga_shfl_xor(long long v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
GA_D unsigned long long ga_shfl_xor(unsigned long long v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
GA_D int ga_shfl_xor(int v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
GA_D unsigned ga_shfl_xor(unsigned v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
template <class T> GA_D T ga_shfl_xor(T v, int m) { return (T)__shfl_xor_sync(0xffffffffu, (int)v, m); }

// Identities of max/min: -inf/+inf for floats, the type's range for integers.
template <class T> GA_D T ga_lowest() { return (T)0 < (T)-1 ? (T)0 : (T)((GA_U(T))1 << (8 * sizeof(T) - 1)); }
template <class T> GA_D T ga_highest() { return (T)~ga_lowest<T>(); }
template <> GA_D float ga_lowest<float>() { return -__int_as_float(0x7f800000); }
template <> GA_D float ga_highest<float>() { return __int_as_float(0x7f800000); }
template <> GA_D double ga_lowest<double>() { return -__longlong_as_double(0x7ff0000000000000ll); }
template <> GA_D double ga_highest<double>() { return __longlong_as_double(0x7ff0000000000000ll); }
template <> GA_D bool ga_lowest<bool>() { return false; }
template <> GA_D bool ga_highest<bool>() { return true; }

// ---- complex numbers ---------------------------------------------------------
// numpy's complex64/complex128: the real part, then the imaginary part,
// aligned as one part (a complex64 view may start at any 4-byte boundary).
// Arithmetic follows numpy's loops: Smith's division, lexicographic
// ordering, NaN-propagating maximum/minimum, sign z/|z|; the elementary
// functions use the formulas with the usual branch cuts (Kahan's for the
// inverse functions), accurate for finite arguments, and C99 Annex G's
// special values for infinite and NaN parts.
template <class T> struct ga_is_complex { enum { value = 0 }; };
template <bool B, class T = void> struct ga_enable_if {};
template <class T> struct ga_enable_if<true, T> { typedef T type; };
#define GA_IF_REAL(T) class = typename ga_enable_if<!ga_is_complex<T>::value>::type

template <class F> struct ga_complex {
    F re, im;
    ga_complex() = default;
    GA_D ga_complex(F r, F i) : re(r), im(i) {}
    // a real value of any type: imaginary part 0
    template <class T, GA_IF_REAL(T)> GA_D ga_complex(T v) : re((F)v), im((F)0) {}
    template <class G> GA_D explicit ga_complex(ga_complex<G> z) : re((F)z.re), im((F)z.im) {}
    // to a real type: the real part, as numpy's astype (the host warns)
    template <class T, GA_IF_REAL(T)> GA_D explicit operator T() const { return (T)re; }
    GA_D explicit operator bool() const { return re != (F)0 || im != (F)0; }
};
template <class F> struct ga_is_complex<ga_complex<F> > { enum { value = 1 }; };
typedef ga_complex<float> ga_complex64;
typedef ga_complex<double> ga_complex128;
#define GA_C ga_complex<F>

template <class F> GA_D GA_C operator+(GA_C a, GA_C b) { return GA_C(a.re + b.re, a.im + b.im); }
template <class F> GA_D GA_C operator-(GA_C a, GA_C b) { return GA_C(a.re - b.re, a.im - b.im); }
template <class F> GA_D GA_C operator-(GA_C a) { return GA_C(-a.re, -a.im); }
template <class F> GA_D GA_C operator*(GA_C a, GA_C b) {
    return GA_C(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
template <class F> GA_D GA_C ga_scale(GA_C a, F s) { return GA_C(a.re * s, a.im * s); }
// Smith's algorithm, as numpy: no overflow from squaring the divisor
template <class F> GA_D GA_C operator/(GA_C a, GA_C b) {
    const F abs_re = ga_absolute(b.re), abs_im = ga_absolute(b.im);
    if (abs_re >= abs_im) {
        if (abs_re == (F)0 && abs_im == (F)0) return GA_C(a.re / abs_re, a.im / abs_im);
        const F ratio = b.im / b.re, scale = (F)1 / (b.re + b.im * ratio);
        return GA_C((a.re + a.im * ratio) * scale, (a.im - a.re * ratio) * scale);
    }
    const F ratio = b.re / b.im, scale = (F)1 / (b.im + b.re * ratio);
    return GA_C((a.re * ratio + a.im) * scale, (a.im * ratio - a.re) * scale);
}
template <class F> GA_D bool operator==(GA_C a, GA_C b) { return a.re == b.re && a.im == b.im; }
template <class F> GA_D bool operator!=(GA_C a, GA_C b) { return !(a == b); }
// numpy's order: by real part, then imaginary part; false beside a NaN
template <class F> GA_D bool operator<(GA_C a, GA_C b) {
    return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im < b.im);
}
template <class F> GA_D bool operator<=(GA_C a, GA_C b) {
    return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im <= b.im);
}
template <class F> GA_D bool operator>(GA_C a, GA_C b) { return b < a; }
template <class F> GA_D bool operator>=(GA_C a, GA_C b) { return b <= a; }

template <class F> GA_D GA_C ga_add(GA_C a, GA_C b) { return a + b; }
template <class F> GA_D GA_C ga_subtract(GA_C a, GA_C b) { return a - b; }
template <class F> GA_D GA_C ga_multiply(GA_C a, GA_C b) { return a * b; }
template <class F> GA_D GA_C ga_divide(GA_C a, GA_C b) { return a / b; }
template <class F> GA_D GA_C ga_negative(GA_C a) { return -a; }
template <class F> GA_D GA_C ga_square(GA_C a) { return a * a; }
template <class F> GA_D GA_C ga_reciprocal(GA_C a) { return GA_C((F)1, (F)0) / a; }
template <class F> GA_D F ga_absolute(GA_C a) { return ga_hypot(a.re, a.im); }
template <class F> GA_D bool ga_isnan(GA_C a) { return a.re != a.re || a.im != a.im; }
template <class F> GA_D bool ga_isinf(GA_C a) { return ga_isinf(a.re) || ga_isinf(a.im); }
template <class F> GA_D bool ga_isfinite(GA_C a) { return ga_isfinite(a.re) && ga_isfinite(a.im); }
template <class F> GA_D GA_C ga_maximum(GA_C a, GA_C b) { return (ga_isnan(a) || a >= b) ? a : b; }
template <class F> GA_D GA_C ga_minimum(GA_C a, GA_C b) { return (ga_isnan(a) || a <= b) ? a : b; }
template <class F> GA_D GA_C ga_rint(GA_C a) { return GA_C(ga_rint(a.re), ga_rint(a.im)); }
template <class F> GA_D GA_C ga_conjugate(GA_C a) { return GA_C(a.re, -a.im); }
template <class F> GA_D F ga_real(GA_C a) { return a.re; }
template <class F> GA_D F ga_imag(GA_C a) { return a.im; }
template <class T> GA_D T ga_conjugate(T a) { return a; }
template <class T> GA_D T ga_real(T a) { return a; }
template <class T> GA_D T ga_imag(T) { return (T)0; }
// numpy 2: z / |z|, 0 at 0; infinite parts count as +-1 and the rest as 0
template <class F> GA_D GA_C ga_sign(GA_C a) {
    if (ga_isnan(a)) return GA_C(a.re + a.im, a.re + a.im);
    if (ga_isinf(a)) {
        a = GA_C(ga_isinf(a.re) ? ga_copysign((F)1, a.re) : (F)0,
                 ga_isinf(a.im) ? ga_copysign((F)1, a.im) : (F)0);
    }
    const F m = ga_absolute(a);
    return m == (F)0 ? GA_C((F)0, (F)0) : GA_C(a.re / m, a.im / m);
}

// C99's special values where the imaginary part is not finite: -inf real
// part gives 0, +inf gives inf + NaN j, a finite one NaN + NaN j
template <class F> GA_D GA_C ga_exp(GA_C a) {
    if (a.im == (F)0) return GA_C(ga_exp(a.re), a.im);
    if (!ga_isfinite(a.im)) {
        const F nan = a.im - a.im;
        // cexp(-inf + i inf) = +-0 +- i0: numpy's signs are conj's
        if (a.re == ga_lowest<F>()) return GA_C((F)0, ga_copysign((F)0, a.im));
        return GA_C(a.re == ga_highest<F>() ? a.re : nan, nan);
    }
    const F e = ga_exp(a.re);
    return GA_C(e * ga_cos(a.im), e * ga_sin(a.im));
}
template <class F> GA_D GA_C ga_log(GA_C a) {
    return GA_C(ga_log(ga_absolute(a)), ga_arctan2(a.im, a.re));
}
template <class F> GA_D GA_C ga_sqrt(GA_C a) {
    const F x = a.re, y = a.im, inf = (F)(1.0 / 0.0);
    if (x == (F)0 && y == (F)0) return GA_C((F)0, y);
    if (ga_isinf(y)) return GA_C(inf, y);
    if (x != x) return GA_C(x, y - y + x);
    if (ga_isinf(x)) {
        if (x > (F)0) return GA_C(x, y != y ? y : ga_copysign((F)0, y));
        return GA_C(y != y ? y : (F)0, ga_copysign(inf, y));
    }
    // |x| + |z| overflows near the top of the range: work on a quarter
    const F big = (F)(sizeof(F) == 8 ? 0x1p1021 : 0x1p125);
    const bool scaled = ga_absolute(x) > big || ga_absolute(y) > big;
    const F sx = scaled ? x * (F)0.25 : x, sy = scaled ? y * (F)0.25 : y;
    F t = ga_sqrt((ga_absolute(sx) + ga_hypot(sx, sy)) * (F)0.5);
    F u = sy / (t * (F)2);
    if (scaled) { t *= (F)2; u *= (F)2; }
    return x >= (F)0 ? GA_C(t, u) : GA_C(ga_absolute(u), ga_copysign(t, y));
}
template <class F> GA_D GA_C ga_rsqrt(GA_C a) { return ga_reciprocal(ga_sqrt(a)); }
// integer exponents below 100 by repeated squaring, as numpy; else exp(b log a)
template <class F> GA_D GA_C ga_power(GA_C a, GA_C b) {
    if (b.re == (F)0 && b.im == (F)0) return GA_C((F)1, (F)0);
    if (a.re == (F)0 && a.im == (F)0) {
        if (b.re > (F)0 && b.im == (F)0) return GA_C((F)0, (F)0);
        const F nan = (F)(0.0 / 0.0);
        return GA_C(nan, nan);
    }
    if (b.im == (F)0 && b.re == ga_trunc(b.re) && ga_absolute(b.re) < (F)100) {
        long long n = (long long)b.re, m = n < 0 ? -n : n;
        GA_C r((F)1, (F)0), p = a;
        while (m) { if (m & 1) r = r * p; p = p * p; m >>= 1; }
        return n < 0 ? ga_reciprocal(r) : r;
    }
    return ga_exp(ga_log(a) * b);
}
template <class F> GA_D GA_C ga_exp2(GA_C a) { return ga_exp(ga_scale(a, (F)0.693147180559945309417)); }
template <class F> GA_D GA_C ga_log2(GA_C a) { return ga_scale(ga_log(a), (F)1.44269504088896340736); }
template <class F> GA_D GA_C ga_log10(GA_C a) { return ga_scale(ga_log(a), (F)0.434294481903251827651); }
// exp(z) - 1 without cancellation: cos y - 1 = -2 sin^2(y/2)
template <class F> GA_D GA_C ga_expm1(GA_C a) {
    if (a.im == (F)0) return GA_C(ga_expm1(a.re), a.im);
    if (!ga_isfinite(a.re) || !ga_isfinite(a.im)) {  // exp's special values, less one
        const GA_C e = ga_exp(a);
        return GA_C(e.re - (F)1, e.im);
    }
    const F s = ga_sin(a.im * (F)0.5);
    return GA_C(ga_expm1(a.re) * ga_cos(a.im) - (F)2 * s * s, ga_exp(a.re) * ga_sin(a.im));
}
// log(1 + z): |1 + z|^2 - 1 = x(2 + x) + y^2 near 0, without cancellation
template <class F> GA_D GA_C ga_log1p(GA_C a) {
    const F x = a.re, y = a.im, angle = ga_arctan2(y, x + (F)1);
    if (ga_absolute(x) < (F)0.5 && ga_absolute(y) < (F)0.5)
        return GA_C((F)0.5 * ga_log1p(x * ((F)2 + x) + y * y), angle);
    return GA_C(ga_log(ga_hypot(x + (F)1, y)), angle);
}
// C99 Annex G (G.6.1-G.6.3): an infinite or NaN part takes one branch,
// finite arguments keep the formulas.  The trigonometric functions are the
// hyperbolic ones rotated, as Annex G defines them (csin z = -i csinh(iz),
// ccos z = ccosh(iz), likewise ctan, casin, catan).  Where Annex G leaves a
// sign open, numpy's choice, passed as `open` where numpy's choices are not
// each other's rotations; where numpy's follows a NaN's sign, copysign reads
// it off the argument (a GPU may drop a NaN's sign when negating it).
//
// csinh; `open` is the real part of csinh(+-inf + i inf) and (+-inf + i NaN)
template <class F> GA_D GA_C ga_sinh_open(F x, F y, F open) {
    // G.6.2.5: csinh(+inf + i0) = +inf + i0, csinh(NaN + i0) = NaN + i0 (no inf * 0)
    if (y == (F)0) return GA_C(ga_sinh(x), y);
    // csinh(+0 + i inf) = +0 + i NaN, csinh(+inf + i inf) = +-inf + i NaN
    if (!ga_isfinite(y)) {
        const F nan = y - y;
        return GA_C(x == (F)0 ? x : ga_isinf(x) ? open : nan, nan);
    }
    return GA_C(ga_sinh(x) * ga_cos(y), ga_cosh(x) * ga_sin(y));
}
// numpy: +inf for csinh(+-inf + i inf) and for csin(+-inf + i inf) = NaN +- i inf
template <class F> GA_D GA_C ga_sinh(GA_C a) { return ga_sinh_open(a.re, a.im, ga_highest<F>()); }
template <class F> GA_D GA_C ga_sin(GA_C a) {
    const GA_C s = ga_sinh_open(-a.im, a.re, ga_lowest<F>());
    return GA_C(s.im, -s.re);
}
template <class F> GA_D GA_C ga_cosh(GA_C a) {
    const F x = a.re, y = a.im;
    // G.6.2.4: ccosh(+inf + i0) = +inf + i0, even and conjugate-symmetric (no
    // inf * 0); ccosh(NaN + i0) = NaN +- i0 (numpy: the sign of y)
    if (y == (F)0) return GA_C(ga_cosh(x), x == x ? ga_copysign((F)1, x) * y : y);
    // ccosh(+0 + i inf) = NaN +- i0 (numpy: +0), ccosh(+inf + i inf) = +-inf + i NaN
    // (numpy: +inf)
    if (!ga_isfinite(y)) {
        const F nan = y - y;
        return GA_C(ga_isinf(x) ? ga_absolute(x) : nan, x == (F)0 ? (F)0 : nan);
    }
    return GA_C(ga_cosh(x) * ga_cos(y), ga_sinh(x) * ga_sin(y));
}
template <class F> GA_D GA_C ga_cos(GA_C a) { return ga_cosh(GA_C(-a.im, a.re)); }
// tanh(x + iy) = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y); +-1 once cosh overflows
template <class F> GA_D GA_C ga_tanh(GA_C a) {
    const F x = a.re, y = a.im;
    if (!(ga_absolute(x) <= (F)(sizeof(F) == 8 ? 354 : 44) && ga_isfinite(y))) {
        // G.6.2.6: ctanh(+inf + iy) = 1 + i0 sin 2y (sin y cos y: 2y may overflow),
        // ctanh(+inf + i inf) = 1 +- i0 (numpy: the sign of y)
        if (ga_isinf(x) || (x == x && ga_isfinite(y)))
            return GA_C(ga_copysign((F)1, x),
                        ga_copysign((F)0, ga_isfinite(y) ? ga_sin(y) * ga_cos(y) : y));
        // ctanh(NaN + i0) = NaN + i0; ctanh(+0 + i inf) = +0 + i NaN as numpy and
        // C23 (C99: NaN + i NaN); other finite x with y inf or NaN: NaN + i NaN
        const F nan = (F)(0.0 / 0.0);
        return GA_C(x == (F)0 ? x : nan, y == (F)0 ? y : nan);
    }
    const F d = ga_cosh((F)2 * x) + ga_cos((F)2 * y);
    return GA_C(ga_sinh((F)2 * x) / d, ga_sin((F)2 * y) / d);
}
template <class F> GA_D GA_C ga_tan(GA_C a) {
    const GA_C t = ga_tanh(GA_C(-a.im, a.re));
    return GA_C(t.im, -t.re);
}
// Kahan's formulas ("Branch cuts for complex elementary functions") for
// finite arguments.  1 - z and 1 + z keep -y and y exactly, signed zeros
// included: those pick the side of a branch cut on the real axis.
// Below, the angle of a point at infinity is atan2's: atan2(+inf, +inf) =
// pi/4, atan2(+inf, -inf) = 3pi/4, atan2(y, +inf) = +0, atan2(+inf, x) = pi/2.
template <class F> GA_D GA_C ga_arcsin_kahan(GA_C a) {
    const GA_C p = ga_sqrt(GA_C((F)1 - a.re, -a.im)), q = ga_sqrt(GA_C((F)1 + a.re, a.im));
    return GA_C(ga_arctan2(a.re, p.re * q.re - p.im * q.im), ga_arcsinh(p.re * q.im - p.im * q.re));
}
// casinh at an infinite or NaN part; `open` is casinh(NaN + i inf)'s real part
template <class F> GA_D GA_C ga_arcsinh_special(F x, F y, F open) {
    // G.6.2.2: casinh(NaN + i0) = NaN + i0, casinh(NaN + i inf) = +-inf + i NaN
    if (x != x) return GA_C(ga_isinf(y) ? open : x, y == (F)0 ? y : x);
    // casinh(+inf + i NaN) = +inf + i NaN; finite x: NaN + i NaN
    if (y != y) return GA_C(ga_isinf(x) ? x : y, y);
    // casinh(+inf + i inf) = +inf + i pi/4, (x + i inf) = +inf + i pi/2,
    // (+inf + iy) = +inf + i0
    return GA_C(ga_copysign(ga_highest<F>(), x), ga_arctan2(y, ga_absolute(x)));
}
// numpy: casinh(NaN + i inf) = +-inf + i NaN with the NaN's sign, and
// casin(+-inf + i NaN) = NaN +- i inf likewise
template <class F> GA_D GA_C ga_arcsin(GA_C a) {
    if (!ga_isfinite(a)) {
        const GA_C s = ga_arcsinh_special(-a.im, a.re, -ga_copysign(ga_highest<F>(), a.im));
        return GA_C(s.im, -s.re);
    }
    return ga_arcsin_kahan(a);
}
template <class F> GA_D GA_C ga_arcsinh(GA_C a) {
    if (!ga_isfinite(a))
        return ga_arcsinh_special(a.re, a.im, ga_copysign(ga_highest<F>(), a.re));
    const GA_C s = ga_arcsin_kahan(GA_C(-a.im, a.re));
    return GA_C(s.im, -s.re);
}
template <class F> GA_D GA_C ga_arccos(GA_C a) {
    const F x = a.re, y = a.im;
    if (!ga_isfinite(a)) {
        // G.6.1.1: cacos(NaN + i inf) = NaN - i inf, cacos(+-inf + i NaN) = NaN +- i inf
        // (numpy: conj's sign, the NaN's negated), cacos(+-0 + i NaN) = pi/2 + i NaN
        if (x != x) return GA_C(x, ga_isinf(y) ? -y : x);
        if (y != y) {
            if (ga_isinf(x)) return GA_C(y, -ga_copysign(ga_highest<F>(), y));
            return GA_C(x == (F)0 ? (F)1.57079632679489661923 : y, y);
        }
        // cacos(+inf + i inf) = pi/4 - i inf, (-inf + i inf) = 3pi/4 - i inf,
        // (+inf + iy) = +0 - i inf, (-inf + iy) = pi - i inf, (x + i inf) = pi/2 - i inf
        return GA_C(ga_arctan2(ga_absolute(y), x), ga_copysign(ga_highest<F>(), -y));
    }
    const GA_C p = ga_sqrt(GA_C((F)1 - x, -y)), q = ga_sqrt(GA_C((F)1 + x, y));
    return GA_C((F)2 * ga_arctan2(p.re, q.re), ga_arcsinh(q.re * p.im - q.im * p.re));
}
template <class F> GA_D GA_C ga_arccosh(GA_C a) {
    const F x = a.re, y = a.im;
    if (!ga_isfinite(a)) {
        // G.6.2.1: cacosh(NaN + i inf) = cacosh(+-inf + i NaN) = +inf + i NaN;
        // cacosh(+-0 + i NaN) = NaN + i pi/2 as numpy and the array API
        // (C99: NaN + i NaN)
        const F inf = ga_highest<F>(), pi_2 = (F)1.57079632679489661923;
        if (x != x) return GA_C(ga_isinf(y) ? inf : x, x);
        if (y != y) return GA_C(ga_isinf(x) ? inf : y, x == (F)0 ? pi_2 : y);
        // cacosh(+inf + i inf) = +inf + i pi/4, (-inf + i inf) = +inf + i 3pi/4,
        // (+inf + iy) = +inf + i0, (-inf + iy) = +inf + i pi, (x + i inf) = +inf + i pi/2
        return GA_C(inf, ga_arctan2(y, x));
    }
    const GA_C p = ga_sqrt(GA_C(x - (F)1, y)), q = ga_sqrt(GA_C(x + (F)1, y));
    return GA_C(ga_arcsinh(p.re * q.re + p.im * q.im), (F)2 * ga_arctan2(p.im, q.re));
}
// arctanh z = (log1p(z) - log1p(-z)) / 2, in real arithmetic; beyond 2^60
// (2^500 for double), where |z|^2 overflows, 1/z + i pi/2 to working
// precision.  `open` is catanh(NaN + i inf)'s real part.
template <class F> GA_D GA_C ga_arctanh_open(F x, F y, F open) {
    const F ax = ga_absolute(x), big = (F)(sizeof(F) == 8 ? 0x1p500 : 0x1p60);
    const F pi_2 = (F)1.57079632679489661923;
    if (!(ax <= big && ga_absolute(y) <= big)) {
        // G.6.2.3: catanh(+0 + i NaN) = +0 + i NaN, catanh(+inf + i NaN) = +0 + i NaN
        if (y != y) return GA_C(x == (F)0 ? x : ga_isinf(x) ? ga_copysign((F)0, x) : y, y);
        // catanh(NaN + i inf) = +-0 + i pi/2
        if (x != x) return ga_isinf(y) ? GA_C(open, ga_copysign(pi_2, y)) : GA_C(x, x);
        // catanh(+inf + iy) = catanh(x + i inf) = +0 + i pi/2, and 1/z's real part
        // beyond big
        const F h = ga_hypot(x, y);
        return GA_C(ga_isinf(h) ? ga_copysign((F)0, x) : x / h / h, ga_copysign(pi_2, y));
    }
    if (ax == (F)1 && y == (F)0) return GA_C(ga_copysign(ga_highest<F>(), x), y);
    const F d = ((F)1 - ax) * ((F)1 - ax) + y * y;
    const F re = (F)0.25 * ga_log1p((F)4 * ax / d);
    const F im = (F)0.5 * ga_arctan2((F)2 * y, ((F)1 - x) * ((F)1 + x) - y * y);
    return GA_C(ga_copysign(re, x), im);
}
// numpy: catanh(NaN + i inf) = +-0 + i pi/2 with the NaN's sign, and
// catan(+-inf + i NaN) = +-pi/2 +- i0 likewise
template <class F> GA_D GA_C ga_arctanh(GA_C a) {
    return ga_arctanh_open(a.re, a.im, ga_copysign((F)0, a.re));
}
template <class F> GA_D GA_C ga_arctan(GA_C a) {
    const GA_C t = ga_arctanh_open(-a.im, a.re, -ga_copysign((F)0, a.im));
    return GA_C(t.im, -t.re);
}
template <class F> GA_D GA_C ga_sigmoid(GA_C a) {
    return ga_reciprocal(GA_C((F)1, (F)0) + ga_exp(-a));
}
template <class F> GA_D GA_C ga_shfl_xor(GA_C v, int m) {
    return GA_C(ga_shfl_xor(v.re, m), ga_shfl_xor(v.im, m));
}
template <> GA_D ga_complex64 ga_lowest<ga_complex64>() {
    return ga_complex64(ga_lowest<float>(), ga_lowest<float>());
}
template <> GA_D ga_complex64 ga_highest<ga_complex64>() {
    return ga_complex64(ga_highest<float>(), ga_highest<float>());
}
template <> GA_D ga_complex128 ga_lowest<ga_complex128>() {
    return ga_complex128(ga_lowest<double>(), ga_lowest<double>());
}
template <> GA_D ga_complex128 ga_highest<ga_complex128>() {
    return ga_complex128(ga_highest<double>(), ga_highest<double>());
}
#undef GA_C

// ---- thread-block clusters (sm_90): barrier and distributed shared memory ----
GA_D void ga_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
GA_D unsigned ga_cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
GA_D unsigned ga_cluster_id() { unsigned r; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r)); return r; }
GA_D unsigned ga_cluster_count() { unsigned r; asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r)); return r; }
// Accumulators travel between blocks as 64-bit words (two for complex128).
template <class T> struct ga_words { enum { count = (sizeof(T) + 7) / 8 }; };
template <class T> union ga_word { T value; unsigned long long bits[ga_words<T>::count]; };
// Write v into the words from `slot` on.
template <class T> GA_D void ga_put_words(unsigned long long* slot, T v) {
    ga_word<T> w;
    for (int k = 0; k < ga_words<T>::count; ++k) w.bits[k] = 0;
    w.value = v;
    for (int k = 0; k < ga_words<T>::count; ++k) slot[k] = w.bits[k];
}
// Read the words from slot `local` of block `rank` of this cluster, as a T.
template <class T> GA_D T ga_cluster_read(unsigned long long* local, unsigned rank) {
    unsigned addr = (unsigned)__cvta_generic_to_shared(local), remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    ga_word<T> w;
    for (int k = 0; k < ga_words<T>::count; ++k)
        asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(w.bits[k]) : "r"(remote + 8u * k) : "memory");
    return w.value;
}

// gpuarray prelude: the device functions every generated kernel uses.
//
// What it computes: one overload set per op of gpuarray/core/ops.py (ga_<op>),
// numpy's semantics for each loop dtype (integer wrap-around, Python-style
// floor division and modulo, NaN-propagating maximum...), loads and stores
// of float16/bfloat16 storage (math runs in float; stores round to nearest
// even or stochastically), Philox4x32-10 random numbers, and the reduction
// combiners.  No system header is included so that NVRTC compiles a kernel
// in a few tens of milliseconds.
//
// Layouts: float16 and bfloat16 are stored as 16-bit patterns (ga_half,
// ga_bf16); every other dtype is its C type.
#define GA_D __device__ __forceinline__

struct __align__(2) ga_half { unsigned short bits; };
struct __align__(2) ga_bf16 { unsigned short bits; };

// ---- loads and stores ------------------------------------------------------
// Conversions work on values, never on addresses, so that vector loads and
// stores staged in register arrays stay in registers.
template <class C, class S> GA_D C ga_value(S v) { return (C)v; }
// cvt turns every NaN into the positive canonical NaN; the sign bit is put
// back (a no-op for numbers) so that signbit and copysign see numpy's -nan.
template <class C> GA_D C ga_value(ga_half h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return (C)__uint_as_float(__float_as_uint(f) | ((unsigned)(h.bits & 0x8000u) << 16));
}
template <class C> GA_D C ga_value(ga_bf16 h) { return (C)__uint_as_float(((unsigned)h.bits) << 16); }

GA_D unsigned short ga_f2h_bits(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h | (unsigned short)((__float_as_uint(f) >> 16) & 0x8000u);
}
GA_D unsigned short ga_f2bf_bits(float f) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h | (unsigned short)((__float_as_uint(f) >> 16) & 0x8000u);
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

// ---- thread-block clusters (sm_90): barrier and distributed shared memory ----
GA_D void ga_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
GA_D unsigned ga_cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
GA_D unsigned ga_cluster_id() { unsigned r; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r)); return r; }
GA_D unsigned ga_cluster_count() { unsigned r; asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r)); return r; }
// Accumulators travel between blocks as 64-bit words.
template <class T> union ga_word { T value; unsigned long long bits; };
template <class T> GA_D unsigned long long ga_to_word(T v) { ga_word<T> w; w.bits = 0; w.value = v; return w.bits; }
// Read the word in slot `local` of block `rank` of this cluster, as a T.
template <class T> GA_D T ga_cluster_read(unsigned long long* local, unsigned rank) {
    unsigned addr = (unsigned)__cvta_generic_to_shared(local), remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    ga_word<T> w;
    asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(w.bits) : "r"(remote) : "memory");
    return w.value;
}

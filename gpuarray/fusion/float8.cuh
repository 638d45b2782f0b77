// gpuarray float8: the 8-bit float storage formats float8_e4m3fn and float8_e5m2.
//
// What it computes: exact decoding of the two formats into float; encoding
// of a float with round-to-nearest-even, bit-exact with ml_dtypes' astype
// (numpy's reference for these dtypes); the loads and stores of generated
// kernels (ga_value, ga_conv), the rounding of an explicit astype
// (ga_round_fp8e4m3/e5m2), nextafter and spacing in the formats' own units,
// and stochastic rounding into them.  Integer code only: no sm_89 cvt
// instruction, since the prelude is also built for sm_80.
//
// Formats (ml_dtypes' and the OCP FP8 specification's): sign, exponent,
// mantissa.  e4m3fn: 4 exponent bits (bias 7), 3 mantissa bits, no
// infinities, S.1111.111 the only NaN, largest 448; |x| above 464 (halfway
// to the 480 the NaN pattern took) and the infinities become NaN, 464
// itself rounds to the even 448.  e5m2: float16's upper byte, 5 exponent
// bits (bias 15), 2 mantissa bits, infinities, largest 57344; from 61440
// (halfway to 65536) up a value rounds to infinity.
//
// NaN: a NaN keeps its sign bit both ways, as numpy keeps -nan (the sign
// is a bit move here, unlike the cvt of float16, so GA_KEEP_NAN_SIGN does
// not apply); its payload is dropped as ml_dtypes drops it: e4m3fn has one
// NaN, e5m2 stores S.11111.10, and both decode to float's quiet NaN.
//
// A double is stored through float (ga_conv's (float)v): two roundings,
// as numpy's astype of a float64 array to these dtypes does (a double just
// above the midpoint of two 8-bit neighbours, closer than half a float ulp,
// rounds to the even one).  ml_dtypes' scalar constructor rounds once:
// ml_dtypes.float8_e4m3fn(1.0625 + 2**-40) is 1.125, the astype of an array
// holding that double gives 1.0.
//
// Included by prelude.cuh after GA_D, ga_value and ga_conv.  Of CUDA's
// intrinsics it uses __uint_as_float and __float_as_uint only, so that a
// host program supplying those can compile and test it.

struct __align__(1) ga_fp8e4m3 { unsigned char bits; };
struct __align__(1) ga_fp8e5m2 { unsigned char bits; };

// ---- decoding: exact --------------------------------------------------------
// A normal value's exponent and mantissa move into float's fields, rebiased;
// a subnormal is its mantissa times the smallest subnormal (exact in float).
GA_D float ga_fp8e4m3_to_float(unsigned b) {
    const unsigned mag = b & 0x7Fu;
    unsigned f = mag >= 0x08u ? (mag << 20) + (120u << 23)
                              : __float_as_uint((float)mag * 0x1p-9f);
    if (mag == 0x7Fu) f = 0x7FC00000u;
    return __uint_as_float(f | ((b & 0x80u) << 24));
}
GA_D float ga_fp8e5m2_to_float(unsigned b) {
    const unsigned mag = b & 0x7Fu;
    unsigned f = mag >= 0x04u ? (mag << 21) + (112u << 23)
                              : __float_as_uint((float)mag * 0x1p-16f);
    if (mag >= 0x7Cu) f = mag == 0x7Cu ? 0x7F800000u : 0x7FC00000u;
    return __uint_as_float(f | ((b & 0x80u) << 24));
}

// ---- encoding: round to nearest even -----------------------------------------
// The magnitude code of float bits `a` (sign cleared) in a format of MBITS
// mantissa bits and exponent bias BIAS, rounded to nearest even; above the
// format's range it runs past the largest code (callers saturate).
template <int MBITS, int BIAS> GA_D unsigned ga_fp8_magnitude(unsigned a) {
    if (a >= (unsigned)(128 - BIAS) << 23) {  // at least the smallest normal, 2^(1 - BIAS)
        const int drop = 23 - MBITS;
        const unsigned r = a + ((1u << (drop - 1)) - 1u) + ((a >> drop) & 1u);
        return (r >> drop) - ((unsigned)(127 - BIAS) << MBITS);
    }
    // subnormal: a float of exponent field e is x * 2^(e - 150) with its
    // implicit bit; count it in units of the smallest subnormal
    const int e = (int)(a >> 23), shift = 151 - BIAS - MBITS - e;
    if (shift > 25) return 0u;  // below half the smallest subnormal (float subnormals too)
    const unsigned x = (a & 0x7FFFFFu) | 0x800000u;
    return (x + (1u << (shift - 1)) - 1u + ((x >> shift) & 1u)) >> shift;
}
GA_D unsigned ga_float_to_fp8e4m3(float v) {
    const unsigned bits = __float_as_uint(v), m = ga_fp8_magnitude<3, 7>(bits & 0x7FFFFFFFu);
    // past 0x7E (448) comes the NaN code: overflow, infinities and NaN all land there
    return (m < 0x7Fu ? m : 0x7Fu) | ((bits >> 24) & 0x80u);
}
GA_D unsigned ga_float_to_fp8e5m2(float v) {
    const unsigned bits = __float_as_uint(v), a = bits & 0x7FFFFFFFu;
    // past 0x7B (57344) comes infinity: overflow and infinities land there
    const unsigned m = a > 0x7F800000u ? 0x7Eu : ga_fp8_magnitude<2, 15>(a);
    return (a > 0x7F800000u || m < 0x7Cu ? m : 0x7Cu) | ((bits >> 24) & 0x80u);
}

// ---- loads and stores ----------------------------------------------------------
template <class C> GA_D C ga_value(ga_fp8e4m3 h) { return (C)ga_fp8e4m3_to_float(h.bits); }
template <class C> GA_D C ga_value(ga_fp8e5m2 h) { return (C)ga_fp8e5m2_to_float(h.bits); }
template <> struct ga_conv<ga_fp8e4m3> {
    template <class C> static GA_D ga_fp8e4m3 to(C v) {
        ga_fp8e4m3 h;
        h.bits = (unsigned char)ga_float_to_fp8e4m3((float)v);
        return h;
    }
};
template <> struct ga_conv<ga_fp8e5m2> {
    template <class C> static GA_D ga_fp8e5m2 to(C v) {
        ga_fp8e5m2 h;
        h.bits = (unsigned char)ga_float_to_fp8e5m2((float)v);
        return h;
    }
};
// An explicit astype to fp8 rounds even when the value stays in float.
GA_D float ga_round_fp8e4m3(float v) { return ga_fp8e4m3_to_float(ga_float_to_fp8e4m3(v)); }
GA_D float ga_round_fp8e5m2(float v) { return ga_fp8e5m2_to_float(ga_float_to_fp8e5m2(v)); }

// ---- nextafter and spacing in the format's units (ml_dtypes' definitions) ------
template <bool E4M3> GA_D unsigned ga_fp8_bits(float v) {
    return E4M3 ? ga_float_to_fp8e4m3(v) : ga_float_to_fp8e5m2(v);
}
template <bool E4M3> GA_D float ga_fp8_float(unsigned b) {
    return E4M3 ? ga_fp8e4m3_to_float(b) : ga_fp8e5m2_to_float(b);
}
template <bool E4M3> GA_D bool ga_fp8_isnan(unsigned b) {
    return E4M3 ? (b & 0x7Fu) == 0x7Fu : (b & 0x7Fu) > 0x7Cu;
}
// Both values are rounded to the format, then the pattern moves by one
// towards b; from zero the step is the smallest subnormal signed as b.
template <bool E4M3> GA_D float ga_nextafter8(float a, float b) {
    const unsigned x = ga_fp8_bits<E4M3>(a), y = ga_fp8_bits<E4M3>(b);
    if (ga_fp8_isnan<E4M3>(x) || ga_fp8_isnan<E4M3>(y)) return __uint_as_float(0x7FC00000u);
    const float to = ga_fp8_float<E4M3>(y);
    if (x == y) return to;
    if ((x & 0x7Fu) == 0u) return (y & 0x7Fu) == 0u ? to : ga_fp8_float<E4M3>(0x01u | (y & 0x80u));
    const bool down = (x & 0x7Fu) > (y & 0x7Fu) || ((x ^ y) & 0x80u);
    return ga_fp8_float<E4M3>(down ? x - 1u : x + 1u);
}
GA_D float ga_nextafter_fp8e4m3(float a, float b) { return ga_nextafter8<true>(a, b); }
GA_D float ga_nextafter_fp8e5m2(float a, float b) { return ga_nextafter8<false>(a, b); }
// The step away from zero, signed as x (spacing(-0.0) is negative); e4m3fn
// has nothing past its largest value: NaN signed as x there, as ml_dtypes
GA_D float ga_spacing_fp8e4m3(float a) {
    const unsigned x = ga_fp8_bits<true>(a);
    if ((x & 0x7Fu) == 0x7Eu) return __uint_as_float(0x7FC00000u | ((x & 0x80u) << 24));
    const float v = ga_fp8_float<true>(x);
    return ga_nextafter8<true>(v, (x & 0x80u) ? -448.0f : 448.0f) - v;
}
GA_D float ga_spacing_fp8e5m2(float a) {
    const float v = ga_fp8_float<false>(ga_fp8_bits<false>(a)), inf = __uint_as_float(0x7F800000u);
    return ga_nextafter8<false>(v, (__float_as_uint(v) >> 31) ? -inf : inf) - v;
}

// ---- stochastic rounding -----------------------------------------------------------
// Round float v to nbits mantissa bits of an 8-bit format whose smallest
// normal value is 2^emin, up or down at random with the probability that
// makes it unbiased (cpu.stochastic_round mirrors it).  In the normal range
// random bits are added below the kept ones and the rest truncated, as
// ga_stochastic_round does; below 2^emin the kept units are fixed,
// 2^(emin - nbits), and the value counted in them gets 32 random bits of a
// unit (so values far below the smallest subnormal round up with their
// probability too, to 2^-32 of a unit).  A value rounded past the largest
// finite one stores as the format's overflow: inf for e5m2, NaN for e4m3fn.
GA_D float ga_stochastic_round8(float v, unsigned noise, int nbits, int emin) {
    const unsigned bits = __float_as_uint(v), a = bits & 0x7FFFFFFFu;
    const int e = (int)(a >> 23);
    if (e == 0xFF) return v;
    if (e - 127 >= emin) {
        const int drop = 23 - nbits;
        const unsigned long long wide = (unsigned long long)bits + (noise & ((1u << drop) - 1u));
        return __uint_as_float((unsigned)((wide >> drop) << drop));
    }
    // a = x * 2^(max(e, 1) - 150); a unit is 2^(emin - nbits): x / 2^shift units
    const unsigned long long x = e ? (a & 0x7FFFFFu) | 0x800000u : a;
    const int shift = emin - nbits + 150 - (e ? e : 1);
    // the value in units, as a 32.32 fixed-point number (the fraction truncated
    // to 32 bits where shift > 32)
    const unsigned long long fixed = shift <= 32 ? x << (32 - shift) : shift < 56 ? x >> (shift - 32) : 0ull;
    const unsigned units = (unsigned)((fixed + noise) >> 32);
    const float unit = __uint_as_float((unsigned)(127 + emin - nbits) << 23);
    return __uint_as_float(__float_as_uint((float)units * unit) | (bits & 0x80000000u));
}

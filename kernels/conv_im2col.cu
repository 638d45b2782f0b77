// conv_im2col.cu: the gathers that turn a convolution into GEMMs.
//
// What it computes.  im2col copies every filter window of the input into
// one row of a matrix, so that fprop is col @ F^T and update is E^T @ col
// (GEMMs on the tensor cores, gpuarray/gemm):
//     col[(n, m, p, q), (t, r, s, c)] = I[n, m*str_d + t*dil_d - pad_d,
//                                         p*str_h + r*dil_h - pad_h,
//                                         q*str_w + s*dil_w - pad_w, c]
// and 0 where the position falls in the padding.  col2im is its adjoint,
// the second half of bprop (dcol = E @ F first, in fp32):
//     grad_I[n, d, h, w, c] = alpha * sum of dcol[(n, m, p, q), (t, r, s, c)]
//                             over the taps with d = m*str_d + t*dil_d - pad_d
//                             (and likewise along h and w)
//                             + beta * grad_I[n, d, h, w, c]   (beta != 0 only)
// It gathers (one thread per input element, a fixed tap order), so it
// needs no atomics and gives the same bits on every run.
//
// Layouts (cuDNN names): I and grad_I (N, D, H, W, C), channel innermost,
// contiguous; col and dcol (N*M*P*Q, T*R*S*C) row-major with row stride ld
// >= T*R*S*C (the caller pads rows to 16 bytes so that the GEMMs can read
// them with the copy engine; im2col writes zeros into the padding); dcol
// is fp32, whatever the layer's dtype.
//
// Parameters: ConvArgs below -- src, dst, the number of images N (a chunk
// of the batch: the caller offsets src and dst), sizes D H W, M P Q, T R S,
// strides, paddings and dilations per axis (depth, height, width), C, ld,
// alpha and beta (col2im), then the FastDiv multiply-shifts (fastdiv.cuh)
// of the divisors that split a thread's index: its row's vector groups
// (im2col: ld / V; col2im: C / V), Q, P, C, S, R, W, H and the strides.
// With hardware divisions (ten per thread and 16-byte store in im2col) the
// gathers were instruction-bound.
//
// Launch shape: grid (X, Y, 1) with any X, Y >= 1, block (256, 1, 1), no
// shared memory; blocks stride over the images along y and over one
// image's elements along x, V consecutive channels (im2col: columns) per
// thread.  Index math within an image is 32-bit (the launcher refuses
// images whose col rows hold 2**31 elements or more).  V > 1 needs
// C % V == 0, ld % V == 0 and 16-byte aligned tensors (im2col: V = 16
// bytes of elements; col2im: V = 4, one 16-byte load of fp32); the
// launcher checks, else V = 1.
//
// Kernels: ga_im2col_b{2,4}_v{1,V} (the copy moves bits: 2-byte elements
// for float16 and bfloat16, 4-byte for float32), ga_im2col_b{2,4}_n{V}
// (C % V != 0: V columns per thread gathered one by one, one 16-byte
// store; needs a 16-byte aligned col), ga_col2im_{f16,bf16,f32}_v{1,4} and
// ga_col2im_{f16,bf16,f32}_p (C <= 4: one thread per input position, all
// its channels; the launcher counts positions, not elements).
#include "convert.cuh"
#include "fastdiv.cuh"

#define CONV_THREADS 256  // launch bounds (256, 4): left to itself ptxas aimed at 32 registers and spilled

struct ConvArgs {
    const void *src;  // im2col: I; col2im: dcol (fp32)
    void *dst;        // im2col: col; col2im: grad_I
    long long N;      // images
    int size[3];      // D H W
    int out[3];       // M P Q
    int filter[3];    // T R S
    int stride[3];
    int pad[3];
    int dil[3];
    int C;
    int ld;           // elements from one col row to the next (>= T*R*S*C)
    float alpha, beta;
    FastDiv by_groups;  // V-element groups of a thread's row: ld / V (im2col), C / V (col2im)
    FastDiv by_q, by_p, by_c, by_s, by_r, by_w, by_h;
    FastDiv by_stride[3];
};

// V consecutive elements moved as one access
template <typename T, int V> struct alignas(sizeof(T) * V) Pack { T v[V]; };

// Thread index g of an image's col rows (V columns each) -> its first
// column, and the output position (m, pp, q) of its row.
__device__ __forceinline__ int col_position(const ConvArgs &p, int g, int groups, int V, int &q, int &pp,
                                            int &m) {
    const int row = divide(p.by_groups, g), mp = divide(p.by_q, row);
    q = row - mp * p.out[2];
    m = divide(p.by_p, mp);
    pp = mp - m * p.out[1];
    return (g - row * groups) * V;
}

// Column -> filter tap (t, r, s) and channel c.
__device__ __forceinline__ void col_tap(const ConvArgs &p, int column, int &t, int &r, int &s, int &c) {
    const int tap = divide(p.by_c, column), rs = divide(p.by_s, tap);
    c = column - tap * p.C;
    s = tap - rs * p.filter[2];
    t = divide(p.by_r, rs);
    r = rs - t * p.filter[1];
}

// im2col: one thread per V columns of one col row (one image's output
// position).  Consecutive threads take consecutive columns -- channels,
// then taps -- so stores are coalesced and a tap's channels are read
// contiguously; columns past T*R*S*C (the row's padding) get zeros.
template <typename T, int V> __device__ void im2col(const ConvArgs &p) {
    const T *in = static_cast<const T *>(p.src);
    T *col = static_cast<T *>(p.dst);
    const int groups = p.ld / V;
    const int taps = p.filter[0] * p.filter[1] * p.filter[2];
    const int width = taps * p.C;
    const int per_image = p.out[0] * p.out[1] * p.out[2] * groups;
    const int image = p.size[0] * p.size[1] * p.size[2] * p.C;
    for (long long n = blockIdx.y; n < p.N; n += gridDim.y)
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < per_image; g += gridDim.x * blockDim.x) {
        int q, pp, m, t, r, s, c;
        const int column = col_position(p, g, groups, V, q, pp, m);
        col_tap(p, column, t, r, s, c);
        const int d = m * p.stride[0] + t * p.dil[0] - p.pad[0];
        const int h = pp * p.stride[1] + r * p.dil[1] - p.pad[1];
        const int w = q * p.stride[2] + s * p.dil[2] - p.pad[2];
        Pack<T, V> pack;
        if (column < width && (unsigned)d < (unsigned)p.size[0] && (unsigned)h < (unsigned)p.size[1] &&
            (unsigned)w < (unsigned)p.size[2]) {
            pack = *reinterpret_cast<const Pack<T, V> *>(
                in + n * image + ((d * p.size[1] + h) * p.size[2] + w) * p.C + c);
        } else {
            #pragma unroll
            for (int i = 0; i < V; ++i) pack.v[i] = T(0);
        }
        *reinterpret_cast<Pack<T, V> *>(col + (n * per_image + g) * (long long)V) = pack;
    }
}

// im2col for channel counts that do not fill a vector (the first layer's
// C = 3): one thread per V consecutive columns of a row -- one 16-byte
// store -- gathered element by element, the (tap, channel) position
// advanced like an odometer rather than divided out per element.  Rows
// are padded to a multiple of V (ld % V == 0), so a thread's columns never
// leave its row.
template <typename T, int V> __device__ void im2col_narrow(const ConvArgs &p) {
    const T *in = static_cast<const T *>(p.src);
    T *col = static_cast<T *>(p.dst);
    const int groups = p.ld / V;
    const int width = p.filter[0] * p.filter[1] * p.filter[2] * p.C;
    const int per_image = p.out[0] * p.out[1] * p.out[2] * groups;
    const int image = p.size[0] * p.size[1] * p.size[2] * p.C;
    for (long long n = blockIdx.y; n < p.N; n += gridDim.y)
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < per_image; g += gridDim.x * blockDim.x) {
        int q, pp, m, t, r, s, c;
        const int column = col_position(p, g, groups, V, q, pp, m);
        col_tap(p, column, t, r, s, c);
        const T *base = in + n * image;
        Pack<T, V> pack;
        #pragma unroll
        for (int i = 0; i < V; ++i) {
            const int d = m * p.stride[0] + t * p.dil[0] - p.pad[0];
            const int h = pp * p.stride[1] + r * p.dil[1] - p.pad[1];
            const int w = q * p.stride[2] + s * p.dil[2] - p.pad[2];
            const bool inside = column + i < width && (unsigned)d < (unsigned)p.size[0] &&
                                (unsigned)h < (unsigned)p.size[1] && (unsigned)w < (unsigned)p.size[2];
            pack.v[i] = inside ? base[((d * p.size[1] + h) * p.size[2] + w) * p.C + c] : T(0);
            if (++c == p.C) {
                c = 0;
                if (++s == p.filter[2]) {
                    s = 0;
                    if (++r == p.filter[1]) { r = 0; ++t; }
                }
            }
        }
        *reinterpret_cast<Pack<T, V> *>(col + (n * per_image + g) * (long long)V) = pack;
    }
}

// First and last output along axis a that a tap-0 window holding input
// position x could start at: x = o*str + tap*dil - pad for some tap.
__device__ __forceinline__ void taps_range(const ConvArgs &p, int a, int x, int &lo, int &hi) {
    const int extent = (p.filter[a] - 1) * p.dil[a] + 1;
    const int first = x + p.pad[a] - extent + 1;
    lo = first <= 0 ? 0 : divide(p.by_stride[a], first + p.stride[a] - 1);
    hi = min(divide(p.by_stride[a], x + p.pad[a]), p.out[a] - 1);
}

// The tap along axis a at which the window starting at offset x (input
// position minus output position times stride) holds the position:
// (x + pad) / dil when that divides exactly.  Unit dilation, the common
// case, needs no division: the loops of col2im are instruction-bound.
__device__ __forceinline__ bool tap_of(const ConvArgs &p, int a, int x, int &tap) {
    tap = x + p.pad[a];
    if (p.dil[a] == 1) return true;
    if (tap % p.dil[a]) return false;
    tap /= p.dil[a];
    return true;
}

// alpha * sum (+ beta * old when beta != 0), rounded once into T
template <typename T> __device__ __forceinline__ T scaled(const ConvArgs &p, float sum, T old) {
    float v = __fmul_rn(p.alpha, sum);
    if (p.beta != 0.f) v = __fadd_rn(v, __fmul_rn(p.beta, to_f32(old)));
    return from_f32<T>(v);
}

// col2im: one thread per V channels of one input position.  For each axis
// the outputs o whose window can hold the position are walked; the tap
// is (x + pad - o*str) / dil when that divides exactly.
template <typename T, int V> __device__ void col2im(const ConvArgs &p) {
    const float *dcol = static_cast<const float *>(p.src);
    T *grad = static_cast<T *>(p.dst);
    const int groups = p.C / V;
    const int per_image = p.size[0] * p.size[1] * p.size[2] * groups;
    const int row = p.ld;  // elements from one dcol row to the next
    const int rows = p.out[0] * p.out[1] * p.out[2];
    for (long long n = blockIdx.y; n < p.N; n += gridDim.y)
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < per_image; g += gridDim.x * blockDim.x) {
        const int position = divide(p.by_groups, g), c = (g - position * groups) * V;
        const int dh = divide(p.by_w, position), w = position - dh * p.size[2];
        const int d = divide(p.by_h, dh), h = dh - d * p.size[1];
        int lo[3], hi[3];
        taps_range(p, 0, d, lo[0], hi[0]);
        taps_range(p, 1, h, lo[1], hi[1]);
        taps_range(p, 2, w, lo[2], hi[2]);
        float acc[V];
        #pragma unroll
        for (int i = 0; i < V; ++i) acc[i] = 0.f;
        const float *image = dcol + n * rows * (long long)row;
        #pragma unroll 1
        for (int m = lo[0]; m <= hi[0]; ++m) {
            int td;
            if (!tap_of(p, 0, d - m * p.stride[0], td)) continue;
            #pragma unroll 1
            for (int pp = lo[1]; pp <= hi[1]; ++pp) {
                int th;
                if (!tap_of(p, 1, h - pp * p.stride[1], th)) continue;
                #pragma unroll 1
                for (int q = lo[2]; q <= hi[2]; ++q) {
                    int tw;
                    if (!tap_of(p, 2, w - q * p.stride[2], tw)) continue;
                    const int tap = (td * p.filter[1] + th) * p.filter[2] + tw;
                    const Pack<float, V> x = *reinterpret_cast<const Pack<float, V> *>(
                        image + ((m * p.out[1] + pp) * p.out[2] + q) * row + tap * p.C + c);
                    #pragma unroll
                    for (int i = 0; i < V; ++i) acc[i] += x.v[i];
                }
            }
        }
        T *dst = grad + (n * per_image + g) * (long long)V;
        Pack<T, V> out;
        Pack<T, V> old = {};
        if (p.beta != 0.f) old = *reinterpret_cast<const Pack<T, V> *>(dst);
        #pragma unroll
        for (int i = 0; i < V; ++i) out.v[i] = scaled<T>(p, acc[i], old.v[i]);
        *reinterpret_cast<Pack<T, V> *>(dst) = out;
    }
}

// col2im for at most 4 channels (the first layer's C = 3): one
// thread per input position and all its C <= 4 channels, so the walk over
// the taps runs once per position rather than once per channel, and each
// tap reads the position's C neighbouring floats of one dcol row.  The
// taps are summed in the same order as col2im's: the same bits.
template <typename T> __device__ void col2im_position(const ConvArgs &p) {
    const float *dcol = static_cast<const float *>(p.src);
    T *grad = static_cast<T *>(p.dst);
    const int positions = p.size[0] * p.size[1] * p.size[2];
    const int row = p.ld;
    const int rows = p.out[0] * p.out[1] * p.out[2];
    for (long long n = blockIdx.y; n < p.N; n += gridDim.y)
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < positions; g += gridDim.x * blockDim.x) {
        const int dh = divide(p.by_w, g), w = g - dh * p.size[2];
        const int d = divide(p.by_h, dh), h = dh - d * p.size[1];
        int lo[3], hi[3];
        taps_range(p, 0, d, lo[0], hi[0]);
        taps_range(p, 1, h, lo[1], hi[1]);
        taps_range(p, 2, w, lo[2], hi[2]);
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        const float *image = dcol + n * rows * (long long)row;
        #pragma unroll 1
        for (int m = lo[0]; m <= hi[0]; ++m) {
            int td;
            if (!tap_of(p, 0, d - m * p.stride[0], td)) continue;
            #pragma unroll 1
            for (int pp = lo[1]; pp <= hi[1]; ++pp) {
                int th;
                if (!tap_of(p, 1, h - pp * p.stride[1], th)) continue;
                #pragma unroll 1
                for (int q = lo[2]; q <= hi[2]; ++q) {
                    int tw;
                    if (!tap_of(p, 2, w - q * p.stride[2], tw)) continue;
                    const int tap = (td * p.filter[1] + th) * p.filter[2] + tw;
                    const float *x = image + ((m * p.out[1] + pp) * p.out[2] + q) * row + tap * p.C;
                    #pragma unroll
                    for (int i = 0; i < 4; ++i)
                        if (i < p.C) acc[i] += x[i];
                }
            }
        }
        T *dst = grad + (n * positions + g) * (long long)p.C;
        #pragma unroll
        for (int i = 0; i < 4; ++i)
            if (i < p.C) dst[i] = scaled<T>(p, acc[i], p.beta != 0.f ? dst[i] : T(0.f));
    }
}

#define IM2COL(NAME, T, V) \
    extern "C" __global__ void __launch_bounds__(CONV_THREADS, 4) NAME(const ConvArgs p) { im2col<T, V>(p); }
IM2COL(ga_im2col_b2_v1, unsigned short, 1)
IM2COL(ga_im2col_b2_v8, unsigned short, 8)
IM2COL(ga_im2col_b4_v1, float, 1)
IM2COL(ga_im2col_b4_v4, float, 4)

#define IM2COL_NARROW(NAME, T, V) \
    extern "C" __global__ void __launch_bounds__(CONV_THREADS, 4) NAME(const ConvArgs p) { im2col_narrow<T, V>(p); }
IM2COL_NARROW(ga_im2col_b2_n8, unsigned short, 8)
IM2COL_NARROW(ga_im2col_b4_n4, float, 4)

#define COL2IM(NAME, T, V) \
    extern "C" __global__ void __launch_bounds__(CONV_THREADS, 4) NAME(const ConvArgs p) { col2im<T, V>(p); }
COL2IM(ga_col2im_f16_v1, __half, 1)
COL2IM(ga_col2im_f16_v4, __half, 4)
COL2IM(ga_col2im_bf16_v1, __nv_bfloat16, 1)
COL2IM(ga_col2im_bf16_v4, __nv_bfloat16, 4)
COL2IM(ga_col2im_f32_v1, float, 1)
COL2IM(ga_col2im_f32_v4, float, 4)

#define COL2IM_POSITION(NAME, T) \
    extern "C" __global__ void __launch_bounds__(CONV_THREADS, 4) NAME(const ConvArgs p) { col2im_position<T>(p); }
COL2IM_POSITION(ga_col2im_f16_p, __half)
COL2IM_POSITION(ga_col2im_bf16_p, __nv_bfloat16)
COL2IM_POSITION(ga_col2im_f32_p, float)

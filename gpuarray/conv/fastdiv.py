"""Host side of kernels/fastdiv.cuh: a runtime divisor as a multiply and a shift.

In: a divisor d >= 1.  Out: the ``(magic, shift, d)`` fields of the kernels'
``FastDiv`` struct (packed with :data:`FORMAT`), which the pooling kernels
and the implicit-GEMM convolution producer use instead of a hardware
integer division (a subroutine of ~20 dependent instructions).
"""

#: struct format of one FastDiv: magic, shift (unsigned), d
FORMAT = "IIi"


def fast_divisor(d):
    """``(magic, shift, d)`` of kernels/fastdiv.cuh's FastDiv: for 0 <= n < 2**31,
    ``n // d == (n * magic) >> shift`` with ``shift = 31 + ceil(log2 d)``."""
    shift = 31 + (d - 1).bit_length()
    return -(-(1 << shift) // d), shift, d

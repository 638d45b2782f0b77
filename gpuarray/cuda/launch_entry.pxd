# Declarations of launch_entry.pyx that compiled callers cimport: the
# dispatcher's replay calls PatchedLaunch.launch as a C method, skipping
# the Python call (argument tuple and parsing) on every cached assignment.

from libc.stdint cimport int64_t, uintptr_t

# what a hole holds, each written as 8 bytes at its offset: an address or
# counter (the value plus a byte delta), a float64, an integer's 64-bit
# pattern, a bool as 0/1, a complex value's real or imaginary part
cdef enum HoleKind:
    ADD, DOUBLE, INT, BOOL, REAL, IMAG

cdef struct Hole:
    Py_ssize_t offset, slot
    int kind
    int64_t delta

cdef class PatchedLaunch:
    cdef uintptr_t function
    cdef unsigned int grid[3]
    cdef unsigned int block[3]
    cdef unsigned int smem
    cdef bytes template
    cdef Hole* holes
    cdef Py_ssize_t nholes, top_slot

    cdef int _patch(self, char* buf, list values) except -1
    cpdef int launch(self, list values, uintptr_t stream) except? -1

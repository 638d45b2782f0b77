# Cython declarations for stream.py, read only when setup.py compiles it
# (gpuarray/compiled.py).  The functions every launch asks are C functions
# that compiled callers (the dispatcher's replay) cimport: no Python call
# per launch.

cpdef current()
cpdef launch_handle()
cpdef capturing()

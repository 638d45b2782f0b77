"""The array model every factory shares, with no knowledge of any device.

dtypes (the 13 element types and numpy 2's promotion), shapes (broadcast,
axes, views), ops (the op table), operand (the fields every operand
has), signatures (the ints naming structures), optree (lazy
expressions), scalars (Python and numpy scalars as operands, NEP 50), array
(:class:`~gpuarray.core.array.Tensor`), backend (the factory interface)
and functions (the numpy-style math API).  Imports nothing else of the
package.
"""

"""Checks of the integer arguments users pass: sizes, counts, strides.

In: a name (for the message) and a value.  Out: the value as a Python int,
or the exception numpy-style code raises -- TypeError for anything that is
not an integer (bool included, which Python would take as 0 or 1),
ValueError below the allowed minimum.  (The memory pool keeps its own
check of a byte count, inline: it runs on every allocation.)
"""
import operator

import numpy as np


def count(name, value, minimum=0):
    """``value`` as a Python int (any integer type but bool), at least ``minimum``
    (0: a size; 1: a dimension, a stride; None: no bound).

    Raises
    ------
    TypeError
        ``"{name} must be an integer, not {type}"``.
    ValueError
        ``"{name} must not be negative, got {value}"`` (minimum 0) or
        ``"{name} must be positive, got {value}"`` (minimum 1).
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    if minimum is not None and value < minimum:
        bound = {0: "not be negative", 1: "be positive"}.get(minimum, f"be at least {minimum}")
        raise ValueError(f"{name} must {bound}, got {value}")
    return value


def integer(name, value):
    """:func:`count` without a bound."""
    return count(name, value, None)


def positive(name, value):
    """:func:`count` of at least 1 (``"{name} must be positive, got {value}"``)."""
    return count(name, value, 1)

"""CuPy's parameter lists: ``"float32 x, T y"`` -> typed parameters, and the
dtypes a call binds them to.

In: a parameter string (comma-separated ``[raw] type name`` items, where
``type`` is a numpy dtype name or a one-word placeholder such as ``T``)
and, at a call, the dtypes (or weak Python scalar types) of the operands.
Out: :class:`Param` tuples, and the resolved dtype of every parameter.
Malformed strings raise ValueError when the kernel is made; operands that
do not fit the parameters raise TypeError when it is called.
"""
import re
from dataclasses import dataclass

import numpy as np

from ..core import dtypes

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Param:
    """One parameter: its name, its type (a dtype, or a placeholder name) and ``raw``."""

    name: str
    dtype: object
    placeholder: str
    raw: bool


def parse(text, what):
    """The parameters of ``text``, as CuPy writes them.

    A type numpy does not know, or of one letter, is a placeholder.

    Raises
    ------
    ValueError
        An item that is not ``[raw] type name``, a name used twice, or a
        name that is not a C identifier.
    TypeError
        A numpy dtype this library does not support, or a complex one.
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string, not {type(text).__name__}")
    params = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        words = item.split()
        raw = words[0] == "raw"
        words = words[1:] if raw else words
        if len(words) != 2 or not all(_NAME.match(w) for w in words):
            raise ValueError(f"Syntax error: {item!r} in {what} (expected '[raw] type name')")
        kind, name = words
        params.append(_param(name, kind, raw))
    names = [p.name for p in params]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"Duplicate parameter name: {name}")
    return tuple(params)


def _param(name, kind, raw):
    if len(kind) == 1 or not _numpy_knows(kind):
        return Param(name, None, kind, raw)  # a placeholder, bound at each call
    return Param(name, _real_dtype(dtypes.as_dtype(kind), name), "", raw)


def _real_dtype(dtype, name):
    """``dtype``, refused when complex: the prelude's ga_complex has no mixed
    arithmetic with C's numbers, so user code written as for CuPy's
    complex<T> would not compile."""
    if dtype.kind == "c":
        raise TypeError(f"user kernels do not take complex parameters yet ({name}: {dtype})")
    return dtype


def _numpy_knows(kind):
    try:
        np.dtype(kind)
    except TypeError:
        return kind in ("bfloat16", "float8_e4m3fn", "float8_e5m2")
    return True


def bind(params, operand_types):
    """The dtype of each input parameter and the placeholders' bindings.

    ``operand_types`` holds a dtype per array operand and a Python type
    (int, float, bool) per Python scalar, which takes its parameter's type.

    Raises
    ------
    TypeError
        A placeholder bound to two dtypes or to a complex one, one bound by
        nothing but Python scalars, or an operand that cannot be cast to its parameter's type
        under numpy's "same_kind" rule.
    """
    bound = {}
    for p, t in zip(params, operand_types):
        if p.placeholder and isinstance(t, np.dtype):
            if bound.setdefault(p.placeholder, t) != t:
                raise TypeError(f"Type is mismatched. {p.name}: {t}, {p.placeholder}: "
                                f"{bound[p.placeholder]}")
    resolved = []
    for p, t in zip(params, operand_types):
        dtype = p.dtype if p.dtype is not None else bound.get(p.placeholder)
        if dtype is None:
            raise TypeError(f"Cannot determine the type of {p.placeholder} ({p.name}): "
                            "only Python scalars are bound to it")
        _real_dtype(dtype, p.name)
        if isinstance(t, np.dtype) and not np.can_cast(t, dtype, "same_kind"):
            raise TypeError(f"Cannot cast {p.name} from {t} to {dtype} with casting rule "
                            "'same_kind'")
        resolved.append(dtype)
    return tuple(resolved), bound


def bind_output(param, bound, dtype):
    """Bind the output's placeholder to ``dtype`` (the given ``out``'s) when no
    input binds it, as CuPy binds placeholders from the outputs too.

    Raises
    ------
    TypeError
        ``dtype`` is complex.
    """
    if param.placeholder and param.placeholder not in bound:
        bound[param.placeholder] = _real_dtype(dtype, param.name)


def output_dtype(param, bound):
    """The dtype of the output parameter under the placeholders' bindings.

    Raises
    ------
    TypeError
        The output's placeholder is bound by no input.
    """
    if param.dtype is not None:
        return param.dtype
    if param.placeholder not in bound:
        raise TypeError(f"Cannot determine the type of {param.placeholder} ({param.name}): "
                        "no input parameter has it")
    return bound[param.placeholder]

"""JSON as its standard has it: a figure that is not a number (NaN or ±inf: a loss gone non-finite, the
standard error of a benchmark of one item) is written as null, where Python's json writes NaN, which jq,
JavaScript's JSON.parse, Go and most readers refuse."""

import json
import math


def finite(value):
    """`value` with every float that is not finite, at any depth of dicts, lists and tuples, made None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def dumps(value, **settings) -> str:
    """json.dumps of finite(value); never writes NaN or Infinity."""
    return json.dumps(finite(value), allow_nan=False, **settings)

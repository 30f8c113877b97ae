"""How deeply a JSON or TOML text nests, measured before it is parsed: Python's json and tomllib parse by recursion,
so a 5,000-deep `[[[[...]]]]` is a RecursionError (or worse, a crash) rather than a message. Every file wirespeed
reads (run records, snapshots, the cluster file) is refused past MAX_DEPTH, far past any file wirespeed writes
(a run record nests 6 deep).
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64  # arrays and objects (tables) inside one another

# Strings (where brackets are text) and TOML comments are taken out before the brackets are counted.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_TOML_SKIPPED = re.compile(
    r'"""[\s\S]*?(?:"""|$)|\'\'\'[\s\S]*?(?:\'\'\'|$)|"(?:[^"\\\n]|\\.)*"?|\'[^\'\n]*\'?|#[^\n]*'
)
_BRACKETS = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class Malformed(ValueError):
    """A text nested past MAX_DEPTH (or a parsed value of the wrong kind); the message is one line."""


def _deepest(text: str) -> int:
    return max(accumulate(_STEP[m.group()] for m in _BRACKETS.finditer(text)), default=0)


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in a JSON text (brackets inside strings do not count)."""
    return _deepest(_JSON_STRING.sub("", text))


def toml_depth(text: str) -> int:
    """The deepest nesting of arrays and inline tables in a TOML text (a `[table]` header counts 1, `[[array]]` 2)."""
    return _deepest(_TOML_SKIPPED.sub("", text))


def check_json_depth(text: str, limit: int = MAX_DEPTH) -> None:
    if json_depth(text) > limit:
        raise Malformed(f"nested deeper than {limit} levels: not a file wirespeed reads")


def check_toml_depth(text: str, limit: int = MAX_DEPTH) -> None:
    if toml_depth(text) > limit:
        raise Malformed(f"nested deeper than {limit} levels: not a file wirespeed reads")


_KINDS: dict[type, str] = {dict: "a JSON object", list: "a JSON array", str: "a string", bool: "true or false",
                           int: "a number", float: "a number", type(None): "null"}  # fmt: skip


def kind_of(value: Any) -> str:
    """`a JSON array`, `null`, ...: what a value is, as a one-line refusal names it."""
    return next((name for kind, name in _KINDS.items() if isinstance(value, kind)), type(value).__name__)


def loads_json(text: str, expect: type | None = dict, limit: int = MAX_DEPTH) -> Any:
    """`text` parsed as JSON, refused (ValueError, one line) when it nests past `limit` or its top level is not of
    the `expect`ed type (None: any)."""
    check_json_depth(text, limit)
    try:
        data = json.loads(text)
    except RecursionError:  # the depth check above makes this unreachable; kept as a last guard
        raise Malformed(f"nested deeper than {limit} levels: not a file wirespeed reads") from None
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if expect is not None and not isinstance(data, expect):
        raise Malformed(f"{kind_of(data)} where {kind_of(expect())} was expected")
    return data

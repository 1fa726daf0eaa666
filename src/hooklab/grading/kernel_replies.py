"""Reading what a kernel answers the grader: the text of a user expression in an execute reply, the probe's JSON
answer in it, and an observation sent on the observation channel; anything else reads as None.
"""

from __future__ import annotations

import ast
import json
from typing import Any


def expression_text(reply: dict[str, Any] | None, name: str) -> str | None:
    """The text a user expression of an execute request gave (the str it evaluated to), or None."""
    value = (reply or {}).get("content", {}).get("user_expressions", {}).get(name, {})
    if not isinstance(value, dict) or value.get("status") != "ok":
        return None
    try:
        text = ast.literal_eval(value["data"]["text/plain"])
    except (ValueError, SyntaxError, KeyError, TypeError, RecursionError, MemoryError):
        return None
    return text if isinstance(text, str) else None


def observation(line: str) -> Any:
    """One observation as the kernel sent it (a JSON object), or None where the line is not one."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def probe_answer(reply: dict[str, Any] | None) -> dict[str, Any] | None:
    """The probe's JSON answer in an execute reply's user_expressions, or None."""
    text = expression_text(reply, "probe")
    try:
        answer = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        return None
    return answer if isinstance(answer, dict) else None

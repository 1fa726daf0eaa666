"""Reading what a kernel sends the grader on its observation channel: the probe's JSON answer and an observation;
anything else reads as None.
"""

from __future__ import annotations

import json
from typing import Any


def _object(text: str | None) -> dict[str, Any] | None:
    """``text`` as a JSON object, or None."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def observation(line: str) -> Any:
    """One observation as the kernel sent it (a JSON object), or None where the line is not one."""
    return _object(line)


def probe_answer(text: str | None) -> dict[str, Any] | None:
    """The probe's answer as the kernel's agent sent it (a JSON object with its digest), or None."""
    answer = _object(text)
    return answer if answer is not None and isinstance(answer.get("digest"), str) else None

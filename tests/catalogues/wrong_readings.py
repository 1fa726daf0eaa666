"""Wrong readings: answers a student would write after misreading an exercise's text.

A wrong reading is right on the exercise's visible example and wrong elsewhere in what the text specifies:
other shapes and sizes (a batch of 1 included), the dtypes it names, the model itself a leaf, nested
containers, shared modules, registration order that is not call order, a second call, ties, negatives and
zero, defaults other than the usual ones, keyword arguments. Each is written from the exercise's markdown
(its numbered requirements), not from its tests; each must fail its test cell (hidden tests included) with a
message that says what is wrong, as the :class:`Wrong` answers of ``wrong_answers.py`` do, whose list these
join.
"""

from __future__ import annotations

from catalogues.honest_answers import (  # noqa: F401  (the assignments the readings are written for)
    APPLICATIONS,
    APPLY,
    AUTOGRAD_FUNCTION,
    BACKWARD_HOOKS,
    MODULE_BASICS,
    _cell,
)
from catalogues.wrong_answers import Wrong


def readings() -> list[Wrong]:
    return []

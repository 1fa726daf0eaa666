"""Wrong readings: answers a student would write after misreading an exercise's text.

A wrong reading is right on the exercise's visible example and wrong elsewhere in what the text specifies:
other shapes and sizes (a batch of 1 included), the dtypes it names, the model itself a leaf, nested
containers, shared modules, registration order that is not call order, a second call, ties, negatives and
zero, defaults other than the usual ones, keyword arguments. Each is written from the exercise's markdown
(its numbered requirements) and its input space (:mod:`catalogues.input_space`), not from its tests; each must
fail its test cell (hidden tests included) with a message that says what is wrong, as the :class:`Wrong`
answers of ``wrong_answers.py`` do, whose list these join. They live beside each notebook's input space, in
:mod:`catalogues.exercises`.
"""

from __future__ import annotations

from catalogues.wrong_answers import Wrong


def readings() -> list[Wrong]:
    from catalogues import exercises  # its modules import Wrong from wrong_answers, which imports this

    return [wrong for module in exercises.MODULES.values() for wrong in module.readings()]

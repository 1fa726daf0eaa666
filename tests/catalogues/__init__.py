"""The submissions the tests grade, as data: honest answers in many styles (``honest_answers``), plausible wrong
answers (``wrong_answers``), attacks on the grader (``attacks``), and the classes built from them: the corpus of
``hooklab autograde``'s tests (``corpus``) and the trusted-grading class (``trusted_class``)."""

"""The run's seed: ``hooklab autograde`` draws one per run, or takes it from this environment variable to draw a
logged run's hidden inputs again (``grading.json`` keeps it). It stays in the grading process: a kernel gets,
at test time, only a seed derived from it for each cell (:func:`hooklab.observations.begin`). (A module of its
own: the grading command reads it before it imports torch.)"""

SEED_VARIABLE = "HOOKLAB_SEED"

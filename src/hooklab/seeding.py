"""Where the hidden tests' random inputs come from in a grading kernel: the grader gives each kernel a seed
in this environment variable and logs it (``grading.json``); :func:`hooklab.checks.random_generator` draws
from it, so a run's inputs are drawn again by grading with the same seed. (A module of its own: the
grading command reads it before it imports torch.)"""

SEED_VARIABLE = "HOOKLAB_SEED"

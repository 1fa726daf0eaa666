"""Mutation testing of the pack's hidden tests (``make mutants``): see :mod:`mutation.score`."""

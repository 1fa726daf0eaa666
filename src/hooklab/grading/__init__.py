"""Grade a whole class with one command, on top of nbgrader's gradebook, autograde and feedback."""

"""The lab's one error type: what failed, said so that a person can act on it."""


class LabError(Exception):
    """A lab step that failed; the message names the step and the cause."""

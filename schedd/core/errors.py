"""Errors of the engine's own consistency, kept out of the compiled modules (mypyc cannot
compile a subclass of RuntimeError; code that raises them can be compiled)."""

from __future__ import annotations


class IllegalTransition(RuntimeError):
    """A job was moved along a transition the state machine does not have: an engine bug."""

"""The one error an action answers with: why it cannot be planned or dispatched, in one line."""

from __future__ import annotations


class ActionError(Exception):
    """An action that cannot be planned or dispatched, with a one-line reason."""


class ReadOnly(ActionError):
    """Read-only mode: nothing is ever sent."""

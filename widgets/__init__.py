"""Textual widgets, one per module, each rendering a slice of `RunState` (issue 4)."""

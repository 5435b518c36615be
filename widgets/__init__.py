"""Textual widgets: one per module, each rendering a slice of a `runtop.view.view.View`."""

"""Pure parsers: text and JSON lines in, typed events out (`runtop.parsers.events`).

No file I/O, no clock, no Textual; stdlib only (docs/design.md).
"""

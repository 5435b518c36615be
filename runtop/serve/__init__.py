"""`runtop serve`'s web server: a door with a lock (`door.py`, `token.py`) in front of one
`runtop tui` child per browser session (`session.py`) (docs/design.md, "`runtop serve`: a door
with a lock")."""

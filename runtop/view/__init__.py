"""The frozen views: what a screen renders (`view.View`: the state, the probes' readings, the
verdict, the clock), published by the engine with a version per slice (`publish.py`), and the
short histories of the system readings the panes draw (`history.py`). Widgets read these and
nothing else (docs/architecture.md, "Layers")."""

"""The Textual app: screens, bindings and the wiring of sources to widgets."""

"""Simulated runs for `runtop demo` and the tests (a user's clone has no sample runs)."""

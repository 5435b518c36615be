"""The system probes: `seam.SystemProbe` (a probe declares its name, period, deadline, how it
samples, where its reading goes and which slice of the view it fills), the thread that asks one
under a deadline (`runner.py`), and one module per probe on the seam. Adding one is a module
here and one line in `registry.PROBES` (docs/architecture.md, "Adding a probe")."""

"""What a verdict becomes: the check-in (`report.py`, appended by `checkin.py`), the status
JSON (`report_json.py`), what to tell the researcher and when (`notify.py`), its delivery
(`delivery.py`, `alerting.py`, `terminal_notify.py`) and the hang forensics saved for a
maintainer (`forensics.py`). Each takes the verdict the engine judged."""

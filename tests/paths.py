"""Where the tests' shared files are (tests/corpus/, tests/recordings/, the repository's root),
wherever a test module sits under tests/."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

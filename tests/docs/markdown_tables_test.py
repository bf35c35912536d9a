#!/usr/bin/python3
"""markdown_tables.py fails a table that does not render or repeats its header, and passes a good one."""

import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).with_name("markdown_tables.py")

GOOD = "| a | b |\n|---|---:|\n| 1 | 2 |\n\n| c |\n|---|\n| 3 |\n"
REPEATED_HEADER = "| a | b |\n|---|---:|\n| a | b |\n|---|---:|\n| 1 | 2 |\n"
BLANK_LINE_INSIDE = "| a | b |\n|---|---:|\n| 1 | 2 |\n\n| 3 | 4 |\n"
FENCED = "```\n| a |\n|---|\n|---|\n```\n"


def check(text: str) -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "t.md").write_text(text, encoding="utf-8")
        done = subprocess.run([sys.executable, str(SCRIPT), root], capture_output=True, text=True)
        return done.returncode, done.stdout


def main() -> int:
    failures = []
    for name, text, want_rc, want_text in [
        ("good tables", GOOD, 0, "1 passed, 0 failed"),
        ("repeated header", REPEATED_HEADER, 1, "t.md:4: a second delimiter row"),
        ("blank line inside", BLANK_LINE_INSIDE, 1, "table row did not render"),
        ("delimiters in fenced code", FENCED, 0, "1 passed, 0 failed"),
    ]:
        rc, out = check(text)
        if rc != want_rc or want_text not in out:
            failures.append(f"{name}: exit {rc}, output:\n{out}")
    for failure in failures:
        print(failure)
    print(f"{4 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

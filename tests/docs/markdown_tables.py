#!/usr/bin/python3
"""Every Markdown table in the repository renders, with one header row.

A blank line inside a Markdown table ends it, and the rows after it show as raw
pipes. This renders every tracked *.md file with Python-Markdown (Debian's
python3-markdown, the "tables" and "fenced_code" extensions), drops the <pre>
blocks (code may hold pipes), and fails when a line of the HTML still starts
with '|' (or '<p>|', a paragraph that starts with one): a table that did not
render. It also fails a table whose source holds a second delimiter row
(|---|...): a header pasted twice renders as a data row of column names.

Usage: /usr/bin/python3 tests/docs/markdown_tables.py REPO_ROOT
Prints one line per failure (file:line and the offending line) and closes with
"N passed, M failed"; exits 1 when any file failed.
"""

import html
import re
import subprocess
import sys
from pathlib import Path

import markdown

PRE_BLOCK = re.compile(r"<pre\b.*?</pre>", re.DOTALL)


def tracked_markdown(root: Path) -> list[Path]:
    """The *.md files git tracks under root, or every *.md file when root is not a git checkout."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", "*.md"],
                                check=True, capture_output=True).stdout
        names = [n for n in listed.decode().split("\0") if n]
        return sorted(root / n for n in names if (root / n).is_file())
    except (OSError, subprocess.CalledProcessError):
        # Not a checkout (or git refuses it): every *.md file outside hidden, build and
        # node_modules folders.
        def skipped(part: str) -> bool:
            return part.startswith(".") or part.startswith("build") or part == "node_modules"
        return sorted(p for p in root.rglob("*.md")
                      if not any(skipped(part) for part in p.relative_to(root).parts[:-1]))


TAG = re.compile(r"<[^>]+>")


def plain(line: str) -> str:
    """A line with Markdown's and HTML's markup taken out, to match HTML back to its source."""
    line = html.unescape(TAG.sub("", line))
    return re.sub(r"\s+", " ", re.sub(r"[`\\*_]", "", line)).strip()


def source_line(text: str, html_line: str) -> int:
    """The first line of the Markdown source that holds the start of an unrendered row."""
    probe = plain(html_line)[:40]
    for number, line in enumerate(text.splitlines(), start=1):
        if plain(line).startswith(probe):
            return number
    return 0


def starts_with_pipe(line: str) -> bool:
    """Whether an HTML line starts with '|', also as the first line of a paragraph (<p>|)."""
    line = line.lstrip()
    if line.startswith("<p>"):
        line = line[3:].lstrip()
    return line.startswith("|")


def unrendered_rows(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    rendered = markdown.markdown(text, extensions=["tables", "fenced_code"])
    rendered = PRE_BLOCK.sub("", rendered)
    return [(source_line(text, line), line.strip())
            for line in rendered.splitlines() if starts_with_pipe(line)]


DELIMITER_ROW = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def repeated_delimiters(path: Path) -> list[tuple[int, str]]:
    """Delimiter rows after the first of their table (fenced code left out)."""
    found: list[tuple[int, str]] = []
    in_fence = False
    delimiters_in_table = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_fence or not stripped.startswith("|"):
            delimiters_in_table = 0
            continue
        if DELIMITER_ROW.match(stripped):
            delimiters_in_table += 1
            if delimiters_in_table > 1:
                found.append((number, stripped))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: markdown_tables.py REPO_ROOT", file=sys.stderr)
        return 2
    root = Path(argv[1]).resolve()
    files = tracked_markdown(root)
    passed = failed = 0
    for path in files:
        rows = unrendered_rows(path)
        repeated = repeated_delimiters(path)
        if not rows and not repeated:
            passed += 1
            continue
        failed += 1
        for number, row in rows:
            shown = row if len(row) <= 120 else row[:117] + "..."
            print(f"{path.relative_to(root)}:{number}: table row did not render: {shown}")
        for number, row in repeated:
            print(f"{path.relative_to(root)}:{number}: a second delimiter row in one table "
                  f"(a header row repeated?): {row[:80]}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

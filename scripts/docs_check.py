#!/usr/bin/env python3
"""Checks the documentation's links and the index of docs/decisions.md.

- The index of docs/decisions.md (the list between its title and its first
  `##` section) must name every `##` and `###` section, in order, each by
  a link to the section's anchor; an entry whose anchor no heading makes
  fails, and so does a section the index leaves out.
- Every relative link in docs/*.md and README.md must point to a file or
  folder that exists and, with a `#anchor`, to an anchor a heading of that
  Markdown file makes (GitHub's rule: lower case, punctuation dropped,
  spaces to hyphens, `-1`, `-2`, ... after repeats).

Prints what is wrong and exits 1, else prints a summary and exits 0.
Run from anywhere: `python3 scripts/docs_check.py`.
"""
import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECISIONS = ROOT / "docs" / "decisions.md"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
# An inline link or image: [text](target) or [text](<target> "title").
INLINE_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def lines_outside_code(text):
    """(line number, line) for every line not inside a fenced code block."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield number, line
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not line.strip()[len(match.group(1)):].strip():
            fence = None


def plain_text(markdown):
    """A heading's text as rendered: code spans keep their text, links their
    text, emphasis markers and inline HTML tags go."""
    parts, last = [], 0
    for span in CODE_SPAN.finditer(markdown):
        parts.append(rendered_outside_code(markdown[last : span.start()]))
        parts.append(span.group(2).strip())
        last = span.end()
    parts.append(rendered_outside_code(markdown[last:]))
    return "".join(parts).strip()


def rendered_outside_code(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)


def slug(heading_text):
    """GitHub's anchor for a heading's rendered text (without the repeat suffix)."""
    out = []
    for char in plain_text(heading_text).lower():
        if char in " ":
            out.append("-")
        elif char in "-_" or char.isalnum() or unicodedata.category(char).startswith("M"):
            out.append(char)
    return "".join(out)


def headings(path):
    """[(level, text, anchor, line)] of a Markdown file's ATX headings."""
    found, seen = [], {}
    for number, line in lines_outside_code(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        anchor = base
        if base in seen:
            seen[base] += 1
            anchor = f"{base}-{seen[base]}"
            while anchor in seen:
                seen[base] += 1
                anchor = f"{base}-{seen[base]}"
        seen.setdefault(anchor, 0)
        found.append((len(match.group(1)), match.group(2), anchor, number))
    return found


_anchors = {}


def anchors_of(path):
    if path not in _anchors:
        _anchors[path] = {anchor for _, _, anchor, _ in headings(path)}
    return _anchors[path]


def links(path):
    """[(line, text, target)] of a Markdown file's links outside code."""
    found = []
    for number, line in lines_outside_code(path.read_text(encoding="utf-8")):
        spans = [match.span() for match in CODE_SPAN.finditer(line)]
        for match in INLINE_LINK.finditer(line):
            if not any(start <= match.start() < end for start, end in spans):
                found.append((number, match.group(1), match.group(2).strip("<>")))
        definition = None if spans and spans[0][0] == 0 else REFERENCE_DEF.match(line)
        if definition:
            found.append((number, "", definition.group(1).strip("<>")))
    return found


def check_links(path, problems):
    count = 0
    for number, _, target in links(path):
        if not target or SCHEME.match(target) or target.startswith("//"):
            continue
        count += 1
        where = f"{path.relative_to(ROOT)}:{number}"
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            problems.append(f"{where}: link to {target}: no file {file_part}")
            continue
        if anchor and destination.suffix == ".md" and destination.is_file():
            if anchor not in anchors_of(destination):
                problems.append(
                    f"{where}: link to {target}: no heading of "
                    f"{destination.relative_to(ROOT)} makes #{anchor}"
                )
        elif anchor and not destination.is_file():
            problems.append(f"{where}: link to {target}: #{anchor} on a folder")
    return count


def check_index(problems):
    """The index of docs/decisions.md against its `##`/`###` sections."""
    text = DECISIONS.read_text(encoding="utf-8")
    sections = [(text_, anchor, line) for level, text_, anchor, line in headings(DECISIONS) if level in (2, 3)]
    if not sections:
        problems.append("docs/decisions.md: no ## or ### sections")
        return 0
    first_section = sections[0][2]
    entries = []
    for number, label, target in links(DECISIONS):
        if number < first_section and target.startswith("#"):
            entries.append((number, label, target[1:]))
    by_anchor = {anchor: (text_, line) for text_, anchor, line in sections}
    indexed = [anchor for _, _, anchor in entries]
    for number, label, anchor in entries:
        if anchor not in by_anchor:
            problems.append(f"docs/decisions.md:{number}: index entry {label!r} (#{anchor}) has no section")
        elif plain_text(label) != plain_text(by_anchor[anchor][0]):
            problems.append(
                f"docs/decisions.md:{number}: index entry {label!r} links to the section "
                f"{plain_text(by_anchor[anchor][0])!r}"
            )
    for text_, anchor, line in sections:
        if anchor not in indexed:
            problems.append(f"docs/decisions.md:{line}: section {plain_text(text_)!r} (#{anchor}) is missing from the index")
    for anchor in {a for a in indexed if indexed.count(a) > 1}:
        problems.append(f"docs/decisions.md: the index lists #{anchor} more than once")
    in_both = [anchor for _, anchor, _ in sections if anchor in indexed]
    listed = [anchor for anchor in dict.fromkeys(indexed) if anchor in by_anchor]
    if in_both != listed:
        for position, (want, got) in enumerate(zip(in_both, listed)):
            if want != got:
                problems.append(
                    f"docs/decisions.md: the index is out of order: entry {position + 1} is #{got}, "
                    f"the section there is #{want}"
                )
                break
    return len(sections)


def main():
    problems = []
    sections = check_index(problems)
    files = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
    count = sum(check_links(path, problems) for path in files)
    if problems:
        print("\n".join(problems))
        print(f"docs_check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(
        f"docs_check: the index of docs/decisions.md lists its {sections} sections in order; "
        f"{count} relative links in {len(files)} files resolve"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

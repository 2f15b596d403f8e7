"""The README stays a short guide with the two quick-start commands, and the user docs speak to users."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# words of how the project is worked on, which belong to no user page (measurement logs: benchmarks/NOTES.md)
WORK_PROCESS = re.compile(r"\bstops? \d+|\bsessions?\b|\blent\b|\bissues? \d+|\bthe issue\b|\bissue's\b", re.I)


def test_the_readme_is_a_short_guide_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    assert "pip install -e . && python -m trackgen_env demo\n" in readme
    assert 'pip install -e ".[dev]" && python -m pytest -q\n' in readme


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: p.name)
def test_user_docs_hold_no_work_process_words(page):
    found = [f"line {n}: {m.group(0)!r}" for n, line in enumerate(page.read_text().splitlines(), 1)
             for m in WORK_PROCESS.finditer(line)]
    assert not found, f"{page.relative_to(ROOT)}: {found}"

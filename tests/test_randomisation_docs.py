"""docs/randomisation-and-curricula.md: every example of the page runs as written."""

import pathlib
import re
import runpy

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "randomisation-and-curricula.md"


def test_the_pages_examples_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 5
    for i, block in enumerate(blocks):
        path = tmp_path / f"randomisation_example_{i}.py"
        path.write_text(block)
        runpy.run_path(str(path))

"""docs/envs.md: every example of the page runs as written (from a fresh interpreter's view:
each block imports what it uses)."""

import pathlib
import re
import runpy

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "envs.md"


def test_the_pages_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # RecordVideo writes its folder here
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 6
    for i, block in enumerate(blocks):
        path = tmp_path / f"envs_example_{i}.py"
        path.write_text(block)
        runpy.run_path(str(path), run_name="__main__")

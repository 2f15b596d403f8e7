"""The layer rule of DESIGN.md: each module imports only its own layer and the ones below,
and no module of the package hides a package import inside a function (to dodge a cycle)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "trackgen_env"

# the layers of DESIGN.md ("Layers"): a folder under trackgen_env -> its layer; core/ holds
# layers 0 and 1, so its layer-1 modules have their own entries ("core/seeding")
LAYERS = {
    "core": 0, "core/seeding": 1, "core/polyline": 1, "core/stats": 1, "core/gate_stats": 1,
    "pipeline": 2,
    "generators": 3,
    "tools": 4,
    "course": 5,
    "envs": 6,
    "integrations": 7, "demos": 7, "__main__": 7,
}
#: the only modules of the package that are not in a layer's folder
TOP_LEVEL = {"__init__.py", "__main__.py"}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel == Path("__init__.py"):
            continue  # the package's front door imports every layer to export it
        yield rel, path


def _target(rel: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """What ``node`` imports from trackgen_env, as paths under it (``core/checks/check_int``, ``envs``)."""
    if isinstance(node, ast.Import):
        return ["/".join(a.name.split(".")[1:]) for a in node.names if a.name.startswith("trackgen_env.")]
    if node.level == 0:
        if not node.module or not (node.module + ".").startswith("trackgen_env."):
            return []
        full = node.module.split(".")[1:]
    else:
        parts = list(rel.parts[:-1])  # the importing module's package path
        up = node.level - 1
        if up > len(parts):
            return []
        full = (parts[: len(parts) - up] if up else parts) + (node.module.split(".") if node.module else [])
    return ["/".join(full + [a.name]) for a in node.names]  # a name may be a module ("from ..core import seeding")


def _layer(path: str) -> int | None:
    """The layer of ``path`` under trackgen_env (``core/seeding/SeedState``): its module's entry, else its folder's."""
    parts = path.removesuffix(".py").split("/")
    return LAYERS.get("/".join(parts[:2]), LAYERS.get(parts[0]))


def _own(rel: Path) -> int | None:
    return _layer(rel.with_suffix("").as_posix())


@pytest.mark.parametrize("rel,path", list(_modules()), ids=lambda v: str(v) if isinstance(v, Path) else "")
def test_imports_run_downward_only(rel, path):
    own = _own(rel)
    tree = ast.parse(path.read_text())
    upward = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _target(rel, node):
                if (layer := _layer(name)) is not None and layer > own:
                    upward.append(f"line {node.lineno}: {name} (layer {layer})")
    assert not upward, f"{rel} (layer {own}) imports upward: {upward}"


@pytest.mark.parametrize("rel,path", list(_modules()), ids=lambda v: str(v) if isinstance(v, Path) else "")
def test_no_package_import_is_hidden_in_a_function(rel, path):
    tree = ast.parse(path.read_text())
    hidden = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and _target(rel, node):
                    hidden.append(f"line {node.lineno} in {fn.name}()")
    assert not hidden, f"{rel} imports package modules inside functions: {hidden}"


def test_every_module_has_a_layer():
    assert [rel.as_posix() for rel, _ in _modules() if _own(rel) is None] == []


def test_the_folders_are_the_layers():
    """Beside the layers' folders the package holds only its front door and its command line."""
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert set(flat) <= TOP_LEVEL, f"modules outside a layer's folder: {sorted(set(flat) - TOP_LEVEL)}"
    folders = {key.split("/")[0] for key in LAYERS} - {p.removesuffix(".py") for p in TOP_LEVEL}
    assert folders == {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}


def _readme_layout() -> dict[str, int]:
    """README's Layout block as {module path relative to the package: the layer its ``# N:`` heading names}.

    A line indented by two spaces names a top-level module (``__main__.py``) or opens a folder
    (``pipeline/``); a deeper line that starts with ``name/`` opens a subfolder of the folder open;
    every other ``*.py`` name belongs to the folder open. The block ends at the first unindented line.
    """
    readme = (PACKAGE.parent / "README.md").read_text()
    section = readme[readme.index("## Layout"):]
    lines = re.search(r"```\ntrackgen_env/\n(.*?)```", section, re.S).group(1).splitlines()
    listed: dict[str, int] = {}
    layer = folder = None
    for line in lines:
        if not line.startswith(" "):
            break
        stripped = line.strip()
        if heading := re.match(r"# (\d+):", stripped):
            layer, folder = int(heading.group(1)), None
            continue
        indent = len(line) - len(line.lstrip())
        first = stripped.split()[0]
        if indent == 2:
            folder = first.rstrip("/") if first.endswith("/") else None
        elif first.endswith("/"):
            folder = f"{folder.split('/')[0]}/{first.rstrip('/')}"
        for name in re.findall(r"(?<![\w./])(\w+\.py)\b", stripped):
            path = name if indent == 2 and not first.endswith("/") else f"{folder}/{name}"
            assert path not in listed, f"README's Layout lists {path} twice"
            listed[path] = layer
    return listed


def test_readme_layout_lists_every_module_in_its_layer():
    listed = _readme_layout()
    modules = {rel.as_posix() for rel, _ in _modules() if rel.name != "__init__.py"}
    assert sorted(set(listed) - modules) == [], "README's Layout lists modules that do not exist"
    assert sorted(modules - set(listed)) == [], "README's Layout omits these modules"
    wrong = {path: (layer, _layer(path)) for path, layer in listed.items() if layer != _layer(path)}
    assert not wrong, f"README's Layout puts these modules under another layer than LAYERS (README, LAYERS): {wrong}"


@pytest.mark.parametrize("rel,path", list(_modules()), ids=lambda v: str(v) if isinstance(v, Path) else "")
def test_no_private_name_is_imported_from_another_module(rel, path):
    """A name with a leading underscore is its module's own: another module that needs it
    needs a public name (a module imported under a private alias is fine)."""
    tree = ast.parse(path.read_text())
    private = [f"line {node.lineno}: {alias.name}" for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and _target(rel, node)
               for alias in node.names if alias.name.startswith("_") and alias.name != "__version__"]
    assert not private, f"{rel} imports private names of other modules: {private}"

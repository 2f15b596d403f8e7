"""The layer rule of DESIGN.md: each module imports only its own layer and the ones below,
and no module of the package hides a package import inside a function (to dodge a cycle)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "trackgen_env"

# top-level name under trackgen_env -> layer (DESIGN.md, "Layers")
LAYERS = {
    "capture": 0, "exec": 0, "checks": 0, "types": 0, "kernel_cache": 0, "env_loop": 0, "warp_log": 0,
    "seeding": 1, "polyline": 1, "stats": 1, "gate_stats": 1, "laptime": 1,
    "pipeline": 2,
    "generators": 3,
    "tools": 4,
    "course": 5,
    "envs": 6, "render": 6, "viewer": 6,
    "integrations": 7, "demos": 7, "viz": 7, "__main__": 7,
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel == Path("__init__.py"):
            continue  # the package's front door imports every layer to export it
        yield rel, path


def _target(rel: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """Top-level names under trackgen_env that ``node`` imports."""
    if isinstance(node, ast.Import):
        return [a.name.split(".")[1] for a in node.names if a.name.startswith("trackgen_env.")]
    if node.level == 0:
        if node.module and node.module.startswith("trackgen_env."):
            return [node.module.split(".")[1]]
        if node.module == "trackgen_env":
            return [a.name for a in node.names]
        return []
    parts = list(rel.parts[:-1])  # the importing module's package path
    up = node.level - 1
    if up > len(parts):
        return []
    base = parts[: len(parts) - up] if up else parts
    names = (node.module.split(".") if node.module else [])
    full = base + names
    if full:
        return [full[0]]
    return [a.name for a in node.names]  # "from .. import x" at the package root


def _top(rel: Path) -> str:
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


@pytest.mark.parametrize("rel,path", list(_modules()), ids=lambda v: str(v) if isinstance(v, Path) else "")
def test_imports_run_downward_only(rel, path):
    own = LAYERS[_top(rel)]
    tree = ast.parse(path.read_text())
    upward = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _target(rel, node):
                if name in LAYERS and LAYERS[name] > own:
                    upward.append(f"line {node.lineno}: {name} (layer {LAYERS[name]})")
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
    assert {_top(rel) for rel, _ in _modules()} <= set(LAYERS)


def _readme_layout() -> dict[str, int]:
    """README's Layout block as {module path relative to the package: the layer its ``# N:`` heading names}.

    A line indented by two spaces names a top-level module (``capture.py``) or opens a folder
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
    wrong = {path: (layer, LAYERS[path.split("/")[0].removesuffix(".py")]) for path, layer in listed.items()
             if layer != LAYERS[path.split("/")[0].removesuffix(".py")]}
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

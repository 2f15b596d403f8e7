"""The layer rule of DESIGN.md: each module imports only its own layer and the ones below,
and no module of the package hides a package import inside a function (to dodge a cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "trackgen_env"

# top-level name under trackgen_env -> layer (DESIGN.md, "Layers")
LAYERS = {
    "capture": 0, "exec": 0, "checks": 0, "types": 0, "kernel_cache": 0, "env_loop": 0, "warp_log": 0,
    "seeding": 1, "polyline": 1, "stats": 1, "laptime": 1,
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

"""Layers 0 and 1 of the package: recording, argument checks, the data model (layer 0);
seeds, closed-polyline geometry and course statistics (layer 1).

Imports nothing, so that ``trackgen_env/__init__.py`` quiets Warp's log before any module
of the package loads Warp."""

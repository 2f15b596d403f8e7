"""Demos of ``python -m trackgen_env demo --env <name>``: each module has ``run(args) -> exit code``."""

"""The benchmarks of trackgen_env (``python benchmarks/run.py``); see benchmarks/NOTES.md."""

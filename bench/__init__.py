"""Benchmark of the workflow manager against a zero-overhead asyncio driver.

`python -m bench [--quick] [--write-readme] [--profile DIR]`: see bench/README.md.
"""

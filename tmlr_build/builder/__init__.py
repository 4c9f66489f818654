"""The parent process of a build: requests and specs become jobs, workers run them, artifacts are written.

Nothing here imports Triton or ``tmlr_build.compile`` at import time: compiles run in worker processes.
"""

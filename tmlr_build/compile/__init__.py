"""The compile side: runs only in worker processes and imports Triton (any supported release: triton_api.py).

From any stage (Python, TTIR, TTGIR, LLIR, PTX, cubin) to a cubin and the facts metadata.json records.
Nothing here imports ``tmlr_build.builder``, ``tmlr_build.passdump`` or the CLI.
"""

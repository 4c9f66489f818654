"""The compile side: runs only in worker processes and imports Triton (3.3.1).

From any stage (Python, TTIR, TTGIR, LLIR, PTX, cubin) to a cubin and the facts metadata.json records.
Nothing here imports ``tmlr_build.builder``, ``tmlr_build.passdump`` or the CLI.
"""

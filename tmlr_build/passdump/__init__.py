"""Triton's MLIR pass dump: splitting it into one file per pass, and building from one of those files.

``--dump-passes`` itself is an option of the compile worker; finishing a mid-make_ttgir file runs
in a worker too (``tmlr_build.compile.resume_ttgir``).
"""

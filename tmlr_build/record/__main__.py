"""``python -m tmlr_build.record -o SPEC -- CMD ARGS...``: the same as ``tmlr-build record``."""
import sys

from .cli import main

sys.exit(main(sys.argv[1:]))

"""``python -m tmlr_build`` and the ``tmlr-build`` command.

The compile processes' server starts first: it imports Triton while this process imports the CLI,
parses the command line and plans the build.
"""
from __future__ import annotations

import contextlib
import signal
import sys


def main() -> int:
    # Ctrl-C (SIGINT) stops the build also when tmlr-build was started with SIGINT ignored, as a
    # script's background job is: Python then raises no KeyboardInterrupt, and tmlr-build would go on
    # waiting for its compile workers.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    args = sys.argv[1:]
    if args[:1] == ["record"]:  # tmlr-build record -o SPEC -- CMD: runs a workload, compiles nothing (docs/record.md)
        from .record.cli import main as record

        return record(args[1:])
    if not args or "--version" in args or any(arg == "--python" or arg.startswith("--python=") for arg in args):
        # nothing to compile here: a bare run prints the usage, --version answers, or another interpreter compiles
        from .cli import main as run_cli

        return run_cli()
    try:
        from .builder import server

        with contextlib.suppress(OSError):  # the build starts it again, and reports why it cannot
            server.start(quiet=True)
        from .cli import main as run_cli
    except KeyboardInterrupt:  # Ctrl-C while starting: as cli.main reports it later
        print("tmlr-build: interrupted", file=sys.stderr)
        return 130
    return run_cli()


if __name__ == "__main__":
    sys.exit(main())

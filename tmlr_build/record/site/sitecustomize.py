"""Loaded at start-up by every Python process of a command that ``tmlr-build record`` runs (this folder is put
first on its PYTHONPATH, with TMLR_RECORD_SPEC naming the spec): records the process's Triton launches
(tmlr_build/record/hook.py), then loads the ``sitecustomize`` this one hides, if there is one."""
import os
import sys


def _record() -> None:
    path = os.environ.get("TMLR_RECORD_SPEC")
    if not path:
        return
    try:
        from tmlr_build.record import hook
    except ImportError as e:
        print(f"tmlr-build record: {sys.executable} cannot import tmlr_build ({e}): this process is not recorded; "
              "install tmlr into the Python the command runs", file=sys.stderr)
        return
    hook.record_process(path)


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    mine = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401 - the one this file hides
    except ModuleNotFoundError as e:
        if e.name != "sitecustomize":
            raise
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


_record()
_chain()

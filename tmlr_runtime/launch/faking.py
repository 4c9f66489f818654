"""The one home of the faking flag: True while this thread runs a torch custom op's launch function on FakeTensors to
derive its fake (``tmlr_runtime.torch_ops.custom_op``). ``torch_ops.wrap``-ped kernels and the served launches of
``tmlr_runtime.serve`` do nothing while it is set. Torch-free, so that the serving layer can ask without importing
torch; ``import tmlr_runtime`` does not import it."""
from __future__ import annotations

import threading


class _State(threading.local):
    faking = False


state = _State()


def nothing(*args: object, **kwargs: object) -> None:
    """What a launch is while faking: no launch, no check, no error (the tensors have shapes but no memory)."""

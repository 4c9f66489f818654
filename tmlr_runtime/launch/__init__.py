"""Launching one artifact: ``Kernel`` (``kernel``), the launch plan made at load (``plan``), the Python executor
of a plan (``execute``) and its compiled one (``compiled``, which runs ``_fastlaunch.c``), and the conversion of
each argument (``convert``, ``pointers``, ``streams``, ``tensordesc``)."""

"""Families: one kernel built as many variants (``dispatch``: ``KernelFamily``), the choice of a variant per call
(``choose``), of a config per autotune key (``tuning``) and the benchmarks that make it (``bench``)."""

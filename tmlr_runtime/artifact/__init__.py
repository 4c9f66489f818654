"""Reading artifact files, each once: kernel metadata, family indexes and tuning tables, checked by one set of
rules (``rules``) as the JSON Schemas in ``schema/`` say; heuristic expressions; cubin symbols (``elf``).
What tmlr_build uses of it is its contract (docs/contributing.md)."""

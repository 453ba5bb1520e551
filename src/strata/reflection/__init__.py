"""Derived memories: reflection and consolidation (``reflect``), made by a model from other
memories with the prompts and answers in ``reflector``; the write path enforces what they may
cite (:mod:`strata.write.derive`)."""

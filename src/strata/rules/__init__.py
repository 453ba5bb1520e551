"""Memory rules: an owner's policy for what is kept under a path subtree -- ``capture``
(on, off, review_only), ``exclude`` (categories and patterns), ``include`` (categories always
captured), ``instructions`` for the model extractor and ``retention_days``.

``store`` keeps them (versioned, audited) and resolves the rule that decides for a path (the
most specific one); ``categories`` classifies statements; the write path applies them
(``strata.write.policy``) whichever entry point a memory comes in by, and lifecycle enforces
retention. This package imports nothing of the write path, ingest or the API.
"""

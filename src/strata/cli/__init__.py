"""The ``strata`` command: the local stack and operator commands (``main``), the client-side
commands (``client``), what both share (``support``) and progress bars (``progress``)."""

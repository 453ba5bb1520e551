"""The foundation every other package stands on: settings (``config``), the core's exceptions
(``errors``), shared field types (``fields``), ltree paths (``paths``), structured logs
(``logs``), AWS clients (``aws``) and a Lambda function's init (``coldstart``).

Nothing here imports anything of strata's outside this package."""

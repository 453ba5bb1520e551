"""One module per router; ``strata.api.app.create_app`` imports only those it serves."""

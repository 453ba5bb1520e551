"""The HTTP edge: FastAPI routers that parse, call one core function, and map the result."""

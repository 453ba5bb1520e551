"""Search: hybrid retrieval (``hybrid``), how it orders what it found (``ranking``), what a
question asks about (``asked``), the ``meta`` filter (``meta_filter``) and its request and
answer shapes (``models``)."""

"""The write path: the one layer through which every change to a memory passes.

Canonicalisation (``canonical``, ``values``), tombstones, duplicate and slot resolution
(``gate``), the conflict step (``conflict``), the age guard and supersession (``apply``),
serialisation (``locks``) and the edits of existing memories (``changes``) live here, and no
module outside this package writes ``memories``, ``tombstones``, ``memory_relationships`` or
``memory_history`` (tests/test_write_path_guard.py says so). The direct API (``memories``,
``review``, ``transfer``), the ingest pipeline and maintenance stand on it; it imports
nothing of theirs.
"""

"""Review: candidates held back because they contradict what is active, and the decision a
person makes about each (``queue``)."""

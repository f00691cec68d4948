"""Files: the bottom of the grader, the standard library alone.

:mod:`.safeio` reads what students submitted without trusting it (no link followed, no FIFO, size-capped)
and writes what the grader keeps atomically; :mod:`.secret` is the course's private folder (``.grader/``)
and its grading secret, from which the re-check's inputs are drawn.

Every stage may import it; it imports no other stage.
"""

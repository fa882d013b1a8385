"""Reading in parts: where parts run (:mod:`.engine`: inline, a local process pool, Dask) and
one large trace read in parts whose check states merge in order (:mod:`.trace`). A dataset
(:mod:`toolscore.dataset`) runs its parts on the same engine.

Nothing is imported here: a small trace needs none of it (multiprocessing).
"""

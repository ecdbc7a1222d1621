"""Compilers from the IR to executable code: the backend interface
(``backend``) and the backends (``numpy_backend``, ``numba_backend``), each
with its own lowering table.  The backends register themselves when
``tangentia`` is imported."""

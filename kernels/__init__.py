"""Numba kernels of cepvec (installed as ``cepvec.kernels``).

Kernels are pure functions on NumPy arrays and scalars; they import only
numpy and numba. JIT options live in ``_jit.py``. One folder or module per
path: ``linear/`` (linear maps, no edge predicates), ``trend/`` (GRETA with
one indexable edge predicate) and ``scan.py`` (predecessor scan, any edge
predicate); each package's ``__init__.py`` gives its overview and modules.
"""

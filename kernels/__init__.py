"""Numba kernels of cepvec (installed as ``cepvec.kernels``).

Kernels are pure functions on NumPy arrays and scalars; they import only
numpy and numba. JIT options live in ``_jit.py``.
"""

"""Spark adapter of cepvec (installed as ``cepvec.spark_adapter``).

Imports flow one way: ``cepvec.spark_adapter`` -> ``cepvec`` -> ``cepvec.kernels``.
"""

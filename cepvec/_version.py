"""The cepvec version (one place; the package and the Spark fingerprint read it)."""

__version__ = "0.1.0"

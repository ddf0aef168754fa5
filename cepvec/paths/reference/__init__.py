"""The reference path: the match-constructing engine (``evaluate.py``) and its run (``run.py``)."""

"""The allocator settings of cepvec/runtime/memory.py: applied on import unless the process chose."""

from __future__ import annotations

import sys

import pytest

from cepvec.runtime import memory


def _clean_env(monkeypatch):
    import os

    for k in list(os.environ):
        if k.startswith("MALLOC_") or k == "CEPVEC_MALLOC":
            monkeypatch.delenv(k)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux only")
def test_import_tunes_glibc(monkeypatch):
    _clean_env(monkeypatch)
    assert memory.tune_allocator() == "tuned"
    assert memory.STATE[0] == "tuned"


@pytest.mark.parametrize("var,value,why", [
    ("CEPVEC_MALLOC", "system", "CEPVEC_MALLOC=system"),
    ("MALLOC_ARENA_MAX", "2", "MALLOC_* set in the environment"),
])
def test_a_process_that_chose_keeps_its_allocator(monkeypatch, var, value, why):
    _clean_env(monkeypatch)
    monkeypatch.setenv(var, value)
    assert memory.tune_allocator() == why

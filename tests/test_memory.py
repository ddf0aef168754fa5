"""The allocator settings of cepvec/runtime/memory.py: applied on import unless the process chose."""

from __future__ import annotations

import platform
import sys

import pytest

from cepvec.runtime import memory


def _clean_env(monkeypatch):
    import os

    for k in list(os.environ):
        if k.startswith("MALLOC_") or k == "CEPVEC_MALLOC":
            monkeypatch.delenv(k)


def test_import_tunes_glibc(monkeypatch):
    """On Linux with glibc (CI) the thresholds are set; elsewhere nothing is, and the reason says so."""
    _clean_env(monkeypatch)
    want = ("tuned",) if sys.platform.startswith("linux") else (f"not glibc ({sys.platform})",)
    if sys.platform.startswith("linux") and "glibc" not in " ".join(platform.libc_ver()):
        want = ("not glibc", "mallopt refused")  # musl and other C libraries
    assert memory.tune_allocator() in want
    assert memory.STATE[0] in want


@pytest.mark.parametrize("var,value,why", [
    ("CEPVEC_MALLOC", "system", "CEPVEC_MALLOC=system"),
    ("MALLOC_ARENA_MAX", "2", "MALLOC_* set in the environment"),
])
def test_a_process_that_chose_keeps_its_allocator(monkeypatch, var, value, why):
    _clean_env(monkeypatch)
    monkeypatch.setenv(var, value)
    assert memory.tune_allocator() == why

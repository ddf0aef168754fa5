"""The record of kernel specialisations the suite pre-compiles (tests/kernel_signatures.py) matches the kernels."""

from __future__ import annotations

import importlib
import inspect
import json

from .kernel_signatures import RECORD, parse_signature, schedule


def test_every_recorded_specialisation_matches_its_kernel():
    entries = json.loads(RECORD.read_text())["kernels"]
    assert len(entries) > 100
    for e in entries:
        kernel = getattr(importlib.import_module(e["module"]), e["kernel"], None)
        assert kernel is not None, f"{e['module']} has no kernel {e['kernel']}: regenerate {RECORD.name}"
        params = inspect.signature(kernel.py_func).parameters
        assert len(parse_signature(e["signature"])) == len(params), (
            f"{e['module']}.{e['kernel']} takes {list(params)} now: regenerate {RECORD.name}")


def test_schedule_puts_the_longest_first_on_the_least_loaded():
    entries = [{"k": i, "seconds": s} for i, s in enumerate([1.0, 5.0, 3.0, 3.0, 2.0])]
    parts = schedule(entries, 2)
    assert [[e["seconds"] for e in p] for p in parts] == [[5.0, 2.0], [3.0, 3.0, 1.0]]
    assert schedule(entries[:1], 4) == [[entries[0]]]

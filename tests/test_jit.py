"""``kernels/_jit.py::jit_reading``: a kernel's input arrays reach it read-only, however the caller holds them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from cepvec.kernels import _jit
from cepvec.kernels.keys import min_max
from cepvec.kernels.trend import partition_order


def test_inputs_are_passed_read_only_so_one_specialisation_serves_both():
    writable = np.array([3, -1, 7], np.int64)
    frozen = _jit.readonly(writable.copy())
    assert tuple(min_max(writable)) == tuple(min_max(frozen)) == (-1, 7)
    assert writable.flags.writeable  # the caller's array is left as it was
    assert min_max.signatures and all(not sig[0].mutable for sig in min_max.signatures)
    order, _ = partition_order(pid=np.array([1, 0, 1], np.int64), n_parts=2)  # by keyword too
    assert order.tolist() == [1, 0, 2]
    assert all(not sig[0].mutable for sig in partition_order.signatures)


def test_the_wrapper_is_the_kernel_for_pickle_and_introspection():
    assert pickle.loads(pickle.dumps(min_max)) is min_max
    assert min_max.__name__ == "min_max" and callable(min_max.py_func)


def test_an_unknown_input_name_is_refused():
    with pytest.raises(TypeError, match="has no parameter 'values'"):
        _jit.jit_reading("values")(lambda vals: vals)

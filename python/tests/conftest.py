"""Shared test setup: tests marked ``gpu`` need a GPU and skip without one, saying so."""

import pytest

import sparsegen


def _has_gpu() -> bool:
    try:
        sparsegen.Runtime(0)
        return True
    except sparsegen.CudaError:
        return False


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a GPU (skips without one)")


def pytest_collection_modifyitems(config, items):
    marked = [item for item in items if item.get_closest_marker("gpu") is not None]
    if marked and not _has_gpu():
        skip = pytest.mark.skip(reason="no GPU: the device tests need one")
        for item in marked:
            item.add_marker(skip)

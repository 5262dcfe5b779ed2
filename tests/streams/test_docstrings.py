"""The examples in the public modules' docstrings run, so they stay true (those of the README and
docs/: tests/test_docs.py)."""

import doctest
import pytest

import deltastreams.streams
import deltastreams.streams.testing


@pytest.mark.parametrize("module", [deltastreams.streams, deltastreams.streams.testing], ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


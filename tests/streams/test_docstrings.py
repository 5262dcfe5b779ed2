"""The examples in the public modules' docstrings run, so they stay true."""

import doctest
from pathlib import Path

import pytest

import deltastreams.streams
import deltastreams.streams.testing


@pytest.mark.parametrize("module", [deltastreams.streams, deltastreams.streams.testing], ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_readme_examples_run():
    readme = Path(__file__).resolve().parents[2] / "README.md"
    result = doctest.testfile(str(readme), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0

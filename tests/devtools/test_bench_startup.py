import pytest

from deltastreams.devtools.bench.startup import THIS_CHECKOUT, Checkout


def test_a_checkout_runs_its_own_code_and_a_folder_without_deltastreams_is_refused(tmp_path):
    Checkout(THIS_CHECKOUT).require_own_code()
    # A folder with no deltastreams of its own: its runs would import this checkout's (from the
    # venv), and a "baseline" measured so is this checkout again.
    with pytest.raises(SystemExit, match="imports deltastreams from"):
        Checkout(tmp_path).require_own_code()

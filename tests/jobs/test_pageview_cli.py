import subprocess
import sys

from tests.topology.test_describe import PAGEVIEW


def test_describe_command_prints_the_two_subtopology_description():
    out = subprocess.run([sys.executable, "-m", "jobs.pageview", "describe"], capture_output=True, text=True, check=True)
    assert out.stdout == PAGEVIEW

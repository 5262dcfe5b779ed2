import os
import signal
import subprocess
import sys
import textwrap
import time

from deltastreams.devtools.servers.process_tree import all_processes, job_processes, resident_bytes, still_running

# driver -> "daemon" (a process group of its own, as Spark's Python daemon) -> a launcher that
# starts a "host" and exits at once, so the host is reparented but stays in the daemon's group.
DRIVER = textwrap.dedent(
    """
    import subprocess, sys, time
    host = "import time; time.sleep(60)"
    launcher = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {host!r}])"
    daemon = f"import subprocess, sys, time; subprocess.run([sys.executable, '-c', {launcher!r}]); print('host started', flush=True); time.sleep(60)"
    subprocess.Popen([sys.executable, "-c", daemon], process_group=0)
    time.sleep(60)
    """
)


def test_job_processes_include_detached_members_of_a_descendants_process_group():
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], start_new_session=True, stdout=subprocess.PIPE, text=True)
    found = []
    try:
        assert driver.stdout.readline() == "host started\n"  # and its launcher gone
        processes = all_processes()
        found = job_processes(driver.pid, processes)
        daemon = next(p for p in found if p.ppid == driver.pid)
        host = next(p for p in found if p.pid not in (driver.pid, daemon.pid))
        assert found[0].pid == driver.pid and len(found) == 3
        assert daemon.pgid == daemon.pid != driver.pid  # a group of its own
        assert host.pgid == daemon.pgid and host.ppid != daemon.pid  # detached, found by its group
        assert all(p.rss_bytes > 0 for p in found)
        assert os.getpid() not in {p.pid for p in job_processes(driver.pid, processes)}
    finally:
        for info in found or [driver]:
            os.kill(info.pid, signal.SIGKILL)
        driver.wait()
    deadline = time.monotonic() + 10
    while still_running(found) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert still_running(found) == []


def test_a_finished_process_has_no_job():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    assert job_processes(process.pid) == []


def test_resident_bytes_reads_rss_and_pss_together_and_pss_never_exceeds_rss():
    child = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(64 << 20); time.sleep(30)"])
    try:
        time.sleep(1.0)
        resident = resident_bytes(child.pid)
        assert 60 << 20 < resident.rss and 0 < resident.pss <= resident.rss  # the 64 MB it wrote are its own, so in both
        assert 60 << 20 < resident.pss_anon <= resident.pss and resident.pss_anon + resident.pss_file <= resident.pss + 4096
    finally:
        child.kill()
        child.wait()
    assert resident_bytes(child.pid) is None  # gone

import signal
import subprocess
import sys
import textwrap
import time

# A stand-in for a driver's main thread: StreamsApp.run polls in a loop; the function below runs
# with module name "py4j.clientserver", as a Py4J call does, for 1 s.
SCRIPT = textwrap.dedent(
    """
    import sys, time
    from deltastreams.streams._internal.runtime.graceful_stop import StopOnSignal, StopSignal

    gateway = {"__name__": "py4j.clientserver", "time": time}
    exec("def call():\\n    time.sleep(1.0)\\n    print('call done', flush=True)", gateway)
    stopper = StopOnSignal()
    stopper.install()
    if "--signal-before-arm" in sys.argv:
        print("ready", flush=True)
        time.sleep(1.0)
        print("armed with a pending stop:", stopper.arm(), flush=True)
        sys.exit(0)
    stopper.arm()
    print("ready", flush=True)
    try:
        while True:
            if "--in-call" in sys.argv:
                gateway["call"]()
            time.sleep(0.05)
    except StopSignal as stop:
        print("stopped on", stop.name, flush=True)
    """
)


def _run(*args, signum=signal.SIGTERM):
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, *args], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    process.send_signal(signum)
    out, _ = process.communicate(timeout=60)
    return process.returncode, out


def test_sigterm_raises_stop_signal_in_the_main_thread():
    assert _run() == (0, "stopped on SIGTERM\n")


def test_sigint_stops_the_same_way():
    assert _run(signum=signal.SIGINT) == (0, "stopped on SIGINT\n")


def test_a_signal_during_a_py4j_call_waits_for_the_call_to_return():
    code, out = _run("--in-call")
    assert code == 0 and out.splitlines() == ["call done", "stopped on SIGTERM"]


def test_a_signal_before_arming_is_kept_for_the_caller_to_act_on():
    assert _run("--signal-before-arm") == (0, "armed with a pending stop: True\n")

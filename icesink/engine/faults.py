"""Crash points for the crash tests: ICESINK_CRASH_AT=NAME kills the process with SIGKILL at that point,
the way a power cut would, so the tests can stop it exactly between two steps of the commit protocol."""
import os
import signal


def crash_point(name: str) -> None:
    if os.environ.get("ICESINK_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)

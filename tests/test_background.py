"""`Background`: a second thread's step belongs to the block that starts it, Ctrl-C included."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from patchforge.background import Background
from patchforge.store.git import run_git


def test_ctrl_c_while_waiting_waits_for_the_step_then_goes_on(tmp_path):
    """A Ctrl-C that comes while the starting thread waits for the step (`result()`, or the
    block's end) is raised once the step is over, not at once: an interpreter that exits
    meanwhile would freeze the step mid-way, its git process and files left behind."""
    marker = tmp_path / "step-over"
    sent = threading.Event()

    def step() -> str:
        sent.wait(30)  # the Ctrl-C comes while the step runs, never after it
        time.sleep(0.3)  # still running when the interrupt is raised
        out = run_git("version").stdout.decode()
        marker.write_text(out)
        return out

    def ctrl_c() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        sent.set()

    timer = threading.Timer(0.1, ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        with Background(step) as work:
            timer.start()
            work.result()
    timer.join()
    assert work.done() and marker.read_text().startswith("git version")

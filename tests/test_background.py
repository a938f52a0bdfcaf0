"""Ctrl-C while a command's second thread works: `Background`'s step belongs to the block that
starts it, and the store's shared cat-file reader answers right after an interrupted query."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from patchforge.background import Background
from patchforge.store.catfile import CatFile
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


def test_a_query_interrupted_mid_answer_leaves_the_reader_answering_right(tmp_path):
    """The cat-file reader a store shares between its threads, interrupted (Ctrl-C) while it
    reads a long answer, gives the next query its own object, not the rest of the old answer
    (the series files read ahead go on while the command ends)."""
    store = tmp_path / "store.git"
    run_git("init", "-q", "--bare", str(store))
    big = run_git("hash-object", "-w", "--stdin", git_dir=store,
                  input=b"a = 1\n" * 200000).stdout.decode().strip()
    small = run_git("hash-object", "-w", "--stdin", git_dir=store,
                    input=b"small\n").stdout.decode().strip()
    reader = CatFile(store)
    try:
        timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            reader.query([big] * 500)  # 600 MB: read for far longer than the timer waits
        timer.join()
        answer = reader.query([small])[0]
        assert answer is not None and answer[0] == small and answer[2] == b"small\n"
    finally:
        reader.close()

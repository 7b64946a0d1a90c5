"""The compiled loop's module is built once when processes start together (each build is half a
minute of CPU): a second builder waits on the lock and takes the first one's module."""

from __future__ import annotations

import threading
import time

from makeway.sim.fast import aot


def test_builders_starting_together_build_once(tmp_path, monkeypatch):
    calls = []

    def fake_build_in(d, name, sig, func=None):
        calls.append(name)
        time.sleep(0.3)  # long enough for the other builder to reach the lock
        final = d / (name + aot._suffix())
        final.write_bytes(b"built")
        return final

    monkeypatch.setattr(aot, "_dirs", lambda: [tmp_path])
    monkeypatch.setattr(aot, "_build_in", fake_build_in)
    got = []
    threads = [threading.Thread(target=lambda: got.append(aot._build("_m", "i8()"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert calls == ["_m"]
    assert got == [tmp_path / ("_m" + aot._suffix())] * 3

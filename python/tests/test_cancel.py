"""Ctrl-C cancels a run: the call raises KeyboardInterrupt soon after, not
when the run would have ended, and the runtime runs the next job."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import collections, os, signal, threading, time
    import ember

    # A process started in the background by a non-interactive shell (as a
    # CI runner may start the tests) inherits SIGINT ignored, and Python
    # then installs no KeyboardInterrupt handler: install it, as a
    # terminal's Ctrl-C would find it.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    rt = ember.Runtime(threads=2)
    text = b"alpha beta gamma\\n" * 20000          # 340 KB, 320 splits of 1 KiB

    def slow(split):                                # 320 x 50 ms: 8 s in all
        time.sleep(0.05)
        return collections.Counter(split.split())

    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.perf_counter()
    try:
        rt.map_reduce(text, slow, split_size=1024)
        print("finished")
    except KeyboardInterrupt:
        print(f"interrupted after {time.perf_counter() - t0:.2f} s")
    counts = rt.map_reduce(b"a b a\\n", lambda s: collections.Counter(s.split()))
    print(sorted(counts.items()))
""")


def test_ctrl_c_cancels_a_run_and_the_runtime_goes_on():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first.startswith("interrupted after "), out.stdout
    # The signal lands at 0.5 s; each worker finishes the split it is on.
    assert float(first.split()[2]) < 2.0, out.stdout
    assert second == "[(b'a', 2), (b'b', 1)]", out.stdout

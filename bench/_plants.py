"""Planted delays for the bench scripts and the tests that check where a traced wake's time goes.

``build_slow_sem_post(folder)`` compiles ``bench/plant/sem_post_spin.c`` (every ``sem_post`` busy-waits
first: CPython 3.11's lock release) into ``folder`` and returns the shared object's path, for
``LD_PRELOAD``; :class:`PlantUnavailable` says why it cannot (no compiler, a failed build).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Dict, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SLOW_SEM_POST_C = os.path.join(HERE, "plant", "sem_post_spin.c")
#: The environment variable the plant reads its delay from (ns).
SPIN_ENV = "WAKELAB_PLANT_SPIN_NS"


class PlantUnavailable(RuntimeError):
    """The plant cannot be built or used here; the message says why."""


def build_slow_sem_post(folder: str) -> str:
    """Compile the slow ``sem_post`` plant into ``folder``; the ``.so``'s path."""
    if not sys.platform.startswith("linux"):
        raise PlantUnavailable("the sem_post plant is an LD_PRELOAD wrapper for Linux")
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise PlantUnavailable("no C compiler (gcc or cc) on PATH to build the sem_post plant")
    out = os.path.join(folder, "sem_post_spin.so")
    proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", out, SLOW_SEM_POST_C, "-ldl"],
                          capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise PlantUnavailable("building the sem_post plant failed: %s" % (proc.stderr.strip().splitlines() or ["?"])[-1])
    return out


def plant_env(library: str, spin_ns: int = 1_000_000, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """An environment that preloads ``library`` with every ``sem_post`` spinning ``spin_ns`` first."""
    env = dict(os.environ if base is None else base)
    env["LD_PRELOAD"] = library + ((" " + env["LD_PRELOAD"]) if env.get("LD_PRELOAD") else "")
    env[SPIN_ENV] = str(int(spin_ns))
    return env


def locks_use_sem_post(python: str = sys.executable, env: Optional[Dict[str, str]] = None) -> bool:
    """True when releasing a threading lock calls ``sem_post`` in ``python`` (CPython up to 3.12;
    3.13's locks park on their own): checked by timing 20 releases under the plant's ``env``."""
    probe = ("import threading, time\n"
             "lock = threading.Lock()\n"
             "t = time.perf_counter_ns()\n"
             "for _ in range(20):\n"
             "    lock.acquire(); lock.release()\n"
             "print(time.perf_counter_ns() - t)\n")
    proc = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60, env=env, check=False)
    try:
        return int(proc.stdout.strip()) >= 10 * int((env or {}).get(SPIN_ENV, "1000000"))
    except ValueError:
        return False

"""Facts about the interpreter and the machine, recorded with every run.

Only named facts are read; environment variables are never dumped wholesale.
"""

from __future__ import annotations

import os
import platform
import sys
import sysconfig
from typing import Any, Dict, List, Optional


def _gil_state() -> Dict[str, object]:
    """Whether this build can run without the GIL, and whether the GIL is on."""
    free_threaded_build = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    is_enabled = getattr(sys, "_is_gil_enabled", None)
    return {
        "free_threaded_build": free_threaded_build,
        # None: this interpreter does not report it (before 3.13 the GIL is always on).
        "gil_enabled": bool(is_enabled()) if is_enabled is not None else (None if free_threaded_build else True),
    }


# What besides the GIL changes a wake in this build: the JIT (3.14+'s sys._jit), the cyclic GC in use
# and multiprocessing's default start method.  One text, run as it is here (build_facts) and by the
# discovery probe (harness/interpreters.py) in any Python 3.6+ or PyPy with nothing of wakelab
# importable, so that 'wakelab interpreters' and a run's summary.json say the same.  A fact the
# interpreter does not expose is left out, never guessed.
BUILD_FACTS_SOURCE = """
def build_facts():
    import sys
    facts = {}
    jit = getattr(sys, "_jit", None)
    if jit is not None:
        try:
            facts["jit"] = {"available": bool(jit.is_available()), "enabled": bool(jit.is_enabled())}
        except Exception:
            pass
    try:
        import gc
        import sysconfig
        thresholds = list(gc.get_threshold())
        facts["gc_thresholds"] = thresholds
        if sys.implementation.name == "cpython":
            if sysconfig.get_config_var("Py_GIL_DISABLED"):
                facts["gc"] = "free-threaded"
            elif sys.version_info >= (3, 14) and len(thresholds) == 3 and thresholds[2] == 0:
                # The incremental collector has no third generation: its get_threshold() says 0 there.
                facts["gc"] = "incremental"
            else:
                facts["gc"] = "generational"
    except Exception:
        pass
    translation = getattr(sys, "pypy_translation_info", None)
    if translation is not None and "gc" not in facts:
        try:
            facts["gc"] = str(translation["translation.gc"])
        except Exception:
            pass
    try:
        import multiprocessing
        # allow_none: reading the default must not fix it for this process.
        facts["multiprocessing_start_method"] = (multiprocessing.get_start_method(allow_none=True)
                                                 or multiprocessing.get_all_start_methods()[0])
    except Exception:
        pass
    return facts
"""
_BUILD_FACTS: Dict[str, Any] = {}
exec(compile(BUILD_FACTS_SOURCE, "<wakelab build facts>", "exec"), _BUILD_FACTS)


def build_facts() -> Dict[str, object]:
    """``jit`` (``{"available", "enabled"}``), ``gc`` (``generational``, ``incremental``,
    ``free-threaded``, or PyPy's collector), ``gc_thresholds`` and ``multiprocessing_start_method``
    of the running interpreter, each only where it says."""
    return dict(_BUILD_FACTS["build_facts"]())


# sys.implementation.version's release levels as a version string writes them (3.13.0rc1).
_RELEASE_LEVELS = {"alpha": "a", "beta": "b", "candidate": "rc"}


def format_implementation_version(version: Any) -> str:
    """``7.3.11`` (or ``7.3.12rc1``): a ``sys.version_info``-like tuple as a dotted version string."""
    text = "%d.%d.%d" % (version[0], version[1], version[2])
    level = str(version[3]) if len(version) > 3 else "final"
    if level in _RELEASE_LEVELS:
        text += "%s%d" % (_RELEASE_LEVELS[level], version[4] if len(version) > 4 else 0)
    return text


def implementation_version() -> str:
    """The implementation's own version: PyPy's ``7.3.11`` (``sys.implementation.version``, which is
    ``sys.pypy_version_info`` there); on CPython the Python version itself, as ``version`` says it."""
    if sys.implementation.name == "cpython":
        return platform.python_version()  # the same number, with a development build's "+" kept
    return format_implementation_version(sys.implementation.version)


def interpreter_info() -> Dict[str, object]:
    """Version, implementation (and its own version), build and GIL state of the running interpreter."""
    build_no, build_date = platform.python_build()
    info: Dict[str, object] = {
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        # PyPy 7.3.11 implements Python 3.9.16: "version" is the language's, this the implementation's.
        "implementation_version": implementation_version(),
        "executable": sys.executable,
        "build": "%s, %s" % (build_no, build_date),
        "compiler": platform.python_compiler(),
        "debug_build": hasattr(sys, "gettotalrefcount"),
        "switch_interval_s": sys.getswitchinterval(),
        # Passed through to worker processes as it is; recorded because it overrides the build's default.
        "python_gil_env": os.environ.get("PYTHON_GIL"),
    }
    info.update(_gil_state())
    info.update(build_facts())
    return info


def _cpu_model() -> Optional[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_info() -> Dict[str, object]:
    """OS, kernel, architecture, CPU model and CPU counts of this machine."""
    affinity = None
    if hasattr(os, "sched_getaffinity"):
        affinity = sorted(os.sched_getaffinity(0))
    return {
        "os": platform.system(),
        "kernel": platform.release(),
        "architecture": platform.machine(),
        "hostname": platform.node(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_allowed": affinity,
    }


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def idle_states(cpu: int = 0) -> List[Dict[str, object]]:
    """cpuidle states of ``cpu``: name, exit latency (µs), disabled."""
    base = "/sys/devices/system/cpu/cpu%d/cpuidle" % cpu
    states: List[Dict[str, object]] = []
    try:
        names = sorted(os.listdir(base), key=lambda n: int(n[5:]) if n[5:].isdigit() else 0)
    except OSError:
        return states
    for name in names:
        if not name.startswith("state"):
            continue
        latency = _read(os.path.join(base, name, "latency"))
        states.append(
            {
                "name": _read(os.path.join(base, name, "name")),
                "exit_latency_us": int(latency) if latency and latency.isdigit() else None,
                "disabled": _read(os.path.join(base, name, "disable")) == "1",
            }
        )
    return states


def system_info() -> Dict[str, object]:
    """What on this machine shapes wake latency: clocksource, idle, frequency, load, isolation.

    Read from /proc and /sys only where present; a missing file gives None.
    """
    cpu = "/sys/devices/system/cpu"
    load = _read("/proc/loadavg")
    flags = ""
    cpuinfo = _read("/proc/cpuinfo") or ""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = line
            break
    return {
        "clocksource": _read(cpu.replace("/cpu", "/clocksource/clocksource0/current_clocksource")),
        "cpuidle_driver": _read(cpu + "/cpuidle/current_driver"),
        "cpuidle_governor": _read(cpu + "/cpuidle/current_governor_ro") or _read(cpu + "/cpuidle/current_governor"),
        "idle_states": idle_states(0),
        "cpufreq_governor": _read(cpu + "/cpu0/cpufreq/scaling_governor"),
        "load_average": [float(x) for x in load.split()[:3]] if load else None,
        "isolated_cpus": _read(cpu + "/isolated"),
        "nohz_full": _read(cpu + "/nohz_full"),
        "smt_active": _read(cpu + "/smt/active"),
        "hypervisor": (" hypervisor" in flags) if flags else None,
    }

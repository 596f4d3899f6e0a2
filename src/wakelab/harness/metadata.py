"""Facts about the interpreter and the machine, recorded with every run.

Only named facts are read; environment variables are never dumped wholesale.
"""

from __future__ import annotations

import os
import platform
import sys
import sysconfig
from typing import Dict, Optional


def _gil_state() -> Dict[str, object]:
    """Whether this build can run without the GIL, and whether the GIL is on."""
    free_threaded_build = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    is_enabled = getattr(sys, "_is_gil_enabled", None)
    return {
        "free_threaded_build": free_threaded_build,
        # None: this interpreter does not report it (before 3.13 the GIL is always on).
        "gil_enabled": bool(is_enabled()) if is_enabled is not None else (None if free_threaded_build else True),
    }


def interpreter_info() -> Dict[str, object]:
    """Version, implementation, build and GIL state of the running interpreter."""
    build_no, build_date = platform.python_build()
    info: Dict[str, object] = {
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        "executable": sys.executable,
        "build": "%s, %s" % (build_no, build_date),
        "compiler": platform.python_compiler(),
        "debug_build": hasattr(sys, "gettotalrefcount"),
        "switch_interval_s": sys.getswitchinterval(),
    }
    info.update(_gil_state())
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

"""pytest glue for the nested tier: print the measured boot times."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_terminal_summary(terminalreporter):
    lines = []
    for mod in ("test_boot", "test_init", "test_user_net", "test_net",
                "test_sandbox"):
        m = sys.modules.get(mod)
        lines += getattr(m, "TIMINGS", [])
    nested = sys.modules.get("nested")
    lines += ["nested: rerun: " + r for r in getattr(nested, "RERUNS", [])]
    if lines:
        terminalreporter.section("nested timings")
        for line in lines:
            terminalreporter.write_line(line)

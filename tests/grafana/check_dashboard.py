#!/usr/bin/env python3
"""Checks examples/grafana/drover-dashboard.json against what GET /metrics exposes.

Every query of every panel must parse as PromQL (promtool check rules, with Grafana's variables
replaced by plain values) and name only drover_ metrics documented in docs/observability.md's
table, so that a renamed metric cannot leave the dashboard behind. Fails, never skips, when
promtool is missing (Debian's prometheus package, installed by `make deps`).

Usage: check_dashboard.py REPO_ROOT
"""

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
    dashboard = json.loads((root / "examples/grafana/drover-dashboard.json").read_text())
    documented = set(re.findall(r"^\| `(drover_[a-z_]+)`", (root / "docs/observability.md")
                                .read_text(), re.MULTILINE))
    promtool = shutil.which("promtool")
    if not promtool:
        print("promtool is missing: `make deps` installs Debian's prometheus", file=sys.stderr)
        return 1
    substitutions = {"$__rate_interval": "1m", "$queue": ".*"}
    rules, problems = [], []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in substitutions.items():
                expr = expr.replace(variable, value)
            for name in re.findall(r"\b(drover_[a-z_]+)", expr):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                if name not in documented and base not in documented:
                    problems.append(f"panel {panel['title']!r}: {name} is not a documented metric")
            rules.append({"record": f"drover:panel_{panel['id']}_{target['refId']}", "expr": expr})
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as file:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, file)
        file.flush()
        checked = subprocess.run([promtool, "check", "rules", file.name], capture_output=True,
                                 text=True)
        if checked.returncode != 0:
            problems.append(checked.stdout + checked.stderr)
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(rules)} queries checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

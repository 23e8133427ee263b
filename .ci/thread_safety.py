#!/usr/bin/env python3
"""`make thread-safety`: clang's -Wthread-safety over the sources that use
drover/common/thread_annotations.h (GUARDED_BY, REQUIRES, ...), syntax only, with the flags of
build/compile_commands.json. First it checks that the analysis is live: a snippet that touches a
guarded member without its mutex must be refused (a macro that expanded to nothing would pass
everything). Exit status 0 when clean; 1 with clang's diagnostics otherwise.
"""

import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CLANG = os.environ.get("CLANGXX", "clang++")
HEADER = "drover/common/thread_annotations.h"
CLANG_FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Werror"]
# GCC's warning set is not clang's: only the thread-safety analysis is asked for here.
DROPPED = re.compile(r"^-(W.*|o|MD|MF|MT|c)$")
VIOLATION = """#include "drover/common/thread_annotations.h"
class Counter {
  void Bump() { ++count_; }  // without mu_: clang must refuse this
  drover::Mutex mu_;
  int count_ GUARDED_BY(mu_) = 0;
};
"""


def annotated_sources():
    """The .cc files that include the header, or include a header that includes it."""
    includes = {HEADER}
    sources = []
    files = []
    for folder, _, names in os.walk(os.path.join(ROOT, "drover")):
        files += [os.path.relpath(os.path.join(folder, n), ROOT) for n in names
                  if n.endswith((".h", ".cc"))]
    text = {f: open(os.path.join(ROOT, f), encoding="utf-8").read() for f in files}
    includes |= {f for f in files if f.endswith(".h") and f'#include "{HEADER}"' in text[f]}
    for f in sorted(files):
        if f.endswith(".cc") and any(f'#include "{h}"' in text[f] for h in includes):
            sources.append(f)
    return sources


def clang_command(entry):
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    kept, skip = [CLANG], False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-MF", "-MT"):
            skip = True
            continue
        if arg == entry["file"] or DROPPED.match(arg) or arg == "ccache":
            continue
        kept.append(arg)
    return kept + CLANG_FLAGS + [entry["file"]]


def run(command, cwd):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def main():
    database = os.path.join(ROOT, "build", "compile_commands.json")
    if not os.path.exists(database):
        print(f"{database} is missing: configure first (cmake --preset dev)", file=sys.stderr)
        return 1
    with tempfile.NamedTemporaryFile("w", suffix=".cc") as bad:
        bad.write(VIOLATION)
        bad.flush()
        code, _ = run([CLANG, "-std=c++20", f"-I{ROOT}", *CLANG_FLAGS, bad.name], ROOT)
    if code == 0:
        print("clang accepted an unguarded access: the analysis is not active", file=sys.stderr)
        return 1
    entries = {}
    for entry in json.load(open(database, encoding="utf-8")):
        path = os.path.relpath(os.path.join(entry["directory"], entry["file"]), ROOT)
        entries.setdefault(path, entry)
    sources = annotated_sources()
    missing = [s for s in sources if s not in entries]
    if missing:
        print("not in compile_commands.json: " + " ".join(missing), file=sys.stderr)
        return 1
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = list(pool.map(
            lambda s: (s, *run(clang_command(entries[s]), entries[s]["directory"])), sources))
    failed = [(s, out) for s, code, out in results if code != 0]
    for source, out in failed:
        print(out, end="")
    print(f"thread-safety: {len(sources) - len(failed)} of {len(sources)} files clean",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

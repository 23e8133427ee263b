#!/usr/bin/env python3
"""The layer check: every `#include "drover/..."` against the allowed graph in cmake/layers.txt.

The graph is data in one place (cmake/layers.txt); this program holds its rules:

1. A file may include its own folder's headers and those of every folder its folder reaches
   through the graph (dependencies of dependencies included). A test file (*_test.cc,
   *test_util.h, testdata/) may also reach what its folder's `tests:` line adds.
2. Every dependency in the graph is used: some file of the folder includes that folder (a
   `tests:` dependency, some test file), so the graph says what the code does.
3. Each folder's CMake `drover_library(... DEPS ... TEST_DEPS ...)` names exactly the drover
   libraries of its graph line (a folder without a library, such as exec/, stands for its own
   dependencies), so the link and the rule are one graph.
4. The graph has no cycle, and docs/architecture.md holds its rendering between the markers
   <!-- layers:begin --> and <!-- layers:end --> (rewrite it with --write-docs).

Exit status 0 when the tree keeps the rules; 1 with one line per violation (FILE:LINE: message);
2 when cmake/layers.txt itself cannot be read. Python 3 standard library only.
"""

import argparse
import os
import re
import sys

SOURCE_ROOTS = ("drover", "tools", "bench", "tests", "fuzz")
SOURCE_SUFFIXES = (".h", ".cc", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(drover/[^"]+)"')
LIBRARY = re.compile(r"drover_library\(\s*(\w+)(.*?)\)", re.S)
DOCS_BEGIN = "<!-- layers:begin -->"
DOCS_END = "<!-- layers:end -->"


class Layer:
    """One line of cmake/layers.txt (and its `tests:` line)."""

    def __init__(self, name, line):
        self.name = name
        self.line = line  # line number in layers.txt
        self.deps = []  # in the order written
        self.test_deps = []
        self.note = ""  # the line's trailing comment, shown in the docs
        self.has_library = False  # a drover_library() in its CMakeLists.txt


class Graph:
    def __init__(self, layers, path):
        self.layers = layers  # name -> Layer, in the order written
        self.path = path

    def reach(self, name, with_tests):
        """The folders `name` may include: itself and everything reachable from its line."""
        start = list(self.layers[name].deps)
        if with_tests:
            start += self.layers[name].test_deps
        seen = {name}
        stack = start
        while stack:
            dep = stack.pop()
            if dep in seen:
                continue
            seen.add(dep)
            stack.extend(self.layers[dep].deps)
        return seen


def parse_graph(path):
    """Reads layers.txt. Raises ValueError naming the line for a malformed or unknown entry."""
    layers = {}
    pending = []  # (line, name, deps, is_tests, note) before every name is known
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            text, _, comment = raw.partition("#")
            text = text.strip()
            if not text:
                continue
            match = re.fullmatch(r"([a-z0-9_/]+)( tests)?:\s*(.*)", text)
            if not match:
                raise ValueError(f"{path}:{number}: expected 'FOLDER: DEPS...' or "
                                 f"'FOLDER tests: DEPS...', got '{text}'")
            name, is_tests, deps = match.group(1), bool(match.group(2)), match.group(3).split()
            pending.append((number, name, deps, is_tests, comment.strip()))
            if not is_tests:
                if name in layers:
                    raise ValueError(f"{path}:{number}: {name} is listed twice")
                layers[name] = Layer(name, number)
    for number, name, deps, is_tests, note in pending:
        if name not in layers:
            raise ValueError(f"{path}:{number}: 'tests:' line for {name}, which has no line")
        for dep in deps:
            if dep not in layers:
                raise ValueError(f"{path}:{number}: {name} depends on {dep}, which has no line")
        layer = layers[name]
        if is_tests:
            layer.test_deps = deps
        else:
            layer.deps = deps
        if note:
            layer.note = (layer.note + " " + note).strip()
    return Graph(layers, path)


def find_cycle(graph):
    """A dependency cycle as a list of names (first == last), or None."""
    done = set()

    def visit(path):
        for dep in graph.layers[path[-1]].deps:
            if dep in path:
                return path[path.index(dep):] + [dep]
            if dep not in done:
                cycle = visit(path + [dep])
                if cycle:
                    return cycle
        done.add(path[-1])
        return None

    for name in graph.layers:
        cycle = None if name in done else visit([name])
        if cycle:
            return cycle
    return None


def layer_of(path, graph):
    """The folder a repository path belongs to: the longest graph name that is a folder of it
    under drover/ (drover/main.cc is `main`), or its top folder outside drover/."""
    parts = path.split("/")
    if parts[0] != "drover":
        return parts[0]
    if len(parts) == 2:
        return "main"
    for end in range(len(parts) - 1, 1, -1):
        name = "/".join(parts[1:end])
        if name in graph.layers:
            return name
    return parts[1]


def is_test_file(path):
    """A test program's file or a helper only tests include (tests/ is a folder of its own)."""
    return path.endswith(("_test.cc", "test_util.h")) or "/testdata/" in path


def source_files(root):
    for top in SOURCE_ROOTS:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d not in ("node_modules", "build"))
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(folder, name), root)


def check_includes(root, graph, errors):
    """Rules 1 and 2."""
    used = set()  # (layer, dep, from_test)
    for path in source_files(root):
        layer = layer_of(path, graph)
        if layer not in graph.layers:
            errors.append(f"{path}:1: folder {layer} has no line in {graph.path}")
            continue
        test = is_test_file(path)
        allowed = graph.reach(layer, with_tests=test)
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = layer_of(match.group(1), graph)
                if target not in graph.layers:
                    errors.append(f"{path}:{number}: includes {match.group(1)}, in folder "
                                  f"{target}, which has no line in {graph.path}")
                    continue
                if target not in allowed:
                    may = ", ".join(sorted(allowed - {layer})) or "nothing"
                    errors.append(f"{path}:{number}: {layer} may not include {match.group(1)} "
                                  f"({target}); {graph.path} lets {layer}"
                                  f"{' tests' if test else ''} include: {may}")
                if target != layer:
                    used.add((layer, target, test))
    for layer in graph.layers.values():
        for dep in layer.deps:
            if (layer.name, dep, False) not in used:
                hint = (" (only its tests do: move it to its 'tests:' line)"
                        if (layer.name, dep, True) in used else "")
                errors.append(f"{graph.path}:{layer.line}: {layer.name} depends on {dep}, but "
                              f"no file of {layer.name} includes it{hint}; remove the dependency")
        for dep in layer.test_deps:
            if (layer.name, dep, True) not in used:
                errors.append(f"{graph.path}:{layer.line}: {layer.name} tests depend on {dep}, "
                              f"but no test of {layer.name} includes it; remove the dependency")


def library_deps(graph, names):
    """The drover libraries a CMake DEPS list must name for graph dependencies `names`: a folder
    with a library is its library; one without (header-only) stands for its own dependencies."""
    result = set()
    for name in names:
        if graph.layers[name].has_library:
            result.add("drover_" + name.replace("/", "_"))
        else:
            result |= library_deps(graph, graph.layers[name].deps)
    return result


def check_cmake(root, graph, errors):
    """Rule 3."""
    calls = {}  # layer -> (CMakeLists path, DEPS, TEST_DEPS)
    for folder, dirs, files in os.walk(os.path.join(root, "drover")):
        dirs.sort()
        if "CMakeLists.txt" not in files:
            continue
        path = os.path.relpath(os.path.join(folder, "CMakeLists.txt"), root)
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = re.sub(r"#[^\n]*", "", f.read())
        for match in LIBRARY.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            words = match.group(2).split()
            deps, test_deps, current = set(), set(), None
            for word in words:
                if word in ("DEPS", "TEST_DEPS"):
                    current = deps if word == "DEPS" else test_deps
                elif current is not None and word.startswith("drover_"):
                    current.add(word)
                elif word.isupper():
                    current = None
            calls[os.path.relpath(folder, os.path.join(root, "drover"))] = (f"{path}:{line}", deps,
                                                                          test_deps)
    for layer in graph.layers.values():
        layer.has_library = layer.name in calls
    for name, (where, deps, test_deps) in calls.items():
        if name not in graph.layers:
            errors.append(f"{where}: folder {name} has no line in {graph.path}")
            continue
        layer = graph.layers[name]
        for kind, have, want in (("DEPS", deps, library_deps(graph, layer.deps)),
                                 ("TEST_DEPS", test_deps, library_deps(graph, layer.test_deps))):
            if have != want:
                errors.append(f"{where}: {kind} names {' '.join(sorted(have)) or 'no library'} "
                              f"but {graph.path}:{layer.line} says "
                              f"{' '.join(sorted(want)) or 'none'}; make them agree")


def render_docs(graph):
    """The graph as the Markdown table docs/architecture.md holds between the markers."""
    lines = [DOCS_BEGIN,
             "| folder | may include (and all they may include) | its tests also | note |",
             "|---|---|---|---|"]
    for layer in graph.layers.values():
        deps = ", ".join(f"`{d}`" for d in layer.deps) or "—"
        tests = ", ".join(f"`{d}`" for d in layer.test_deps)
        lines.append(f"| `{layer.name}` | {deps} | {tests} | {layer.note} |")
    lines.append(DOCS_END)
    return "\n".join(lines)


def check_docs(root, graph, errors, write):
    """Rule 4 (the docs part)."""
    path = os.path.join(root, "docs", "architecture.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if begin < 0 or end < begin:
        errors.append(f"docs/architecture.md:1: no {DOCS_BEGIN} ... {DOCS_END} block")
        return
    updated = text[:begin] + render_docs(graph) + text[end + len(DOCS_END):]
    if updated == text:
        return
    if write:
        with open(path, "w", encoding="utf-8") as f:
            f.write(updated)
    else:
        line = text.count("\n", 0, begin) + 1
        errors.append(f"docs/architecture.md:{line}: the dependency table differs from "
                      f"{graph.path}; run tests/layers/check_layers.py --write-docs")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."),
                        help="the repository (default: the one holding this program)")
    parser.add_argument("--write-docs", action="store_true",
                        help="rewrite the table in docs/architecture.md instead of checking it")
    args = parser.parse_args(argv)
    root = os.path.normpath(args.root)
    try:
        graph = parse_graph(os.path.join(root, "cmake", "layers.txt"))
    except (OSError, ValueError) as error:
        print(error, file=sys.stderr)
        return 2
    graph.path = "cmake/layers.txt"
    errors = []
    cycle = find_cycle(graph)
    if cycle:
        errors.append(f"{graph.path}:1: dependency cycle: {' -> '.join(cycle)}")
    check_cmake(root, graph, errors)
    check_includes(root, graph, errors)
    check_docs(root, graph, errors, args.write_docs)
    for error in errors:
        print(error)
    if errors:
        print(f"{len(errors)} layer violation(s); the rule: docs/architecture.md, "
              f"'Dependency rule'", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

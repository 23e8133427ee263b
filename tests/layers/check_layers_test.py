#!/usr/bin/env python3
"""Tests of check_layers.py on small trees written to a temporary directory (ctest:
layers.check_test)."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_layers  # noqa: E402

# A three-folder tree that keeps the rules: c -> b -> a, with a header-only folder h (-> a).
LAYERS = """\
# comment
a:
b: a
h: a
c: b h  # a note
c tests: t
t: a
"""
FILES = {
    "drover/a/CMakeLists.txt": "drover_library(a DEPS fmt::fmt)\n",
    "drover/a/a.h": "#pragma once\n",
    "drover/b/CMakeLists.txt": "drover_library(b DEPS drover_a)\n",
    "drover/b/b.h": '#include "drover/a/a.h"\n',
    "drover/h/h.h": '#include "drover/a/a.h"\n',
    "drover/t/CMakeLists.txt": "drover_library(t DEPS drover_a)\n",
    "drover/t/fake.h": '#include "drover/a/a.h"\n',
    "drover/c/CMakeLists.txt": "drover_library(c DEPS drover_b\n  drover_a TEST_DEPS drover_t)\n",
    "drover/c/c.cc": '#include "drover/c/c.h"\n#include "drover/b/b.h"\n#include "drover/h/h.h"\n'
                     '#include "drover/a/a.h"\n',
    "drover/c/c.h": "#pragma once\n",
    "drover/c/c_test.cc": '#include "drover/t/fake.h"\n',
    "docs/architecture.md": "Rule:\n\n<!-- layers:begin -->\n<!-- layers:end -->\n",
}


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        self.write("cmake/layers.txt", LAYERS)
        for path, text in FILES.items():
            self.write(path, text)
        self.assertEqual(self.run_check("--write-docs"), (0, []))

    def tearDown(self):
        self.dir.cleanup()

    def write(self, path, text):
        os.makedirs(os.path.dirname(os.path.join(self.root, path)), exist_ok=True)
        with open(os.path.join(self.root, path), "w", encoding="utf-8") as f:
            f.write(text)

    def run_check(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = check_layers.main(["--root", self.root, *args])
        return code, out.getvalue().splitlines()

    def test_a_tree_that_keeps_the_rules_passes_and_its_table_is_rendered(self):
        self.assertEqual(self.run_check(), (0, []))
        with open(os.path.join(self.root, "docs/architecture.md"), encoding="utf-8") as f:
            self.assertIn("| `c` | `b`, `h` | `t` | a note |", f.read())

    def test_an_include_against_the_rule_fails_naming_file_and_line(self):
        self.write("drover/b/b.cc", '#include "drover/a/a.h"\n\n#include "drover/c/c.h"\n')
        code, lines = self.run_check()
        self.assertEqual(code, 1)
        self.assertEqual(len(lines), 1)
        self.assertTrue(lines[0].startswith("drover/b/b.cc:3: b may not include drover/c/c.h (c)"),
                        lines[0])

    def test_a_tests_dependency_serves_test_files_only(self):
        self.write("drover/c/c2.cc", '#include "drover/t/fake.h"\n')
        code, lines = self.run_check()
        self.assertEqual(code, 1)
        self.assertTrue(lines[0].startswith("drover/c/c2.cc:1: c may not include"), lines)

    def test_a_dependency_no_include_uses_fails(self):
        self.write("drover/c/c.cc", '#include "drover/b/b.h"\n')
        code, lines = self.run_check()
        self.assertEqual(code, 1)
        self.assertEqual(lines, ["cmake/layers.txt:5: c depends on h, but no file of c includes "
                                 "it; remove the dependency"])

    def test_cmake_deps_must_name_the_libraries_of_the_line(self):
        self.write("drover/c/CMakeLists.txt", "drover_library(c DEPS drover_b TEST_DEPS drover_t)\n")
        code, lines = self.run_check()
        self.assertEqual(code, 1)
        self.assertEqual(lines, ["drover/c/CMakeLists.txt:1: DEPS names drover_b but "
                                 "cmake/layers.txt:5 says drover_a drover_b; make them agree"])

    def test_a_cycle_is_refused(self):
        self.write("cmake/layers.txt", LAYERS.replace("a:\n", "a: c\n"))
        code, lines = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn("cmake/layers.txt:1: dependency cycle: a -> c -> b -> a", lines)

    def test_a_stale_docs_table_fails(self):
        self.write("cmake/layers.txt", LAYERS.replace("# a note", "# another note"))
        code, lines = self.run_check()
        self.assertEqual(code, 1)
        self.assertEqual(len(lines), 1)
        self.assertTrue(lines[0].startswith("docs/architecture.md:3: the dependency table"))

    def test_a_folder_missing_from_the_graph_fails(self):
        self.write("drover/d/d.h", "#pragma once\n")
        code, lines = self.run_check()
        self.assertEqual(code, 1)
        self.assertEqual(lines, ["drover/d/d.h:1: folder d has no line in cmake/layers.txt"])

    def test_a_malformed_graph_is_reported_with_its_line(self):
        self.write("cmake/layers.txt", LAYERS + "x: nowhere\n")
        self.assertEqual(self.run_check(), (2, []))


if __name__ == "__main__":
    unittest.main()

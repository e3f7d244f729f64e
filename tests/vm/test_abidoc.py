# SPDX-License-Identifier: GPL-2.0
"""Host-side tests of abidoc.py: it passes a tree that matches the ABI file
and fails each kind of mismatch (so t_abi can fail)."""

import contextlib
import io
import os
import shutil
import tempfile
import unittest

import abidoc

DOC = os.path.join(
    os.path.dirname(__file__), "..", "..", "docs", "ABI", "testing", "sysfs-kernel-aipu"
)


def read_doc():
    with open(DOC, encoding="utf-8") as f:
        return f.read()


class Tree:
    """A fake /sys/kernel/aipu made from the documentation."""

    def __init__(self, text):
        self.dir = tempfile.mkdtemp()
        self.docs = abidoc.documented(abidoc.parse(text))
        for name, e in self.docs.items():
            path = os.path.join(self.dir, name)
            if name == "stat":
                body = "".join(f"{s} 0\n" for s in abidoc.stat_names(e))
            elif name == "devices":
                body = "254:0 " + " ".join(f"{k} 1" for k in abidoc.stat_names(e)) + "\n"
            elif name.endswith("_hist"):
                n = abidoc.lines_of(e)
                body = "".join(f"{i} {i} 0\n" for i in range(n - 1)) + f"{n - 1} - 0\n"
            elif name in ("policy", "write_alloc"):
                body = f"[{abidoc.default_of(e)}] other\n"
            else:
                body = f"{abidoc.default_of(e)}\n"
            with open(path, "w") as f:
                f.write(body)
            os.chmod(path, 0o644 if abidoc.mode_of(e) == "RW" else 0o444)

    def close(self):
        shutil.rmtree(self.dir)


def modinfo_of(text):
    """What modinfo -F parm prints for a module that matches @text."""
    lines = []
    for name, e in sorted(abidoc.documented(abidoc.parse(text)).items()):
        d = abidoc.default_of(e)
        if d is None:
            continue
        r = abidoc.range_of(e)
        if r:
            lines.append(f"{name}:what it does ({r[0]} to {r[1]}, default {d}) (uint)")
        else:
            lines.append(f"{name}:what it does (default {d}) (charp)")
    return "\n".join(lines) + "\n"


def run_modinfo(modinfo_text):
    with tempfile.NamedTemporaryFile("w", suffix=".parm", delete=False) as f:
        f.write(modinfo_text)
    tree = Tree(read_doc())
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            c = abidoc.check(DOC, tree.dir, True, f.name)
        return c, out.getvalue()
    finally:
        tree.close()
        os.unlink(f.name)


def run(doc_text, mutate=None, defaults=True):
    with tempfile.NamedTemporaryFile("w", suffix=".abi", delete=False) as f:
        f.write(doc_text)
    tree = Tree(read_doc())
    try:
        if mutate:
            mutate(tree.dir)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            c = abidoc.check(f.name, tree.dir, defaults)
        return c, out.getvalue()
    finally:
        tree.close()
        os.unlink(f.name)


class TestAbidoc(unittest.TestCase):
    def test_matching_tree_passes(self):
        c, out = run(read_doc())
        self.assertEqual(c.failed, 0, out)
        self.assertGreater(c.passed, 20)

    def test_every_entry_has_the_abi_fields(self):
        for e in abidoc.parse(read_doc()):
            self.assertEqual(e["_order"], abidoc.FIELDS)

    def test_undocumented_file_fails(self):
        def add(d):
            with open(os.path.join(d, "new_knob"), "w") as f:
                f.write("1\n")

        c, out = run(read_doc(), add)
        self.assertIn("FAIL: every one", out)
        self.assertIn("new_knob", out)

    def test_missing_file_fails(self):
        c, out = run(read_doc(), lambda d: os.unlink(os.path.join(d, "pace")))
        self.assertIn("documented but missing: pace", out)

    def test_undocumented_counter_fails(self):
        def add(d):
            with open(os.path.join(d, "stat"), "a") as f:
                f.write("pages_new 3\n")

        c, out = run(read_doc(), add)
        self.assertIn("not documented: pages_new", out)

    def test_counter_missing_from_stat_fails(self):
        def drop(d):
            p = os.path.join(d, "stat")
            with open(p) as f:
                lines = [x for x in f if not x.startswith("pages_late ")]
            with open(p, "w") as f:
                f.writelines(lines)

        c, out = run(read_doc(), drop)
        self.assertIn("documented but not in stat: pages_late", out)

    def test_device_line_with_an_undocumented_pair_fails(self):
        def add(d):
            with open(os.path.join(d, "devices"), "a") as f:
                f.write("8:0 pages_tracked 1 new_pair 2\n")

        c, out = run(read_doc(), add)
        self.assertIn("FAIL: devices:", out)

    def test_wrong_mode_fails(self):
        c, out = run(read_doc(), lambda d: os.chmod(os.path.join(d, "max_batch"), 0o444))
        self.assertIn("FAIL: max_batch: documented RW, file is RO", out)

    def test_wrong_default_fails(self):
        def change(d):
            with open(os.path.join(d, "period_ms"), "w") as f:
                f.write("500\n")

        c, out = run(read_doc(), change)
        self.assertIn("FAIL: period_ms: value at load", out)

    def test_histogram_length_fails(self):
        def cut(d):
            with open(os.path.join(d, "age_hist"), "w") as f:
                f.write("0 0 1\n1 - 2\n")

        c, out = run(read_doc(), cut)
        self.assertIn("FAIL: age_hist: 2 lines", out)

    def test_matching_modinfo_passes(self):
        text = modinfo_of(read_doc())
        self.assertIn("max_age_ms:what it does (100 to 3600000, default 30000)", text)
        c, out = run_modinfo(text)
        self.assertEqual(c.failed, 0, out)
        self.assertIn("module parameters are the", out)

    def test_modinfo_of_the_module_parses(self):
        line = "max_age_ms:Write pages dirty for longer than this (100 to 3600000, default 30000) (uint)"
        self.assertEqual(abidoc.parse_modinfo(line), {"max_age_ms": (("100", "3600000"), "30000")})
        line = "policy:Update policy at load: kernel, aipu, pu or stage (default kernel) (charp)"
        self.assertEqual(abidoc.parse_modinfo(line), {"policy": (None, "kernel")})

    def test_modinfo_with_another_default_fails(self):
        text = modinfo_of(read_doc()).replace("default 1000) (uint)", "default 500) (uint)", 1)
        c, out = run_modinfo(text)
        self.assertIn("FAIL:", out)
        self.assertIn("modinfo says 500", out)

    def test_modinfo_with_another_range_fails(self):
        text = modinfo_of(read_doc()).replace("(10 to 60000,", "(10 to 90000,", 1)
        c, out = run_modinfo(text)
        self.assertIn("FAIL: period_ms: documented range", out)

    def test_modinfo_with_an_undocumented_parameter_fails(self):
        text = modinfo_of(read_doc()) + "new_knob:what (0 to 1, default 0) (uint)\n"
        c, out = run_modinfo(text)
        self.assertIn("FAIL: the 11 module parameters", out)

    def test_bad_format_fails(self):
        text = read_doc().replace("Contact:\tThe aipu project (its issue tracker)\n", "", 1)
        c, out = run(text)
        self.assertIn("FAIL:", out)
        self.assertIn("ABI format wants", out)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare docs/ABI/testing/sysfs-kernel-aipu with a loaded module's files.

    abidoc.py check --doc FILE --sysfs DIR [--defaults] [--modinfo FILE]
    abidoc.py list --doc FILE          the documented names, one a line

`check` prints one PASS or FAIL line per comparison and exits 1 if any
failed:
  - the file is in the kernel's Documentation/ABI format: every entry has
    What, Date, KernelVersion, Contact, Description and Users, in order;
  - every file (and directory) in DIR is documented, and every documented
    path exists;
  - each entry's "(RW)" or "(RO)" matches the file's owner-write bit;
  - the names in DIR/stat, in order, are the first column of the table in
    the stat entry, and the other way round; each line of DIR/devices is a
    device name and the pairs of the devices entry's table, in order;
  - each histogram has the number of lines its entry states ("N lines"),
    each "low high count" and the last "low - count";
  - with --defaults (the module loaded without parameters), each knob's
    value is its entry's "Default:" (a choice knob: the bracketed name);
  - with --modinfo (the output of modinfo -F parm aipu.ko: the module's
    one list of knobs, include/aipu_knobs.h), every parameter is a
    documented knob and every documented knob a parameter, with the
    entry's "Default:" and, for a number, its "Range:".

The names come from the running module (os.listdir, the stat file), never
from a list kept here. Standard library only.
"""

import argparse
import os
import re
import stat
import sys

FIELDS = ["What", "Date", "KernelVersion", "Contact", "Description", "Users"]
PREFIX = "/sys/kernel/aipu/"


class DocError(Exception):
    pass


def parse(text):
    """Entries of an ABI file: a list of dicts, field name -> text."""
    entries = []
    cur = None
    field = None
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^([A-Za-z]+):\s*(.*)$", line)
        if m and m.group(1) in FIELDS:
            name, val = m.group(1), m.group(2)
            if name == "What" and (cur is None or field != "What"):
                cur = {"_line": n, "_order": []}
                entries.append(cur)
            elif cur is None:
                raise DocError(f"line {n}: {name}: before any What:")
            if name == "What":
                cur.setdefault("What", []).append(val.strip())
            elif name in cur:
                raise DocError(f"line {n}: a second {name}: in the entry of line {cur['_line']}")
            else:
                cur[name] = val
            if not cur["_order"] or cur["_order"][-1] != name:
                cur["_order"].append(name)
            field = name
        elif cur is not None and field is not None:
            if line.strip() and not line.startswith(("\t", " ")):
                raise DocError(f"line {n}: not a field and not indented: {line!r}")
            if field == "What":
                if line.strip():
                    raise DocError(f"line {n}: text after What: {line!r}")
            else:
                cur[field] += "\n" + line
        elif line.strip():
            raise DocError(f"line {n}: text before the first What: {line!r}")
    for e in entries:
        if e["_order"] != FIELDS:
            raise DocError(
                f"line {e['_line']}: fields {', '.join(e['_order'])}; the ABI format wants {', '.join(FIELDS)}"
            )
        for f in FIELDS[1:]:
            if not e[f].strip():
                raise DocError(f"line {e['_line']}: {f}: is empty")
    return entries


def documented(entries):
    """Documented name (relative to /sys/kernel/aipu/) -> entry."""
    out = {}
    for e in entries:
        for w in e["What"]:
            if not w.startswith(PREFIX):
                raise DocError(f"line {e['_line']}: What: {w} is not under {PREFIX}")
            out[w[len(PREFIX) :]] = e
    return out


def stat_names(entry):
    """First column of the ===-ruled table in the stat entry's Description."""
    names = []
    inside = False
    for line in entry["Description"].splitlines():
        s = line.strip()
        if re.match(r"^=+(\s+=+)+$", s):
            inside = not inside
            continue
        if inside and line.strip() and not re.match(r"^\s{2,}\S", line.replace("\t", "", 2)):
            names.append(s.split()[0])
    return names


def mode_of(entry):
    m = re.search(r"\((RW|RO)\)", entry["Description"])
    return m.group(1) if m else None


def default_of(entry):
    m = re.search(r"^\s*Default:\s*(\S+)\s*$", entry["Description"], re.M)
    return m.group(1) if m else None


def range_of(entry):
    m = re.search(r"^\s*Range:\s*(\d+)\s*-\s*(\d+)\s*$", entry["Description"], re.M)
    return (m.group(1), m.group(2)) if m else None


# modinfo -F parm: "name:description (min to max, default d) (uint)" or
# "name:description (default name) (charp)".
PARM = re.compile(r"^(\w+):.*\((?:(\d+) to (\d+), )?default (\S+)\) \((uint|charp)\)$")


def parse_modinfo(text):
    """name -> (range or None, default) of each module parameter."""
    parms = {}
    for line in text.splitlines():
        m = PARM.match(line.strip())
        if not m:
            raise DocError(f"modinfo line not understood: {line!r}")
        rng = (m.group(2), m.group(3)) if m.group(2) else None
        parms[m.group(1)] = (rng, m.group(4))
    return parms


def check_modinfo(c, docs, path):
    try:
        with open(path, encoding="utf-8") as f:
            parms = parse_modinfo(f.read())
    except (OSError, DocError) as e:
        c.ok(False, f"{path} lists the module's parameters", str(e))
        return
    knobs = {n: e for n, e in docs.items() if default_of(e) is not None}
    c.ok(
        sorted(parms) == sorted(knobs),
        f"the {len(parms)} module parameters are the {len(knobs)} documented knobs",
        f"parameters {sorted(parms)}, documented {sorted(knobs)}",
    )
    for name, (rng, default) in sorted(parms.items()):
        e = knobs.get(name)
        if e is None:
            continue
        c.ok(
            default_of(e) == default,
            f"{name}: documented default {default_of(e)} is the module's",
            f"modinfo says {default}",
        )
        if rng is not None:
            c.ok(
                range_of(e) == rng,
                f"{name}: documented range {range_of(e)} is the module's",
                f"modinfo says {rng}",
            )


def lines_of(entry):
    m = re.search(r"\b(\d+) lines\b", entry["Description"])
    return int(m.group(1)) if m else None


def sysfs_tree(root):
    """Every file and directory below root, relative, directories with '/'."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirnames:
            out.append(os.path.normpath(os.path.join(rel, d)) + "/")
        for f in filenames:
            out.append(os.path.normpath(os.path.join(rel, f)))
    return sorted(out)


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self, cond, msg, why=""):
        if cond:
            self.passed += 1
            print(f"PASS: {msg}")
        else:
            self.failed += 1
            print(f"FAIL: {msg}{': ' + why if why else ''}")
        return cond


def check(doc_path, root, defaults, modinfo=None):
    c = Checker()
    try:
        with open(doc_path, encoding="utf-8") as f:
            entries = parse(f.read())
        docs = documented(entries)
    except (OSError, DocError) as e:
        c.ok(False, f"{doc_path} parses as a Documentation/ABI file", str(e))
        return c
    c.ok(True, f"{doc_path} parses as a Documentation/ABI file ({len(entries)} entries)")

    have = sysfs_tree(root)
    c.ok(bool(have), f"{root} lists files", "it is empty")
    undocumented = [p for p in have if p.rstrip("/") not in docs and p not in docs]
    c.ok(
        not undocumented,
        f"every one of the {len(have)} files in {root} is documented",
        "not documented: " + " ".join(undocumented),
    )
    missing = [d for d in docs if not os.path.exists(os.path.join(root, d))]
    c.ok(
        not missing,
        f"every one of the {len(docs)} documented files exists",
        "documented but missing: " + " ".join(missing),
    )

    for name, e in sorted(docs.items()):
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        want = mode_of(e)
        got = "RW" if os.stat(path).st_mode & stat.S_IWUSR else "RO"
        c.ok(want == got, f"{name}: documented {want}, file is {got}")

    if "devices" in docs and os.path.isfile(os.path.join(root, "devices")):
        with open(os.path.join(root, "devices")) as f:
            rows = [line.split() for line in f.read().splitlines()]
        doc = stat_names(docs["devices"])
        bad = [
            " ".join(r)
            for r in rows
            if len(r) % 2 != 1 or r[1::2] != doc or not all(v.isdigit() for v in r[2::2])
        ]
        c.ok(
            not bad,
            f"devices: each of its {len(rows)} lines is a name and the documented pairs, in order",
            f"documented {doc}; lines not so: " + "; ".join(bad),
        )

    if "stat" in docs and os.path.isfile(os.path.join(root, "stat")):
        with open(os.path.join(root, "stat")) as f:
            rows = [line.split() for line in f.read().splitlines()]
        bad = [" ".join(r) for r in rows if len(r) != 2 or not r[1].isdigit()]
        c.ok(not bad, "stat: every line is 'name value'", "bad lines: " + "; ".join(bad))
        live = [r[0] for r in rows if r]
        doc = stat_names(docs["stat"])
        c.ok(
            not [n for n in live if n not in doc],
            f"every one of the {len(live)} stat counters is documented",
            "not documented: " + " ".join(n for n in live if n not in doc),
        )
        c.ok(
            not [n for n in doc if n not in live],
            f"every one of the {len(doc)} documented stat counters is in stat",
            "documented but not in stat: " + " ".join(n for n in doc if n not in live),
        )
        c.ok(live == doc, "stat counters come in the documented order", f"stat: {live}, doc: {doc}")

    for name in sorted(docs):
        e = docs[name]
        path = os.path.join(root, name)
        if not name.endswith("_hist") or not os.path.isfile(path):
            continue
        with open(path) as f:
            rows = [line.split() for line in f.read().splitlines()]
        want = lines_of(e)
        c.ok(want == len(rows), f"{name}: {len(rows)} lines, documented {want}")
        shape = all(
            len(r) == 3
            and r[0].isdigit()
            and r[2].isdigit()
            and (r[1].isdigit() or (i == len(rows) - 1 and r[1] == "-"))
            for i, r in enumerate(rows)
        )
        c.ok(
            shape and rows and rows[-1][1] == "-",
            f"{name}: lines are 'low high count', the last 'low - count'",
        )

    if defaults:
        for name, e in sorted(docs.items()):
            d = default_of(e)
            path = os.path.join(root, name)
            if d is None or not os.path.isfile(path):
                continue
            with open(path) as f:
                val = f.read().strip()
            m = re.search(r"\[([^]]+)\]", val)
            got = m.group(1) if m else val
            c.ok(
                got == d,
                f"{name}: value at load without parameters is the documented default {d}",
                f"got {got}",
            )
    if modinfo:
        check_modinfo(c, docs, modinfo)
    return c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    pc = sub.add_parser("check")
    pc.add_argument("--doc", required=True)
    pc.add_argument("--sysfs", required=True)
    pc.add_argument("--defaults", action="store_true")
    pc.add_argument("--modinfo", help="the output of modinfo -F parm aipu.ko")
    pl = sub.add_parser("list")
    pl.add_argument("--doc", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "list":
        with open(a.doc, encoding="utf-8") as f:
            entries = parse(f.read())
        for name, e in sorted(documented(entries).items()):
            print(name)
            if name == "stat":
                for s in stat_names(e):
                    print(f"stat:{s}")
        return 0
    c = check(a.doc, a.sysfs, a.defaults, a.modinfo)
    print(f"abidoc: {c.passed} checks passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())

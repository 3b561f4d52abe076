#!/usr/bin/env python3
"""run.py PROGRAM FILE.in: runs PROGRAM FILE.in and compares its output
with FILE.out line by line (UKP_UPDATE_GOLDEN=1 writes FILE.out instead).
A missing FILE.out is a failure."""
import difflib
import os
import subprocess
import sys

prog, inp = sys.argv[1], sys.argv[2]
want_path = inp[:-3] + ".out"
r = subprocess.run([prog, inp], capture_output=True, text=True)
if r.returncode:
    sys.exit("%s failed (%d): %s" % (prog, r.returncode, r.stderr))
if os.environ.get("UKP_UPDATE_GOLDEN") == "1":
    with open(want_path, "w") as f:
        f.write(r.stdout)
    print("wrote", want_path)
    sys.exit(0)
with open(want_path) as f:
    want = f.read()
if r.stdout != want:
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), r.stdout.splitlines(True),
                                               want_path, "now"))
    sys.exit(1)
print("ok: %d lines as %s" % (len(want.splitlines()), want_path))

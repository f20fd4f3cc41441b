"""Runs every ```python block of bindings/python/README.md, each in a fresh namespace, so
the README's examples are checked by CI (test.sh calls this)."""

import os
import re
import sys
import threading

readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
with open(readme, encoding="utf-8") as f:
    blocks = re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.S | re.M)
if not blocks:
    sys.exit("README.md has no ```python example")
failures = []
threading.excepthook = lambda args: failures.append(args)  # a thread's failure fails the run
for i, code in enumerate(blocks, 1):
    print("-- README example %d" % i)
    exec(compile(code, "README.md example %d" % i, "exec"), {"__name__": "__main__"})
    if failures:
        f = failures[0]
        sys.exit("README example %d: a thread raised %r" % (i, f.exc_value))
print("-- %d README example(s) ran" % len(blocks))

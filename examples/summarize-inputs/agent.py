"""Counts the words of every input file; writes /workdir/out/summary.json."""
import json
import os

counts = {}
for root, _, files in os.walk("/workdir/inputs"):
    for name in sorted(files):
        path = os.path.join(root, name)
        with open(path, encoding="utf-8", errors="replace") as f:
            counts[os.path.relpath(path, "/workdir/inputs")] = len(f.read().split())
with open("/workdir/out/summary.json", "w") as f:
    json.dump(counts, f, indent=2, sort_keys=True)
print(f"summarised {len(counts)} files")

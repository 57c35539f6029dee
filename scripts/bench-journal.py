#!/usr/bin/env python3
"""Writes a large journalctl -o json capture built from the night fixture:
N copies, each shifted by a day and with its own invocation, container and
cursor ids, so the analyzer sees N x 16 distinct attempts.
usage: bench-journal.py FIXTURE N OUT [FIRST] (copies FIRST..FIRST+N-1)"""
import hashlib, json, sys

src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
lines = [json.loads(l) for l in open(src)]
ID_FIELDS = ("_SYSTEMD_INVOCATION_ID", "INVOCATION_ID", "CONTAINER_ID_FULL", "PODMAN_ID", "_STREAM_ID")

def remap(v, k):
    return hashlib.md5(f"{v}/{k}".encode()).hexdigest() if isinstance(v, str) else v

with open(out, "w") as f:
    for k in range(first, first + n):
        shift = k * 86_400_000_000
        for o in lines:
            o = dict(o)
            for fld in ID_FIELDS:
                if fld in o:
                    o[fld] = remap(o[fld], k)
            if "CONTAINER_ID_FULL" in o and "_SYSTEMD_UNIT" in o and o["_SYSTEMD_UNIT"].startswith("libpod-conmon-"):
                o["_SYSTEMD_UNIT"] = "libpod-conmon-" + o["CONTAINER_ID_FULL"] + ".scope"
            o["__REALTIME_TIMESTAMP"] = str(int(o["__REALTIME_TIMESTAMP"]) + shift)
            o["__CURSOR"] = o["__CURSOR"] + f";k={k}"
            f.write(json.dumps(o, separators=(",", ":")) + "\n")

#!/usr/bin/env python3
"""Converts journalctl -o json lines to the journal export format (byte
arrays become binary fields), for systemd-journal-remote -o FILE -.
usage: json2export.py IN.json > OUT.export"""
import json, struct, sys

out = sys.stdout.buffer
for line in open(sys.argv[1], "rb"):
    rec = json.loads(line)
    for k, v in rec.items():
        if k in ("__CURSOR",) or v is None:
            continue
        if isinstance(v, list):
            if v and isinstance(v[0], list):
                v = v[0]
            b = bytes(v)
            out.write(k.encode() + b"\n" + struct.pack("<Q", len(b)) + b + b"\n")
        else:
            b = str(v).encode()
            if b"\n" in b:
                out.write(k.encode() + b"\n" + struct.pack("<Q", len(b)) + b + b"\n")
            else:
                out.write(k.encode() + b"=" + b + b"\n")
    out.write(b"\n")

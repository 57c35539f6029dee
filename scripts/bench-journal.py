#!/usr/bin/env python3
"""Writes a large journalctl -o json capture built from the night fixture:
N copies, each shifted by a day and with its own invocation, container and
cursor ids, so the analyzer sees N x 16 distinct attempts. The dates and
times the messages print (vLLM's "10-01 22:13:32", ISO "2025-10-01 22:13:32")
are shifted too: copies repeat a night's lines as real nights do, not
their timestamps.
usage: bench-journal.py FIXTURE N OUT [FIRST] (copies FIRST..FIRST+N-1)"""
import datetime, hashlib, json, re, sys

src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
lines = [json.loads(l) for l in open(src)]
ID_FIELDS = ("_SYSTEMD_INVOCATION_ID", "INVOCATION_ID", "CONTAINER_ID_FULL", "PODMAN_ID", "_STREAM_ID")

STAMP = re.compile(rb"\b(?:(\d{4})-)?(\d\d)-(\d\d)([ T]\d\d:\d\d:\d\d)")

def shift_stamps(text, days, year0):
    def sub(m):
        year = int(m.group(1)) if m.group(1) else year0  # vLLM prints no year
        try:
            d = datetime.date(year, int(m.group(2)), int(m.group(3))) + datetime.timedelta(days=days)
        except ValueError:
            return m.group(0)
        head = b"%04d-" % d.year if m.group(1) else b""
        return head + b"%02d-%02d" % (d.month, d.day) + m.group(4)
    return STAMP.sub(sub, text)

def shift_message(m, days, year0):
    if isinstance(m, str):
        return shift_stamps(m.encode(), days, year0).decode()
    if isinstance(m, list):
        return list(shift_stamps(bytes(m), days, year0))
    return m

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
            if k and "MESSAGE" in o:
                year0 = datetime.datetime.fromtimestamp(int(o["__REALTIME_TIMESTAMP"]) / 1e6, datetime.timezone.utc).year
                o["MESSAGE"] = shift_message(o["MESSAGE"], k, year0)
            o["__REALTIME_TIMESTAMP"] = str(int(o["__REALTIME_TIMESTAMP"]) + shift)
            o["__CURSOR"] = o["__CURSOR"] + f";k={k}"
            f.write(json.dumps(o, separators=(",", ":")) + "\n")

#!/usr/bin/env python3
"""Writes a serving journal (journalctl -o json) of N lines: BOOTS boots of
the night fixture's last attempt (vLLM in podman, reaches ready), each
followed by what a serving engine logs: uvicorn access lines and the
periodic throughput/KV-usage stats line, a third of them with ANSI colour
codes, which journald exports as byte arrays like the fixture's lines.
usage: bench-serving.py FIXTURE N OUT [BOOTS]"""
import hashlib, json, random, sys

src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
boots = int(sys.argv[4]) if len(sys.argv) > 4 else 5
recs = [json.loads(l) for l in open(src)]
# The last boot: from the last invocation's first record to the end.
last_inv = [r for r in recs if r.get("_SYSTEMD_UNIT") == "frank-primary.service"][-1]["_SYSTEMD_INVOCATION_ID"]
start = next(i for i, r in enumerate(recs) if r.get("_SYSTEMD_INVOCATION_ID") == last_inv or r.get("INVOCATION_ID") == last_inv)
boot = recs[start:]
container = next(r for r in boot if "CONTAINER_ID_FULL" in r)
ID_FIELDS = ("_SYSTEMD_INVOCATION_ID", "INVOCATION_ID", "CONTAINER_ID_FULL", "PODMAN_ID", "_STREAM_ID")
rng = random.Random(1)

def remap(v, k):
    return hashlib.md5(f"{v}/{k}".encode()).hexdigest() if isinstance(v, str) else v

ESC = "\x1b"
def serving_line(t):
    stamp = t.strftime("%m-%d %H:%M:%S")
    if rng.random() < 0.1:
        msg = (f"(APIServer pid=1) INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: {rng.uniform(0, 4000):.1f} tokens/s, "
               f"Avg generation throughput: {rng.uniform(0, 900):.1f} tokens/s, Running: {rng.randint(0, 5)} reqs, Waiting: 0 reqs, "
               f"GPU KV cache usage: {rng.uniform(0, 90):.1f}%, Prefix cache hit rate: {rng.uniform(0, 60):.1f}%")
    else:
        path = rng.choice(["/v1/chat/completions", "/v1/completions", "/health", "/metrics", "/v1/models"])
        msg = f'(APIServer pid=1) INFO:     10.88.0.{rng.randint(2, 250)}:{rng.randint(30000, 60000)} - "{rng.choice(["POST", "GET"])} {path} HTTP/1.1" 200 OK'
    if rng.random() < 1 / 3:
        msg = msg.replace("INFO", f"{ESC}[32mINFO{ESC}[0m", 1)
        return list((msg + "\n").encode())
    return msg

import datetime
per_boot = n // boots
written = 0
seq = 0
with open(out, "w") as f:
    for k in range(boots):
        shift = k * 86_400_000_000
        last = None
        for o in boot:
            o = dict(o)
            for fld in ID_FIELDS:
                if fld in o:
                    o[fld] = remap(o[fld], k)
            if "CONTAINER_ID_FULL" in o and o.get("_SYSTEMD_UNIT", "").startswith("libpod-conmon-"):
                o["_SYSTEMD_UNIT"] = "libpod-conmon-" + o["CONTAINER_ID_FULL"] + ".scope"
            o["__REALTIME_TIMESTAMP"] = str(int(o["__REALTIME_TIMESTAMP"]) + shift)
            o["__CURSOR"] = o["__CURSOR"] + f";k={k}"
            f.write(json.dumps(o, separators=(",", ":")) + "\n")
            written += 1
            last = o
        tmpl = dict(container)
        for fld in ID_FIELDS:
            if fld in tmpl:
                tmpl[fld] = remap(tmpl[fld], k)
        tmpl["_SYSTEMD_UNIT"] = "libpod-conmon-" + tmpl["CONTAINER_ID_FULL"] + ".scope"
        us = int(last["__REALTIME_TIMESTAMP"])
        target = per_boot * (k + 1) if k < boots - 1 else n
        while written < target:
            us += rng.randint(1000, 200000)
            seq += 1
            o = dict(tmpl)
            o["MESSAGE"] = serving_line(datetime.datetime.fromtimestamp(us / 1e6, datetime.timezone.utc))
            o["__REALTIME_TIMESTAMP"] = str(us)
            o["__CURSOR"] = f"s=bench;i={seq:x};k={k}"
            f.write(json.dumps(o, separators=(",", ":")) + "\n")
            written += 1

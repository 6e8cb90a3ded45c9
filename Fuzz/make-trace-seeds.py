#!/usr/bin/env python3
"""Writes seed inputs for TraceFuzzer into the folder given (default: corpus/trace).

Each seed is a format byte (0 one key per line, 1 ARC .lis, 2 CSV, 3 oracleGeneral .bin) followed
by a small valid file of that format. With ../../shared/traces beside the checkout (two levels above this folder), the first
4 KiB of each real trace is a seed too (cut at a line's end, or a record's for .bin)."""
import os, struct, sys

here = os.path.dirname(os.path.abspath(__file__))
folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "trace")
os.makedirs(folder, exist_ok=True)

LINES, ARC, CSV, BIN = 0, 1, 2, 3


def records(ids):
    return b"".join(struct.pack("<IQIq", t, key, 4096, -1) for t, key in enumerate(ids))


seeds = {
    "lines": (LINES, b"1\n2\n*\n3\n\n2\n18446744073709551615\n-5\n"),
    "lines-crlf": (LINES, b"\xef\xbb\xbf7\r\n8\r\n 9\t\r\n"),
    "arc": (ARC, b"1 1 0 0\n5 3 0 0\n2 1 0 0\n9223372036854775808 2 0 0\n-2 3 0 0\n"),
    "csv": (CSV, b"time,obj_id,size\n1,10,4\n2,abc,4\n3, 10 ,4\n4,18446744073709551615,1\n"),
    "csv-lbn": (CSV, b"\n\nversion,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633898,2a,512,42932746\n"),
    "bin": (BIN, records([1, 2, 1, 2**64 - 1, 3])),
}
traces = os.path.join(here, "..", "..", "shared", "traces")
if os.path.isdir(traces):
    for name in sorted(os.listdir(traces)):
        kind = {".trace": LINES, ".keys": LINES, ".lis": ARC, ".csv": CSV, ".bin": BIN}.get(os.path.splitext(name)[1])
        if kind is None:
            continue
        with open(os.path.join(traces, name), "rb") as f:
            head = f.read(4096)
        head = head[: len(head) // 24 * 24] if kind == BIN else head[: head.rfind(b"\n") + 1]
        seeds["real-" + name] = (kind, head)
for name, (kind, data) in seeds.items():
    with open(os.path.join(folder, name), "wb") as f:
        f.write(bytes([kind]) + data)
print(f"wrote {len(seeds)} seeds to {folder}")

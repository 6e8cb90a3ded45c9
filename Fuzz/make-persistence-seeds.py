#!/usr/bin/env python3
"""Writes seed inputs for PersistenceFuzzer into the folder given (default: corpus/persistence).

Each seed is a mode byte (bit 0: 0 JSON, 1 property list; bit 1 clear: the rest is a payload the
fuzzer wraps in a valid header) followed by a valid payload of that serializer."""
import json, os, plistlib, sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "persistence")
os.makedirs(folder, exist_ok=True)
entries = [
    {"key": "a", "value": {"children": []}, "cost": 1},
    {"key": "b", "value": {"children": [{"children": [], "label": "x", "number": 7}]}, "cost": 0},
]
seeds = {
    "json-entries": b"\x00" + json.dumps(entries).encode(),
    "json-empty": b"\x00[]",
    "plist-entries": b"\x01" + plistlib.dumps(entries, fmt=plistlib.FMT_BINARY),
    "plist-empty": b"\x01" + plistlib.dumps([], fmt=plistlib.FMT_BINARY),
}
for name, data in seeds.items():
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {folder}")

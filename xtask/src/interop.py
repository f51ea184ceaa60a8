"""Reads every file `cargo xtask interop bloscpack` wrote with the reference
Python libraries and compares what they decode with what we wrote.

Run by the xtask inside a throw-away virtual environment holding numpy,
python-blosc 1.11, python-bloscpack 0.16 and bcolz-zipline.
"""
import collections
import collections.abc
import hashlib
import json
import sys

# python-bloscpack 0.16 predates Python 3.10, which moved these names.
for _name in ("MutableMapping", "Mapping", "OrderedDict"):
    if not hasattr(collections, _name):
        setattr(collections, _name, getattr(collections.abc, _name))

import numpy as np  # noqa: E402
import bloscpack  # noqa: E402
import bcolz  # noqa: E402


def sha(b):
    return hashlib.sha256(b).hexdigest()


def main(manifest_path):
    with open(manifest_path) as f:
        manifest = json.load(f)
    passed = failed = 0
    for entry in manifest:
        kind, path = entry["kind"], entry["path"]
        try:
            if kind == "bytes":
                data, meta = bloscpack.unpack_bytes_from_file(path)
                ok = sha(data) == entry["sha256"]
                if ok and entry.get("metadata") is not None:
                    ok = meta == entry["metadata"]
            elif kind == "ndarray":
                arr = bloscpack.unpack_ndarray_from_file(path)
                raw = arr.tobytes(order="F" if entry["order"] == "F" else "C")
                ok = sha(raw) == entry["sha256"] and list(arr.shape) == entry["shape"] and arr.dtype.descr == np.dtype(eval(entry["dtype_literal"])).descr
            elif kind == "bcolz":
                obj = bcolz.open(path)
                arr = obj[:]
                ok = sha(arr.tobytes()) == entry["sha256"] and len(obj) == entry["rows"]
                if ok and entry.get("attrs") is not None:
                    ok = dict(obj.attrs) == entry["attrs"]
            else:
                ok = False
        except Exception as e:  # a failure to read counts as a failure
            ok = False
            print(f"FAIL {path}: {type(e).__name__}: {e}")
        else:
            if not ok:
                print(f"FAIL {path}: decoded content differs")
        if ok:
            passed += 1
        else:
            failed += 1
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

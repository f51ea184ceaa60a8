"""Reads every TBL v2 file `cargo xtask interop tbl2` wrote with TurboLoader's
own reader (PyPI turboloader, in a throw-away virtual environment) and
compares samples, dimensions, formats, flags and metadata with what we wrote.
"""
import hashlib
import json
import sys

import turboloader


def main(manifest_path):
    with open(manifest_path) as f:
        manifest = json.load(f)
    passed = failed = 0
    for entry in manifest:
        path = entry["path"]
        problems = []
        try:
            r = turboloader.TblReaderV2(path)
            if r.num_samples() != len(entry["samples"]):
                problems.append(f"{r.num_samples()} samples, expected {len(entry['samples'])}")
            for i, s in enumerate(entry["samples"]):
                data = r.read_sample(i)
                if hashlib.sha256(data).hexdigest() != s["sha256"]:
                    problems.append(f"sample {i} content differs")
                info = r.get_sample_info(i)
                got = (info["width"], info["height"], int(info["format"]), bool(info["is_compressed"]))
                want = (s["width"], s["height"], s["format"], s["compressed"])
                if got != want:
                    problems.append(f"sample {i} info {got} != {want}")
                text, kind = r.read_metadata(i)
                want_meta = s.get("metadata")
                if want_meta is None:
                    if text != "":
                        problems.append(f"sample {i} has unexpected metadata")
                elif text != want_meta["text"] or int(kind) != want_meta["type"]:
                    problems.append(f"sample {i} metadata {text!r}/{int(kind)} != {want_meta}")
        except Exception as e:  # a failure to read is a failure
            problems.append(f"{type(e).__name__}: {e}")
        if problems:
            failed += 1
            print(f"FAIL {path}: " + "; ".join(problems[:5]))
        else:
            passed += 1
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

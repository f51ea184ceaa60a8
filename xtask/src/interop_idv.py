"""Loads every IDV file of the manifest with ML.NET 1.5 (from PyPI wheels,
no NuGet), checks the schema ML.NET sees, and re-saves each file with
ML.NET's BinarySaver, which decodes every value of every column; the xtask
then compares the re-saved values with what it wrote."""
import json
import os
import sys

import mlnet

manifest_path, mlnet_dir = sys.argv[1], sys.argv[2]
mlnet.load(mlnet_dir)
from Microsoft.ML import BinaryLoaderSaverCatalog, MLContext  # noqa: E402
from System.IO import File  # noqa: E402

ctx = MLContext(1)
manifest = json.load(open(manifest_path))
failures = 0
for entry in manifest:
    path = entry["path"]
    problems = []
    try:
        dv = BinaryLoaderSaverCatalog.LoadFromBinary(ctx.Data, path)
        seen = [(c.Name, c.Type.ToString(), [a.Name for a in c.Annotations.Schema]) for c in dv.Schema]
        want = [(c["name"], c["type"], c["annotations"]) for c in entry["columns"]]
        if seen != want:
            problems.append("schema: ML.NET sees %r, we wrote %r" % (seen, want))
        # ML.NET's saver refuses a view without columns ("No valid columns
        # to save"), whoever wrote it: such a file is only loaded.
        if entry["columns"]:
            out = File.Create(path + ".mlnet.idv")
            try:
                BinaryLoaderSaverCatalog.SaveAsBinary(ctx.Data, dv, out, True)
            finally:
                out.Dispose()
    except Exception as e:  # ML.NET's exceptions come through as Python ones
        problems.append("ML.NET failed: %s" % e)
    if problems:
        failures += 1
        print("FAIL %s: %s" % (os.path.basename(path), "; ".join(problems)))
    else:
        print("LOADED %s: %d columns" % (os.path.basename(path), len(entry["columns"])))
print("interop idv (ML.NET side): %d loaded, %d failed" % (len(manifest) - failures, failures))
sys.exit(1 if failures else 0)

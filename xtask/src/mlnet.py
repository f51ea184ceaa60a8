"""Starts ML.NET 1.5 inside this Python process from the unpacked PyPI
wheels in `mlnet_dir` (the .NET Core 3.1 runtime of dotnetcore2 and the
assemblies of nimbusml, through pythonnet), without NuGet; see the research
note idv-mlnet-interop.md. `cargo xtask interop idv` and `cargo xtask bench
--compare idv` write this file beside their scripts, which import it."""
import json
import os
import sys


def load(mlnet_dir, assemblies=("Microsoft.ML.DataView", "Microsoft.ML.Core", "Microsoft.ML.Data",
                                "Microsoft.ML.CpuMath", "Microsoft.ML.Transforms",
                                "Microsoft.ML.StandardTrainers")):
    """Starts the runtime and references `assemblies`; returns the `clr` module."""
    os.environ["DOTNET_SYSTEM_GLOBALIZATION_INVARIANT"] = "1"
    dotnet_root = os.path.join(mlnet_dir, "dotnetcore2", "bin")
    os.chmod(os.path.join(dotnet_root, "dotnet"), 0o755)
    cfg = os.path.join(mlnet_dir, "runtimeconfig.json")
    with open(cfg, "w") as f:
        json.dump({"runtimeOptions": {"tfm": "netcoreapp3.1",
                                      "framework": {"name": "Microsoft.NETCore.App", "version": "3.1.0"},
                                      "configProperties": {"System.Globalization.Invariant": True}}}, f)
    from clr_loader import get_coreclr
    from pythonnet import set_runtime

    set_runtime(get_coreclr(runtime_config=cfg, dotnet_root=dotnet_root))
    import clr

    sys.path.append(os.path.join(mlnet_dir, "nimbusml", "internal", "libs"))
    for name in assemblies:
        clr.AddReference(name)
    return clr

"""iosfarm: run CNNs with their tuned IOS schedules, tune them here or on a farm.

    import iosfarm, numpy as np
    s = iosfarm.Session("model.onnx", schedule="model.schedule.json", backend="cpu")
    y = s.run({"input": np.zeros((1, 3, 224, 224), np.float32)})["output"]

    fast = iosfarm.optimize(torch_module, torch.randn(1, 3, 224, 224))
    y = fast(x)   # torch tensors in, torch tensors out

    farm = iosfarm.Farm("farm:7070")                 # a tuning farm's server
    result = farm.wait(farm.submit("resnet50", device="h100-sxm").id)

    tuned = iosfarm.tune("model.onnx", batch_sizes=[1, 8], save="model.iosfarm")

Session and Error come from the native module (include/iosfarm/runtime.h);
optimize and OptimizedModule are in iosfarm/torch_optimize.py, Farm in
iosfarm/farm.py (its results in iosfarm/farm_types.py), search and tune in
iosfarm/embedded.py. torch and gRPC are imported only when used.
"""
from iosfarm._native import Error, Session, __version__
from iosfarm.embedded import SearchReport, search, tune
from iosfarm.farm import Farm
from iosfarm.farm_types import Job, JobEvent, JobProgress, JobResult, Worker
from iosfarm.torch_optimize import optimize
from iosfarm.tuned_model import TunedModel, read_tuned_model

__all__ = ["Error", "Farm", "Job", "JobEvent", "JobProgress", "JobResult", "OptimizedModule",
           "SearchReport", "Session", "TunedModel", "Worker", "__version__", "optimize",
           "read_tuned_model", "search", "tune"]


def __getattr__(name):
    if name == "OptimizedModule":  # made on first use: it needs torch
        from iosfarm import torch_optimize
        return torch_optimize.__getattr__(name)
    raise AttributeError(f"module 'iosfarm' has no attribute {name!r}")

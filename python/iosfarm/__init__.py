"""iosfarm: run CNNs with their tuned IOS schedules, and tune PyTorch modules.

    import iosfarm, numpy as np
    s = iosfarm.Session("model.onnx", schedule="model.schedule.json", backend="cpu")
    y = s.run({"input": np.zeros((1, 3, 224, 224), np.float32)})["output"]

    fast = iosfarm.optimize(torch_module, torch.randn(1, 3, 224, 224))
    y = fast(x)   # torch tensors in, torch tensors out

Session and Error come from the native module (include/iosfarm/runtime.h);
optimize and OptimizedModule are in iosfarm/torch_optimize.py.
"""
from iosfarm._native import Error, Session, __version__
from iosfarm.torch_optimize import optimize

__all__ = ["Error", "OptimizedModule", "Session", "__version__", "optimize"]


def __getattr__(name):
    if name == "OptimizedModule":  # made on first use: it needs torch
        from iosfarm import torch_optimize
        return torch_optimize.__getattr__(name)
    raise AttributeError(f"module 'iosfarm' has no attribute {name!r}")

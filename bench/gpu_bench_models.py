"""gpu_bench.py's models: the keys `run` works through, their search bounds
and budgets, and the names of their result rows."""

# key -> (schedule_bench display name, zoo name or torchvision model for ONNX),
# in the order `run` works through them.
MODELS = {
    "squeezenet": ("squeezenet", None),
    "inception_v3": ("inception_v3", None),
    "tv_inception_v3": ("inception_v3.onnx", "inception_v3"),
    "tv_googlenet": ("googlenet.onnx", "googlenet"),
    "randwire": ("randwire", None),
    "nasnet_a": ("nasnet_a", None),
    "resnet50": ("resnet50", None),
}
# Bounds tried in order on the cuda backend (see the module doc).
DEFAULT_BOUNDS = {
    "squeezenet": ["3x8"],
    "resnet50": ["3x8"],
    "inception_v3": ["3x8", "2x4"],
    "tv_inception_v3": ["3x8", "2x4"],
    "tv_googlenet": ["3x8", "2x4"],
    "randwire": ["2x3", "1x3"],
    "nasnet_a": ["1x3"],
}
# Seconds of stage measurement one search may take (per attempt).
DEFAULT_BUDGET = {
    "squeezenet": 60, "resnet50": 90, "inception_v3": 150, "tv_inception_v3": 150,
    "tv_googlenet": 120, "randwire": 120, "nasnet_a": 200,
}
GEOMEAN_MODELS = ("inception_v3", "randwire", "nasnet_a", "squeezenet")
# Rows of `run --graph-stages` (searched with stages timed as CUDA graphs) are
# named MODEL + this, apart from the eager-timed rows of the same model.
GRAPH_TIMED = " (graph-timed stages)"
# Rows of `run --graph-stages --flush-l2`: each replay timed after an L2 flush
# (schedule_bench --cuda-flush-l2, an experiment on composition).
FLUSHED = " (graph-timed stages, L2 flushed)"
SUFFIXES = (GRAPH_TIMED, FLUSHED)


def default_torch_models(keys):
    """torch_bench's models for --models KEYS: the torchvision networks among
    them (their rows are the ones PyTorch's figures stand beside)."""
    return [MODELS[key][1] for key in keys if key.startswith("tv_")]


def suffix_of(name):
    """The row name's stage-timing suffix, or ""."""
    return next((s for s in SUFFIXES if name.endswith(s)), "")


def base_model(name):
    """The display name without its stage-timing suffix."""
    suffix = suffix_of(name)
    return name[:-len(suffix)] if suffix else name


# The IOS paper's V100 batch-1 (sequential, IOS) milliseconds.
PAPER = {"inception_v3": (6.51, 4.03), "randwire": (8.49, 6.02), "nasnet_a": (22.95, 16.04),
         "squeezenet": (0.86, 0.73)}

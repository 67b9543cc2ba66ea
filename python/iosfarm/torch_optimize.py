"""iosfarm.optimize: a PyTorch module in, a module that runs its tuned IOS schedule out.

    fast = iosfarm.optimize(module, torch.randn(1, 3, 224, 224))   # tuned on this machine
    y = fast(x)                                                     # torch tensors in and out
    fast = iosfarm.optimize(module, x, server="farm:7070", device="h100-sxm")  # on a farm

Contract:
- example_inputs: a float32 tensor or a tuple/list of them. Their shapes are the
  shapes the returned module accepts (the first dimension is the batch).
- batch_sizes: the batch sizes to tune (e.g. [1, 8, 32]; default: the
  example's). The returned module takes exactly these, each with the schedule
  tuned for it; any other batch raises iosfarm.Error naming the ones it takes.
- The module is exported with torch.onnx.export (the TorchScript exporter,
  opset 13, in eval mode without gradients), inputs named input0, input1, ...,
  outputs output0, ... Before any tuning the export is opened with the
  sequential schedule on the backend: an operator the runtime cannot run
  raises iosfarm.Error naming it and the module path it came from.
- Tuning runs `iosfarm tune` (the CLI: $IOSFARM_CLI, else the one installed or
  built beside this package, else PATH): on this machine with an embedded
  server and worker on `backend`, or, with `server`, on that farm (its token
  from $IOSFARM_TOKEN, as for the CLI) under device key `device`. Its progress
  goes to stderr; Ctrl-C stops it (an interrupted local tune resumes from the
  latency database next time) and raises KeyboardInterrupt.
- Tuning writes one tuned model file (`iosfarm tune --batch ... --save`,
  docs/tuned-model-format.md): the model and a schedule per batch size.
  OptimizedModule.save(path) copies it, for iosfarm.Session(path) or the C++
  runtime elsewhere.
- Cache: `cache_dir` (default $XDG_CACHE_HOME/iosfarm/optimized, else
  ~/.cache/iosfarm/optimized) keeps model.iosfarm and meta.json under a key of
  the exported graph's sha256, the input shapes, batch sizes, backend, server,
  device and iosfarm's version. A later call with the same module, shapes and
  target exports the module again (for the key) and opens the entry: nothing
  is tuned or measured.
- The returned OptimizedModule checks the count, shape and dtype of what it is
  given (iosfarm.Error, code "invalid_argument", naming the input) and returns
  one tensor or a tuple. On cuda, CUDA tensors are read in place and the
  outputs are new CUDA tensors on the same device written by the runtime; on
  cpu, tensors reach the runtime through numpy without a copy. torch is
  imported only when optimize or OptimizedModule is first used.
"""
import hashlib
import inspect
import json
import os
import shutil
import tempfile

from iosfarm import _cli
from iosfarm._cli import error as _error
from iosfarm._native import Error, Session, __version__


def _find_cli():
    return _cli.find_cli("optimize tunes with `iosfarm tune`")


def _default_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "iosfarm", "optimized")


def _as_tuple(example_inputs, torch):
    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (
        example_inputs,)
    if not inputs:
        raise _error("example_inputs is empty: give the tensors the module takes")
    for i, tensor in enumerate(inputs):
        if not isinstance(tensor, torch.Tensor):
            raise _error(f"example input {i} is a {type(tensor).__name__}, not a torch.Tensor")
        if tensor.dtype != torch.float32:
            raise _error(f"example input {i} is {tensor.dtype}; iosfarm runs float32 models")
    return inputs


def module_path_of(node_name):
    """The module path ("layer1.0.conv1") in a TorchScript export's node name
    ("/layer1/layer1.0/conv1/Conv"); "" for a node of the top module."""
    parts = [p for p in node_name.split("/") if p][:-1]
    path = ""
    for part in parts:
        if path and part.startswith(path + "."):
            path = part
        elif path:
            path = f"{path}.{part}"
        else:
            path = part
    return path


def _export(module, inputs, path, torch):
    kwargs = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    outputs = module(*inputs)
    count = len(outputs) if isinstance(outputs, (tuple, list)) else 1
    with torch.no_grad():
        torch.onnx.export(module, inputs, path, opset_version=13,
                          input_names=[f"input{i}" for i in range(len(inputs))],
                          output_names=[f"output{i}" for i in range(count)],
                          do_constant_folding=True, **kwargs)
    return count


def _check_runnable(onnx_path, backend):
    """Opens the export with the sequential schedule; an unknown operator
    becomes an error naming the module it came from."""
    try:
        Session(onnx_path, schedule="sequential", backend=backend)
    except Error as e:
        message = str(e)
        try:
            import onnx  # Debian's python3-onnx; without it the message stays as it is
            model = onnx.load(onnx_path, load_external_data=False)
            for node in model.graph.node:
                if node.name and node.name in message:
                    where = module_path_of(node.name) or "the top module"
                    raise _error(f"{message} (from {where}, ONNX node {node.name}); "
                                 "nothing was tuned", getattr(e, "code", "unimplemented")) from e
        except ImportError:
            pass
        raise


def _batch_sizes(batch_sizes, inputs):
    """The batches to tune, ascending: `batch_sizes`, else the example's."""
    if batch_sizes is None:
        return [int(inputs[0].shape[0])] if inputs[0].dim() > 0 else [1]
    batches = list(batch_sizes)
    if not batches or any(not isinstance(b, int) or isinstance(b, bool) or not 1 <= b <= 4096
                          for b in batches):
        raise _error(f"batch_sizes must be a list of integers from 1 to 4096, got {batch_sizes!r}")
    if len(set(batches)) != len(batches):
        raise _error(f"batch_sizes repeats a batch size: {batch_sizes!r}")
    if any(t.dim() == 0 for t in inputs):
        raise _error("batch_sizes needs example inputs with a batch dimension")
    return sorted(batches)


def _tune(cli, onnx_path, tuned_path, batches, backend, server, device):
    cmd = [cli, "tune", onnx_path, "--batch", ",".join(str(b) for b in batches),
           "--save", tuned_path]
    if server:
        cmd += ["--server", server]
    else:
        cmd += ["--backend", backend]
    if device:
        cmd += ["--device", device]
    code, _ = _cli.run(cmd)  # the CLI's progress and messages go to stderr as they are
    if code != 0:
        raise _cli.failure(cmd, code)


def optimize(module, example_inputs, *, backend="auto", server=None, device=None,
             batch_sizes=None, cache_dir=None):
    """Tunes `module` for `example_inputs`' shapes at `batch_sizes`; returns an OptimizedModule."""
    import torch
    inputs = _as_tuple(example_inputs, torch)
    batches = _batch_sizes(batch_sizes, inputs)
    if backend == "auto":
        backend = "cuda" if any(t.is_cuda for t in inputs) or torch.cuda.is_available() else "cpu"
    if backend not in ("cpu", "cuda") and not backend.startswith("cuda:"):
        raise _error(f'backend must be "auto", "cpu", "cuda" or "cuda:N", got {backend!r}')
    if device is not None and not device.strip():
        raise _error("device must not be empty: give a device key, or None for the default")
    cache_dir = cache_dir or _default_cache_dir()
    was_training = module.training
    module.eval()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            exported = os.path.join(tmp, "model.onnx")
            with torch.no_grad():
                outputs = _export(module, tuple(t.detach() for t in inputs), exported, torch)
            with open(exported, "rb") as f:
                onnx_bytes = f.read()
            key = hashlib.sha256()
            key.update(hashlib.sha256(onnx_bytes).digest())
            key.update(json.dumps([[list(t.shape) for t in inputs], batches, backend,
                                   server or "", device or "", __version__]).encode())
            entry = os.path.join(cache_dir, key.hexdigest()[:32])
            tuned_path = os.path.join(entry, "model.iosfarm")
            meta_path = os.path.join(entry, "meta.json")
            cached = all(os.path.isfile(p) for p in (tuned_path, meta_path))
            if not cached:
                _check_runnable(exported, backend)
                os.makedirs(cache_dir, exist_ok=True)
                staging = tempfile.mkdtemp(prefix=".tuning-", dir=cache_dir)
                try:
                    # The export keeps its name: the tuned schedules' digests cover it.
                    staged = os.path.join(staging, "model.onnx")
                    shutil.copyfile(exported, staged)
                    _tune(_find_cli(), staged, os.path.join(staging, "model.iosfarm"), batches,
                          backend, server, device)
                    os.remove(staged)  # the tuned model file holds it
                    with open(os.path.join(staging, "meta.json"), "w") as f:
                        json.dump({"iosfarm": __version__, "backend": backend,
                                   "server": server or "", "device": device or "",
                                   "inputs": [list(t.shape) for t in inputs],
                                   "batch_sizes": batches, "outputs": outputs}, f)
                    if os.path.isdir(entry):
                        shutil.rmtree(entry)  # a partial entry of an interrupted call
                    os.replace(staging, entry)
                finally:
                    if os.path.isdir(staging):
                        shutil.rmtree(staging)
    finally:
        module.train(was_training)
    return _optimized_module_class()(tuned_path, backend, device=device, cached=cached)


_CLASS = None


def _optimized_module_class():
    """OptimizedModule, made on first use (it derives from torch.nn.Module)."""
    global _CLASS
    if _CLASS is None:
        import torch

        class OptimizedModule(_OptimizedModuleBody, torch.nn.Module):
            __doc__ = _OptimizedModuleBody.__doc__

        OptimizedModule.__module__ = "iosfarm"
        _CLASS = OptimizedModule
    return _CLASS


def __getattr__(name):
    if name == "OptimizedModule":
        return _optimized_module_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _OptimizedModuleBody:
    """A torch.nn.Module that runs a tuned model with iosfarm's runtime.

    OptimizedModule(tuned_path, backend, device=None): what optimize returns,
    over a tuned model file; `session` is the iosfarm.Session, `batch_sizes`
    the batches it takes, `from_cache` whether no tuning ran, save(path)
    copies the tuned model file."""

    def __init__(self, tuned_path, backend, device=None, cached=False):
        import torch
        torch.nn.Module.__init__(self)
        # device: the key the farm tuned for, which this machine's GPU is of.
        self.session = Session(tuned_path, backend=backend, device_key=device or "")
        self.backend = backend
        self.from_cache = cached
        self.tuned_path = tuned_path
        self.batch_sizes = tuple(self.session.batches)
        self._inputs = sorted(self.session.inputs.items(),
                              key=lambda kv: int(kv[0][len("input"):]))
        self._outputs = {batch: sorted(self.session.outputs_at(batch).items(),
                                       key=lambda kv: int(kv[0][len("output"):]))
                         for batch in self.batch_sizes}

    def save(self, path):
        """Copies the tuned model file to `path` (os.PathLike or str)."""
        shutil.copyfile(self.tuned_path, os.fspath(path))

    def _batch_of(self, tensors):
        batch = tensors[0].shape[0] if tensors[0].dim() > 0 else None
        if batch not in self._outputs:
            raise _error(f"input0: batch {batch} is not one the model was tuned for "
                         f"{self.batch_sizes}; optimize it with batch_sizes including it",
                         "failed_precondition")
        return batch

    def forward(self, *tensors):
        import torch
        if len(tensors) != len(self._inputs):
            raise _error(f"the tuned model takes {len(self._inputs)} input(s), "
                         f"got {len(tensors)}")
        on_cuda = self.backend.startswith("cuda")
        for (name, _), tensor in zip(self._inputs, tensors):
            if not isinstance(tensor, torch.Tensor):
                raise _error(f"{name}: expected a torch.Tensor, got {type(tensor).__name__}")
            if tensor.dtype != torch.float32:
                raise _error(f"{name}: expected float32, got {tensor.dtype}")
        batch = self._batch_of(tensors)
        feed = {}
        for (name, shape), tensor in zip(self._inputs, tensors):
            wanted = (batch,) + tuple(shape[1:])
            if tuple(tensor.shape) != wanted:
                raise _error(f"{name}: expected shape {wanted} (the shape it was tuned "
                             f"for), got {tuple(tensor.shape)}")
            tensor = tensor.detach().contiguous()
            feed[name] = tensor if on_cuda and tensor.is_cuda else tensor.cpu().numpy()
        outputs = self._outputs[batch]
        if on_cuda:
            device = next((t.device for t in tensors if t.is_cuda), torch.device(self.backend))
            out = {name: torch.empty(tuple(shape), dtype=torch.float32, device=device)
                   for name, shape in outputs}
            self.session.run(feed, outputs=out)
            results = [out[name] for name, _ in outputs]
        else:
            ran = self.session.run(feed)
            results = [torch.from_numpy(ran[name]) for name, _ in outputs]
        return results[0] if len(results) == 1 else tuple(results)

    def extra_repr(self):
        return repr(self.session)

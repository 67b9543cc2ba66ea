#!/usr/bin/python3
"""Exports torchvision classification CNNs to ONNX with random weights, offline.

Usage: export_torchvision.py OUT_DIR MODEL [MODEL ...] [--opset 13] [--batch 1]
                             [--reference]

Each model is written to OUT_DIR/MODEL.onnx (skipped if it already exists).
With --reference, each model's weights are drawn from seed 0 alone, and
PyTorch's own forward pass on a seeded random input is written next to it:
OUT_DIR/MODEL.input.npy and OUT_DIR/MODEL.output.npy (float32), the truth the
runtime's numerical tests compare with (a model is skipped only when all three
files exist).
Exits 3 with a message on stderr when torch or torchvision is missing, so callers
can skip with a clear reason.
"""
import argparse
import inspect
import os
import sys


def write_reference(model, example, stem: str) -> None:
    """Writes the input and PyTorch's output of `model` on it as .npy files."""
    import numpy
    import torch
    with torch.no_grad():
        output = model(example)
    for suffix, tensor in (("input", example), ("output", output)):
        tmp = f"{stem}.{suffix}.{os.getpid()}.tmp.npy"
        numpy.save(tmp, tensor.detach().numpy().astype(numpy.float32))
        os.replace(tmp, f"{stem}.{suffix}.npy")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("models", nargs="+")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--reference", action="store_true")
    args = parser.parse_args()
    try:
        import torch
        import torchvision
    except ImportError as error:
        print(f"torch/torchvision not available: {error}", file=sys.stderr)
        return 3
    torch.manual_seed(0)
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.models:
        path = os.path.join(args.out_dir, f"{name}.onnx")
        stem = os.path.join(args.out_dir, name)
        wanted = [path]
        if args.reference:
            wanted += [f"{stem}.input.npy", f"{stem}.output.npy"]
            torch.manual_seed(0)  # the same weights whatever is exported with it
        if all(os.path.exists(p) for p in wanted):
            continue
        builder = getattr(torchvision.models, name, None)
        if builder is None:
            print(f"unknown torchvision model: {name}", file=sys.stderr)
            return 2
        kwargs = {"weights": None}
        if name in ("inception_v3", "googlenet"):
            kwargs["aux_logits"] = False
            kwargs["init_weights"] = False
        model = builder(**kwargs).eval()
        size = 299 if name == "inception_v3" else 224
        example = torch.randn(args.batch, 3, size, size)
        # Unique per process: parallel test processes may export the same
        # model; os.replace makes the final write atomic.
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            # The TorchScript exporter, which the importer is tested against:
            # newer torch releases default `dynamo` to True (the torch.export
            # based exporter), whose graphs the importer was never tested with.
            kwargs = {}
            if "dynamo" in inspect.signature(torch.onnx.export).parameters:
                kwargs["dynamo"] = False
            with torch.no_grad():
                torch.onnx.export(model, example, tmp, opset_version=args.opset,
                                  input_names=["input"], output_names=["output"],
                                  do_constant_folding=True, **kwargs)
            if args.reference:
                write_reference(model, example, stem)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        print(f"exported {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

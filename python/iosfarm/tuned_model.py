"""Reading a tuned model file (.iosfarm, docs/tuned-model-format.md) in Python:
what iosfarm.tune returns and what Farm.submit sends for one.

read_tuned_model(path) -> TunedModel. The framing is checked as the C++
reader does (tuned_model/tuned_model_file.h): the 12-byte magic, format
version 1 (uint32 LE), the payload's length (uint64 LE), the payload (a
serialized iosfarm.v1.TunedModel), the SHA-256 of all before it as 64 hex
digits. Errors (iosfarm.Error): "not_found" when the file cannot be read,
"invalid_argument" naming the file and the reason for anything else but a
well-formed file, "failed_precondition" for a newer format version. The
payload is decoded with the generated iosfarm.v1.tuned_model_pb2 (Debian's
python3-protobuf); whether a schedule fits the model is the runtime's check
(iosfarm.Session opens the file).

is_tuned_model_file(path): whether `path` is a readable file with the magic.
"""
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Dict, Optional

from iosfarm._cli import error

MAGIC = b"\x89IOSFARM\r\n\x1a\n"
FORMAT_VERSION = 1
_HEADER_BYTES = len(MAGIC) + 4 + 8
_DIGEST_BYTES = 64


@dataclass
class MeasuredSchedule:
    """A whole schedule timed end to end on the worker that tuned it."""
    schedule: str  # ios, sequential, greedy
    median_ms: float = 0.0
    p10_ms: float = 0.0
    p90_ms: float = 0.0
    runs: int = 0


@dataclass
class TunedBatch:
    batch: int
    schedule_json: str = field(default="", repr=False)  # docs/schedule-format.md, this batch
    predicted_ms: float = 0.0  # sum of the schedule's measured stage latencies, not a run
    measured: Dict[str, MeasuredSchedule] = field(default_factory=dict)
    tuning_s: float = 0.0      # wall time of its search

    @property
    def measured_ms(self):
        """{schedule name: measured median ms}."""
        return {name: m.median_ms for name, m in self.measured.items()}

    @property
    def schedule(self):
        """schedule_json parsed."""
        return json.loads(self.schedule_json)


@dataclass
class TunedModel:
    """What a tuned model file holds; `path` is the file (iosfarm.Session(path))."""
    path: str
    model_name: str
    device_key: str
    backend: str = ""
    tuned_on: str = ""
    iosfarm_version: str = ""
    created_unix_s: int = 0
    zoo_name: str = ""                 # a zoo model's name; "" for ONNX models
    onnx: Optional[bytes] = field(default=None, repr=False)  # the ONNX model's bytes
    batches: Dict[int, TunedBatch] = field(default_factory=dict)  # ascending


def is_tuned_model_file(path):
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def _decode(data, name):
    def refuse(reason):
        return error(f"tuned model file '{name}': {reason}")
    if not data.startswith(MAGIC):
        raise refuse("not a tuned model file (it does not start with the \\x89IOSFARM magic; "
                     "`iosfarm tune MODEL --save FILE` writes one)")
    if len(data) < _HEADER_BYTES:
        raise refuse(f"truncated: {len(data)} bytes")
    version, length = struct.unpack_from("<IQ", data, len(MAGIC))
    if version != FORMAT_VERSION:
        message = f"format version {version}; this iosfarm reads version {FORMAT_VERSION}"
        if version > FORMAT_VERSION:
            raise error(f"tuned model file '{name}': {message} (a newer iosfarm wrote it: "
                        "upgrade)", "failed_precondition")
        raise refuse(message)
    available = len(data) - _HEADER_BYTES
    if length > available or available - length != _DIGEST_BYTES:
        what = "truncated" if length > available or available - length < _DIGEST_BYTES \
            else "bytes after its end"
        raise refuse(f"{what}: its header announces {length} bytes of model and "
                     f"{_DIGEST_BYTES} of checksum after {_HEADER_BYTES} of header, the file "
                     f"has {len(data)}")
    checked = _HEADER_BYTES + length
    if hashlib.sha256(data[:checked]).hexdigest().encode() != data[checked:]:
        raise refuse("its SHA-256 checksum does not match its contents: the file was changed "
                     "or damaged after iosfarm wrote it; tune again with `iosfarm tune MODEL "
                     "--save FILE`")
    try:
        from iosfarm.v1 import tuned_model_pb2
    except ImportError as e:
        raise error(f"reading tuned model file '{name}' needs iosfarm.v1 and protobuf "
                    f"(Debian: python3-protobuf): {e}", "unimplemented") from e
    model = tuned_model_pb2.TunedModel()
    try:
        model.ParseFromString(data[_HEADER_BYTES:checked])
    except Exception as e:  # google.protobuf.message.DecodeError
        raise refuse("its payload is not a TunedModel message") from e
    return model


def read_tuned_model(path):
    """The TunedModel in the file `path` (see the module's docstring)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise error(f"cannot read tuned model file '{path}': {e.strerror}", "not_found") from e
    m = _decode(data, path)
    batches = {}
    for b in m.batches:
        batches[b.batch] = TunedBatch(
            batch=b.batch, schedule_json=b.schedule_json, predicted_ms=b.predicted_ms,
            measured={s.schedule: MeasuredSchedule(schedule=s.schedule, median_ms=s.median_ms,
                                                   p10_ms=s.p10_ms, p90_ms=s.p90_ms,
                                                   runs=s.runs) for s in b.measured},
            tuning_s=b.tuning_s)
    which = m.WhichOneof("model")
    if not m.model_name or which is None or not m.device_key or not batches:
        raise error(f"tuned model file '{path}': it lacks a model name, a model, a device "
                    "key or a batch")
    return TunedModel(path=path, model_name=m.model_name, device_key=m.device_key,
                      backend=m.backend, tuned_on=m.tuned_on,
                      iosfarm_version=m.iosfarm_version, created_unix_s=m.created_unix_s,
                      zoo_name=m.zoo_name if which == "zoo_name" else "",
                      onnx=m.onnx if which == "onnx" else None,
                      batches=dict(sorted(batches.items())))

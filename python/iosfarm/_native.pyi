# Type stubs of the native module (python/iosfarm_module.cc over
# include/iosfarm/runtime.h).
import os
from typing import Any, Mapping, Optional, Union

import numpy as np

__version__: str

class Error(RuntimeError):
    # "invalid_argument", "not_found", "failed_precondition", "unimplemented",
    # "unavailable" or "internal"
    code: str

_Path = Union[str, os.PathLike[str]]
_Shape = tuple[int, ...]

class Session:
    def __init__(
        self,
        model: _Path,
        *,
        schedule: Optional[_Path] = ...,
        backend: str = ...,
        batch: int = ...,
        threads: int = ...,
        cuda_graph: bool = ...,
        tune_if_missing: bool = ...,
        latency_db: Optional[_Path] = ...,
        device_key: str = ...,
        sequential_fallback: bool = ...,
    ) -> None: ...
    def run(
        self, inputs: Mapping[str, Any], outputs: Optional[Mapping[str, Any]] = ...
    ) -> dict[str, np.ndarray]: ...
    def outputs_at(self, batch: int) -> dict[str, _Shape]: ...
    @property
    def inputs(self) -> dict[str, _Shape]: ...
    @property
    def outputs(self) -> dict[str, _Shape]: ...
    @property
    def batches(self) -> list[int]: ...
    @property
    def fallback(self) -> str: ...
    @property
    def model_name(self) -> str: ...
    @property
    def schedule_kind(self) -> str: ...
    @property
    def num_stages(self) -> int: ...
    @property
    def device(self) -> str: ...
    @property
    def tuning(self) -> dict[str, Any]: ...

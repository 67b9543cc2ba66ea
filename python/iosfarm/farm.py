"""iosfarm.Farm: a client of an iosfarm server (TuningService, proto/iosfarm/v1/farm.proto),
what the CLI's remote commands do, from Python.

    farm = iosfarm.Farm("farm:7070")                       # or $IOSFARM_SERVER
    job = farm.submit("resnet50", device="h100-sxm", batch=8)
    result = farm.wait(job.id)                              # a progress bar on a terminal
    result.save_schedule("resnet50.schedule.json")
    print(result.predicted_ms, result.measured_ms)

Contract:
- Connection as the CLI's (client/remote_options.h): address, else
  $IOSFARM_SERVER, else 127.0.0.1:7070; token, else $IOSFARM_TOKEN (sent as
  "authorization: Bearer <token>"; leading and trailing whitespace removed,
  anything but printable ASCII without spaces refused, "invalid_argument");
  tls_ca (a PEM file of the CA that signed the server's certificate: TLS),
  else $IOSFARM_TLS_CA, else plaintext. An empty environment variable counts
  as unset. The constructor connects: it gives up at the first failed
  connection or after connect_timeout seconds with Error "unavailable"
  naming the address. Unary calls have a deadline of `timeout` seconds
  (submit uploads the model); watch and wait have none.
- Every RPC error becomes iosfarm.Error with the server's message and `code`
  the gRPC status in lower case ("invalid_argument", "not_found",
  "failed_precondition", "unauthenticated", "permission_denied",
  "unavailable", "deadline_exceeded", ...). An unreachable server names the
  address and $IOSFARM_SERVER; "unauthenticated" says whether a token was
  given and names $IOSFARM_TOKEN.
- MODEL for submit is resolved as the CLI resolves it: a zoo model name
  first (`iosfarm models`; the list comes from the CLI when one is found,
  else a name that is no existing file is sent as a zoo name and the server
  judges it), else an existing file: a tuned model file (.iosfarm) sends the
  model it holds, anything else is sent as ONNX bytes named by its file name.
  Neither: Error "not_found" naming it.
- Results: dataclasses of iosfarm.farm_types with the names of the CLI's
  JSON; states are lower case ("queued", "running", "succeeded", "failed",
  "cancelled"). Predicted and measured latencies are kept apart.
- wait(job) follows the job with a progress bar on stderr (iosfarm._progress:
  auto only on a terminal or in a notebook) and returns its JobResult when it
  succeeded; a failed job raises Error "aborted", a cancelled one
  "cancelled", naming the job and its error (the Error's `job` is the Job).
  Ctrl-C (KeyboardInterrupt) during wait cancels the job on the server,
  closes the bar, says so on stderr and re-raises KeyboardInterrupt.
- gRPC (Debian's python3-grpcio) and the generated stubs (iosfarm.v1) are
  imported when a Farm is made: without them Farm raises Error
  "unimplemented" naming python3-grpcio; `import iosfarm` never needs them.
- A Farm may be used from several threads (gRPC channels are thread-safe);
  close() (or `with iosfarm.Farm() as farm:`) closes its channel, and the
  channels of Farms still open are closed at exit (atexit).
"""
import atexit
import os
import sys
import threading
import time
import weakref

from iosfarm import _cli, farm_types, tuned_model
from iosfarm._cli import error
from iosfarm._progress import ProgressBar

DEFAULT_SERVER = "127.0.0.1:7070"
SERVER_ENV = "IOSFARM_SERVER"
TOKEN_ENV = "IOSFARM_TOKEN"
TLS_CA_ENV = "IOSFARM_TLS_CA"
MAX_MESSAGE_BYTES = 512 << 20  # models travel as ONNX bytes (proto/rpc_util.h)


def _env(name):
    value = os.environ.get(name, "")
    return value or None


def normalize_token(token, source):
    """`token` without leading and trailing whitespace; Error "invalid_argument"
    naming `source` and the position of a byte that cannot travel in a header."""
    token = token.strip(" \t\n\r")
    for i, c in enumerate(token):
        o = ord(c)
        if o < 0x21 or o > 0x7e:
            what = "control character" if o < 0x20 or o == 0x7f else \
                "space" if c == " " else "non-ASCII byte"
            raise error(f"{source}: the token has a {what} at position {i + 1} (tokens are "
                        "printable ASCII without spaces)")
    return token


def _load_grpc():
    try:
        import grpc
    except ImportError as e:
        raise error(f"iosfarm.Farm needs gRPC for Python (Debian: apt install python3-grpcio; "
                    f"pip: pip install grpcio): {e}", "unimplemented") from e
    try:
        from iosfarm.v1 import farm_pb2, farm_pb2_grpc
    except ImportError as e:
        raise error("iosfarm.Farm needs the stubs iosfarm.v1 that the build generates from "
                    "proto/iosfarm/v1 (protobuf-compiler-grpc's grpc_python_plugin) and "
                    f"protobuf for Python (python3-protobuf): {e}", "unimplemented") from e
    return grpc, farm_pb2, farm_pb2_grpc


_ZOO = None


def _zoo_names():
    """The zoo's model names from `iosfarm models --format json`; None without a CLI."""
    global _ZOO
    if _ZOO is None:
        import json
        try:
            cli = _cli.find_cli()
        except Exception:  # no CLI: the server judges names
            return None
        code, out = _cli.run([cli, "models", "--format", "json"], on_stderr_line=lambda l: None)
        if code != 0:
            return None
        _ZOO = frozenset(m["name"] for m in json.loads(out)["models"])
    return _ZOO


# Farms not closed yet. Their channels are closed at exit, before the
# interpreter's finalization stops gRPC's threads: a channel (or a stream)
# finalized after that can hang the exit.
_OPEN = weakref.WeakSet()


@atexit.register
def _close_open_farms():
    for farm in list(_OPEN):
        farm.close()


def _job_id(job):
    job_id = job.id if isinstance(job, farm_types.Job) else job
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id <= 0:
        raise error(f"job id must be a positive integer, got {job_id!r}")
    return job_id


class Farm:
    """A connection to an iosfarm server; see the module's docstring."""

    def __init__(self, address=None, *, token=None, tls_ca=None, timeout=30,
                 connect_timeout=5):
        self._grpc, self._pb, pb_grpc = _load_grpc()
        grpc = self._grpc
        self.address = address or _env(SERVER_ENV) or DEFAULT_SERVER
        self.tls_ca = tls_ca if tls_ca is not None else _env(TLS_CA_ENV) or ""
        token = token if token is not None else _env(TOKEN_ENV) or ""
        self._token = normalize_token(token, f"token / ${TOKEN_ENV}")
        self.timeout = timeout
        self._metadata = (("authorization", f"Bearer {self._token}"),) if self._token else ()
        options = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
        if self.tls_ca:
            try:
                with open(self.tls_ca, "rb") as f:
                    ca = f.read()
            except OSError as e:
                raise error(f"cannot read '{self.tls_ca}' (tls_ca / ${TLS_CA_ENV}): "
                            f"{e.strerror}", "not_found") from e
            self._channel = grpc.secure_channel(
                self.address, grpc.ssl_channel_credentials(root_certificates=ca), options)
        else:
            self._channel = grpc.insecure_channel(self.address, options)
        _OPEN.add(self)
        try:
            self._wait_until_ready(connect_timeout)
        except BaseException:
            self.close()
            raise
        self._stub = pb_grpc.TuningServiceStub(self._channel)

    # -- connection

    def _unreachable(self, why):
        message = f"cannot connect to the iosfarm server at {self.address}"
        if self.tls_ca:
            message += f" (TLS, CA {self.tls_ca})"
        if why:
            message += f": {why}"
        return error(message + f"; is it running? Set the address with Farm(address) or "
                     f"${SERVER_ENV}", "unavailable")

    def _watch_state(self, until, timeout, try_to_connect):
        """Follows the channel's connectivity (no subscription outlives the call:
        gRPC's polling thread ends with it) until until(state) is true or
        `timeout` seconds pass; returns the last state (None: none seen)."""
        changed = threading.Condition()
        seen = []

        def on_state(state):
            with changed:
                seen.append(state)
                changed.notify_all()

        deadline = time.monotonic() + timeout
        self._channel.subscribe(on_state, try_to_connect=try_to_connect)
        try:
            with changed:
                while not (seen and until(seen[-1])):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    changed.wait(min(left, 0.1))  # short waits: Ctrl-C stays prompt
                return seen[-1] if seen else None
        finally:
            self._channel.unsubscribe(on_state)

    def _wait_until_ready(self, timeout):
        s = self._grpc.ChannelConnectivity
        state = self._watch_state(
            lambda state: state in (s.READY, s.TRANSIENT_FAILURE, s.SHUTDOWN), timeout,
            try_to_connect=True)
        if state == s.TRANSIENT_FAILURE:
            raise self._unreachable("connection failed")
        if state == s.SHUTDOWN:
            raise self._unreachable("channel shut down")
        if state != s.READY:
            raise self._unreachable(f"no answer within {timeout:g} s")

    def _connected(self):
        """Whether the channel is connected now."""
        return self._watch_state(lambda state: True, 1.0, try_to_connect=False) == \
            self._grpc.ChannelConnectivity.READY

    def close(self):
        """Closes the channel; later calls fail."""
        channel = getattr(self, "_channel", None)
        if channel is not None:
            self._channel = None
            _OPEN.discard(self)
            channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"<iosfarm.Farm {self.address}{' (TLS)' if self.tls_ca else ''}>"

    def _convert(self, e):
        code = e.code()
        details = e.details() or ""
        c = self._grpc.StatusCode
        name = code.name.lower() if code is not None else "unknown"
        if "Received http2 header" in details:
            return error(f"the server at {self.address} is not an iosfarm server ({details}); "
                         f"check the address (Farm(address) / ${SERVER_ENV})", "unavailable")
        if code == c.UNAUTHENTICATED:
            hint = f" (no token given: pass token= or set ${TOKEN_ENV})" if not self._token \
                else f" (check token= / ${TOKEN_ENV})"
            return error(details + hint, name)
        if code == c.UNAVAILABLE and not self._connected():
            return self._unreachable(details)
        if code == c.DEADLINE_EXCEEDED:
            return error(f"the server at {self.address} did not answer within "
                         f"{self.timeout:g} s", name)
        return error(details or f"{name} (no message from the server)", name)

    def _check_open(self):
        if self._channel is None:
            raise error(f"this Farm ({self.address}) is closed; make another",
                        "failed_precondition")

    def _unary(self, method, request):
        self._check_open()
        try:
            return method(request, metadata=self._metadata, timeout=self.timeout)
        except self._grpc.RpcError as e:
            raise self._convert(e) from None

    # -- jobs

    def _model_request(self, model):
        request = self._pb.SubmitJobRequest()
        name = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
        if not isinstance(name, str) or not name:
            raise error(f"model must be a zoo model name or a file's path, got {model!r}")
        zoo = _zoo_names()
        if (zoo is not None and name in zoo) or (zoo is None and not os.path.exists(name)):
            request.zoo_name = name
            request.model_name = name
            return request
        if not os.path.exists(name):
            raise error(f"model '{name}' is neither a zoo model (see `iosfarm models`) nor an "
                        "existing file", "not_found")
        if os.path.isdir(name):
            raise error(f"ONNX model '{name}': is a directory")
        if tuned_model.is_tuned_model_file(name):
            held = tuned_model.read_tuned_model(name)
            request.model_name = held.model_name
            if held.onnx is not None:
                request.onnx = held.onnx
            else:
                request.zoo_name = held.zoo_name
            return request
        try:
            with open(name, "rb") as f:
                request.onnx = f.read()
        except OSError as e:
            raise error(f"cannot read '{name}': {e.strerror}", "not_found") from e
        request.model_name = os.path.basename(name)
        return request

    def _options(self, r, s, block_size, batch_size, max_parallel_batches):
        values = {"r": r, "s": s, "block_size": block_size, "batch_size": batch_size,
                  "max_parallel_batches": max_parallel_batches}
        for key, value in values.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise error(f"{key} must be a non-negative integer, got {value!r}")
        return self._pb.SearchOptions(**{k: v or 0 for k, v in values.items()})

    def submit(self, model, *, device, batch=None, r=None, s=None, block_size=None,
               batch_size=None, max_parallel_batches=None, priority=None):
        """Submits a tuning job (`iosfarm submit`): model (a zoo name, an .onnx file or a
        tuned model file), device (the device key to tune for), batch (None: the
        model's own; zoo: 1), r / s / block_size / batch_size / max_parallel_batches
        (None: the server's defaults), priority. Returns the queued Job."""
        if not isinstance(device, str) or not device.strip():
            raise error("submit needs device= (the device key to tune for, e.g. h100-sxm)")
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int)
                                  or not 1 <= batch <= 4096):
            raise error(f"batch must be an integer from 1 to 4096, got {batch!r}")
        request = self._model_request(model)
        request.batch = batch or 0
        request.device_key = device
        request.options.CopyFrom(self._options(r, s, block_size, batch_size,
                                               max_parallel_batches))
        request.priority = priority or 0
        return farm_types.job_from_proto(self._unary(self._stub.SubmitJob, request))

    def status(self, job):
        """The Job `job` (an id or a Job) as the server has it now."""
        request = self._pb.JobRequest(job_id=_job_id(job))
        return farm_types.job_from_proto(self._unary(self._stub.GetJob, request))

    def cancel(self, job):
        """Cancels `job`; returns it as it is then (a finished job stays as it ended)."""
        request = self._pb.JobRequest(job_id=_job_id(job))
        return farm_types.job_from_proto(self._unary(self._stub.CancelJob, request))

    def result(self, job):
        """The JobResult of a succeeded job; Error "failed_precondition" before."""
        request = self._pb.JobRequest(job_id=_job_id(job))
        return farm_types.result_from_proto(self._unary(self._stub.GetResult, request))

    def watch(self, job):
        """Yields a JobEvent (the Job after the change, and what changed) now and
        after every change until the job ends; the last event's job is final.
        Error "unavailable" when the stream ends before the job does."""
        job_id = _job_id(job)
        self._check_open()
        call = self._stub.WatchJob(self._pb.JobRequest(job_id=job_id), metadata=self._metadata)
        last = None
        try:
            for event in call:
                last = farm_types.job_from_proto(event.job)
                yield farm_types.JobEvent(job=last, message=event.message)
        except self._grpc.RpcError as e:
            raise self._convert(e) from None
        finally:
            call.cancel()
        if last is None:
            raise error(f"the server closed the watch of job {job_id} without sending its "
                        "state", "internal")
        if not last.done:
            raise error(f"the watch of job {job_id} ended before the job did; watch it again",
                        "unavailable")

    def wait(self, job, progress=None):
        """Follows `job` until it ends and returns its JobResult; see the module's
        docstring for failures, progress (None: auto, True, False) and Ctrl-C."""
        job_id = _job_id(job)
        last = None
        with ProgressBar(progress, f"job {job_id}") as bar:
            try:
                for event in self.watch(job_id):
                    last = event.job
                    bar.job(last)
            except KeyboardInterrupt:
                bar.close()
                try:
                    self.cancel(job_id)
                    note = f"job {job_id} cancelled on the server"
                except Exception as e:  # the interrupt wins; say what became of the job
                    note = f"job {job_id} could not be cancelled ({e}); it may still run"
                sys.stderr.write(f"iosfarm: interrupted; {note}\n")
                raise
        if last.state == "succeeded":
            return self.result(job_id)
        what = "failed" if last.state == "failed" else "was cancelled"
        e = error(f"job {job_id} ({last.model_name} on {last.device_key}) {what}"
                  f"{': ' + last.error if last.error else ''}",
                  "aborted" if last.state == "failed" else "cancelled")
        e.job = last
        raise e

    def list(self, state=None, device=None, limit=None, retune_batch=None):
        """Jobs (newest first, as `iosfarm list`), optionally only those in `state`
        (queued, running, succeeded, failed, cancelled), of `device`, of a retune
        batch; at most `limit` (None: the server's default)."""
        request = self._pb.ListJobsRequest(state=state or "", device_key=device or "",
                                           retune_batch=retune_batch or "", limit=limit or 0)
        response = self._unary(self._stub.ListJobs, request)
        return [farm_types.job_from_proto(j) for j in response.jobs]

    def workers(self):
        """The connected workers."""
        response = self._unary(self._stub.ListWorkers, self._pb.ListWorkersRequest())
        return [farm_types.worker_from_proto(w) for w in response.workers]

    def retune(self, device, from_device=None, models=None, batch=None, *, r=None, s=None,
               block_size=None):
        """Re-tunes models the farm tuned before for `device` (`iosfarm retune`): only
        those tuned for `from_device`, named in `models`, of `batch` where given;
        search bounds None: each model's previous ones. Returns a Retune (its
        retune_batch id and jobs)."""
        if not isinstance(device, str) or not device.strip():
            raise error("retune needs device (the device key to tune for)")
        if isinstance(models, str):
            models = [models]
        request = self._pb.RetuneRequest(
            device_key=device, from_device_key=from_device or "",
            model_names=list(models or []), batch=batch or 0,
            options=self._options(r, s, block_size, None, None))
        response = self._unary(self._stub.Retune, request)
        return farm_types.Retune(retune_batch=response.retune_batch,
                                 jobs=[farm_types.job_from_proto(j) for j in response.jobs])

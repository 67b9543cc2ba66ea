"""The steps of gpu_run.py that each run one program or suite: env, floor,
tests, torchvision, runtime and speed, and the table of every step in the
order a run takes them (the others: zoo_step.py, farm_step.py,
search_step.py, exact_step.py, kernels_step.py). Each takes the run (a
truth.Truth) and returns its result, a dict with a "status"."""
import glob
import json
import os
import shutil
import subprocess
import sys

import bundle
import exact_step
import kernels_step
import search_step
import zoo_step
from farm_step import Farm

REPO = bundle.REPO
# (binary, gtest filter, cap in seconds) of the `tests` step.
SUITES = (
    ("cuda_backend_test", "*", 150),
    ("backend_conformance_test", "*cuda*", 240),
    ("backend_factory_test", "*", 30),
    ("runtime_test", "*", 60),
    ("runtime_device_buffers_test", "*", 60),
)
# The caps above times this on the cpu backend (gpu_run_smoke).
CPU_CAP_SCALE = 4


def env(truth):
    result = {"status": "ok"}
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,"
                          "clocks.max.sm,pci.bus_id", "--format=csv,noheader"],
                         capture_output=True, text=True) if shutil.which("nvidia-smi") else None
    result["nvidia_smi"] = smi.stdout.strip() if smi and smi.returncode == 0 else None
    if smi is not None:
        full = subprocess.run(["nvidia-smi"], capture_output=True, text=True)
        result["nvidia_smi_header"] = "\n".join(full.stdout.splitlines()[:4])
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if os.path.exists(nvcc):
        version = subprocess.run([nvcc, "--version"], capture_output=True, text=True)
        result["nvcc"] = version.stdout.strip().splitlines()[-1] if version.stdout else None
    result["cuda_libraries"] = bundle.find_cuda_lib_dirs(sys.path)
    cudnn = sorted({os.path.basename(p) for d in result["cuda_libraries"]
                    for p in glob.glob(os.path.join(d, "libcudnn.so.*"))})
    result["cudnn_files"] = cudnn
    try:
        import torch
        result["torch"] = torch.__version__
        result["torch_cudnn"] = torch.backends.cudnn.version()
        result["torch_cuda"] = torch.version.cuda
    except Exception as e:  # the smoke test's python may lack torch
        result["torch"] = f"not importable: {e}"
    if truth.args.backend == "cuda" and not result["nvidia_smi"]:
        result["status"] = "failed"
        result["error"] = "no CUDA device: nvidia-smi gave no GPU"
    truth.say(f"env: {result.get('nvidia_smi')}; {result.get('nvcc')}; cuDNN files {cudnn}; "
              f"torch {result.get('torch')}")
    return result


def floor(truth):
    if truth.args.backend != "cuda":
        return {"status": "skipped", "reason": "--backend cpu"}
    code, tail = truth.run([truth.bin["cuda_floor_bench"], "--repeats", "15"], "floor.log", 60)
    if code != 0:
        return {"status": "failed", "exit": code, "output": tail}
    with open(os.path.join(truth.logs, "floor.log")) as f:
        text = f.read()
    floor = json.loads(text[text.index("{"):])
    truth.say("floor: " + ", ".join(f"{k} {v}" for k, v in floor.items() if k.endswith("_us")))
    return {"status": "ok", **floor}


def tests(truth):
    suites = {}
    for binary, gtest_filter, cap in SUITES:
        if truth.remaining() < 20:
            suites[binary] = {"status": "not run", "reason": "deadline"}
            continue
        if not os.path.exists(truth.bin[binary]):
            suites[binary] = {"status": "not run", "reason": "not in this build (no CUDA)"}
            continue
        # The caps are sized for a GPU; on the cpu backend (the CTest
        # smoke on a loaded 2-core machine) runtime_test alone takes 55 s.
        scale = 1 if truth.args.backend == "cuda" else CPU_CAP_SCALE
        suites[binary] = truth.gtest(binary, gtest_filter, cap * scale, binary)
    failed = any(s["status"] == "failed" for s in suites.values())
    return {"status": "failed" if failed else "ok", "suites": suites}


def start_torchvision(truth):
    """Starts the cuda half of runtime_torchvision_test in the background
    (its exports take a minute or two of CPU first)."""
    report = os.path.join(truth.logs, "torchvision.json")
    log = open(os.path.join(truth.logs, "torchvision.log"), "w")
    argv = [truth.bin["runtime_torchvision_test"], "--gtest_filter=*CudaMatchesPyTorch*",
            f"--gtest_output=json:{report}"]
    truth.say("$ " + " ".join(argv) + "   (background)")
    truth.background = (subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         env=truth.env, cwd=truth.work), log, report)


def torchvision(truth):
    if truth.background is None:
        return {"status": "skipped", "reason": "--backend cpu"}
    process, log, report = truth.background
    try:
        code = process.wait(timeout=max(1, truth.remaining() - 60))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        code = "timeout"
    log.close()
    result = {"status": "failed", "exit": code}
    if os.path.exists(report):
        result.update(truth.gtest_report(report))
        result["status"] = ("ok" if code == 0 and result["failed"] == 0
                            and truth.ran_enough(result) else "failed")
    else:
        with open(os.path.join(truth.logs, "torchvision.log"), errors="replace") as f:
            result["output"] = f.read().splitlines()[-15:]
    truth.say(f"torchvision: {result.get('passed')} passed, {result.get('failed')} failed, "
              f"{result.get('skipped')} skipped (exit {code})")
    return result


def runtime(truth):
    cuda = truth.args.backend == "cuda"
    argv = [truth.bin["runtime_bench"], "--backend", truth.args.backend, "--model",
            "squeezenet", "--rounds", "3" if cuda else "1", "--runs", "200" if cuda else "5"]
    code, tail = truth.run(argv, "runtime_bench.log", 90)
    summary = next((line for line in tail if line.startswith("median over")), None)
    result = {"status": "ok" if code == 0 and summary else "failed", "exit": code,
              "summary": summary, "output": tail}
    truth.say(f"runtime_bench: {summary or tail[-1:]}")
    return result


def speed(truth):
    left = truth.remaining() - 10
    if left < 60:
        return {"status": "not run", "reason": f"{left:.0f} s left"}
    argv = [sys.executable, os.path.join(REPO, "bench", "gpu_bench.py"), "run", "--bin",
            truth.bin["schedule_bench"], "--backend", truth.args.backend, "--models",
            truth.args.speed_models, "--batches", "1", "--work",
            os.path.join(truth.work, "speed"), "--deadline-s", f"{left - 15:.0f}",
            "--out", truth.out] + truth.args.speed_args
    code, tail = truth.run(argv, "speed.log", left)
    result = {"status": "ok" if code == 0 else "failed", "exit": code}
    table = os.path.join(truth.work, "speed", "table.md")
    if os.path.exists(table):
        with open(table) as f:
            result["table"] = f.read()
    else:
        result["output"] = tail
    return result

def farm(truth):
    return Farm(truth).run()


def search(truth):
    return search_step.Search(truth).run()


def exact(truth):
    return exact_step.Exact(truth).run()


# Every step, in the order a run takes them.
STEPS = {
    "env": env,
    "floor": floor,
    "tests": tests,
    "zoo": zoo_step.run,
    "torchvision": torchvision,
    "farm": farm,
    "search": search,
    "exact": exact,
    "runtime": runtime,
    "kernels": kernels_step.run,
    "speed": speed,
}

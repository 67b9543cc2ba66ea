"""The bundle: one tarball that carries iosfarm's binaries, the shared
libraries they need and the scripts of a GPU run to a machine with an NVIDIA
GPU that cannot build the project (tools/gpu_run/README.md).

Such a machine needs an NVIDIA driver, and CUDA's and cuDNN's libraries
(the CUDA toolkit's or PyTorch's wheels) and PyTorch for the checks against
PyTorch; it needs none of gRPC, protobuf, absl, ONNX, oneDNN or spdlog. So
the binaries are built here and the tarball holds, under one folder
(BUNDLE_DIR):

  bin/<binary>        stripped of debug info
  lib/<soname>        every library `ldd` names except the loader, glibc,
                      libstdc++ and CUDA's, which the GPU machine has
  assets/zoo/         per zoo model: MODEL.ios.json (an IOS schedule searched
                      here with sim:h100) and MODEL.cpu/*.npy (what the cpu
                      backend computes on the seeded input with it: the
                      reference the GPU's outputs are compared with)
  SCRIPTS             the scripts a run calls, at their repository paths
                      (tools/gpu_run/, bench/gpu_bench*.py, bench/torch_bench.py,
                      tests/onnx/export_torchvision.py)
  MANIFEST.json       commit, date, binaries, libraries, assets, scripts

Extracted anywhere, `python3 BUNDLE_DIR/tools/gpu_run/gpu_run.py run` runs
from it; `gpu_run.py run --bundle FILE` extracts it into its work folder
first.
"""
import datetime
import glob
import json
import os
import shutil
import subprocess
import tarfile
import tempfile

# The checkout (or the extracted bundle) this file lies in.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The one folder the tarball holds.
BUNDLE_DIR = "iosfarm-gpu-run"

# Build-relative paths of the binaries a run uses.
BINARIES = (
    "bench/schedule_bench",
    "bench/cuda_floor_bench",
    "bench/runtime_bench",
    "bench/bound_audit_bench",
    "client/iosfarm",
    "server/iosfarm-server",
    "worker/iosfarm-worker",
    "worker/backends/cuda/cuda_backend_test",
    "worker/backends/backend_factory_test",
    "tests/conformance/backend_conformance_test",
    "runtime/runtime_test",
    "runtime/runtime_torchvision_test",
    "runtime/runtime_device_buffers_test",
)
# Built only with the CUDA backend.
CUDA_ONLY = ("bench/cuda_floor_bench", "worker/backends/cuda/cuda_backend_test",
             "runtime/runtime_device_buffers_test")
ZOO = ("squeezenet", "resnet50", "inception_v3", "randwire", "nasnet_a_mobile", "nasnet_a")
# Bounds of the IOS schedules the zoo checks run: IOS's own r=3, s=8; NASNet
# and RandWire with the block size that keeps their search to seconds.
ZOO_SEARCH = {"randwire": ["--block-size", "30"], "nasnet_a": ["--block-size", "30"],
              "nasnet_a_mobile": ["--block-size", "30"]}
# Libraries left out: the loader, glibc, the C++ runtime and CUDA's own.
SYSTEM_LIBS = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libdl.so", "libpthread.so",
               "librt.so", "libresolv.so", "libstdc++.so", "libgcc_s.so", "libcudart.so",
               "libcublas.so", "libcublasLt.so", "libcudnn", "libcuda.so")
CUDA_LIBS = ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9")
# Repository-relative patterns of the scripts a run calls (tests left out).
SCRIPTS = ("tools/gpu_run/*.py", "tools/gpu_run/README.md", "bench/gpu_bench*.py",
           "bench/torch_bench.py", "tests/onnx/export_torchvision.py")


def log(*parts):
    print(*parts, flush=True)


def shared_libraries(binary):
    """(soname, real path) of the libraries `binary` needs beyond SYSTEM_LIBS."""
    ldd = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    libs = []
    for line in ldd.splitlines():
        parts = line.split()
        if not parts or parts[0].startswith(SYSTEM_LIBS) or "=>" not in parts:
            continue
        path = parts[parts.index("=>") + 1]
        if path == "not":
            raise SystemExit(f"ldd {binary}: {line.strip()}")
        libs.append((parts[0], os.path.realpath(path)))
    return libs


def make_assets(iosfarm, dest, models=ZOO):
    """DEST/zoo: each model's IOS schedule (sim:h100) and its cpu outputs."""
    zoo = os.path.join(dest, "zoo")
    os.makedirs(zoo, exist_ok=True)
    for model in models:
        schedule = os.path.join(zoo, f"{model}.ios.json")
        subprocess.run([iosfarm, "search", model, "--backend", "sim:h100", "-o", schedule,
                        *ZOO_SEARCH.get(model, [])], check=True, capture_output=True)
        subprocess.run([iosfarm, "run", model, "--backend", "cpu", "--schedule", schedule,
                        "--output", os.path.join(zoo, f"{model}.cpu"), "--iterations", "1",
                        "--warmup", "0"], check=True, capture_output=True)
        log(f"  assets: {model} schedule and cpu outputs")
    return zoo


def scripts(repo=REPO):
    """Repository-relative paths of the SCRIPTS found under `repo`."""
    found = []
    for pattern in SCRIPTS:
        for path in sorted(glob.glob(os.path.join(repo, pattern))):
            rel = os.path.relpath(path, repo)
            if not rel.endswith("_test.py") and rel not in found:
                found.append(rel)
    return found


def make(build, output, require_cuda=True, models=ZOO):
    """Writes the tarball OUTPUT (see the module doc) from the binaries of
    `build`; a build without the CUDA backend only with require_cuda=False
    (smoke test). Returns the manifest."""
    build = os.path.abspath(build)
    binaries = list(BINARIES)
    missing = [b for b in binaries if not os.path.isfile(os.path.join(build, b))]
    cuda_missing = [b for b in missing if b in CUDA_ONLY]
    if cuda_missing:
        if require_cuda:
            raise SystemExit(f"{build} has no CUDA backend (no {', '.join(cuda_missing)}): "
                             "configure with -DIOSFARM_CUDA=ON where nvcc and cuDNN are installed")
        for rel in cuda_missing:  # the smoke test's bundle, on a CPU build
            binaries.remove(rel)
            missing.remove(rel)
    if missing:
        raise SystemExit(f"not built in {build}: {', '.join(missing)} (cmake --build {build})")
    output = os.path.abspath(output)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(output)) as tmp:
        staging = os.path.join(tmp, BUNDLE_DIR)
        os.makedirs(os.path.join(staging, "bin"))
        os.makedirs(os.path.join(staging, "lib"))
        libs = {}
        for rel in binaries:
            binary = os.path.join(build, rel)
            subprocess.run(["objcopy", "--strip-debug", binary,
                            os.path.join(staging, "bin", os.path.basename(rel))], check=True)
            libs.update(shared_libraries(binary))
        for soname, path in sorted(libs.items()):
            subprocess.run(["objcopy", "--strip-debug", path,
                            os.path.join(staging, "lib", soname)], check=True)
        make_assets(os.path.join(build, "client", "iosfarm"), os.path.join(staging, "assets"),
                    models)
        carried = scripts()
        for rel in carried:
            os.makedirs(os.path.join(staging, os.path.dirname(rel)), exist_ok=True)
            shutil.copy2(os.path.join(REPO, rel), os.path.join(staging, rel))
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip() != ""
        manifest = {"built_from": build, "commit": commit, "dirty": dirty,
                    "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                    "binaries": [os.path.basename(b) for b in binaries], "libs": sorted(libs),
                    "zoo_assets": list(models), "scripts": carried}
        with open(os.path.join(staging, "MANIFEST.json"), "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
        partial = output + ".part"
        with tarfile.open(partial, "w:xz") as tar:
            tar.add(staging, arcname=BUNDLE_DIR)
        os.replace(partial, output)
    log(f"bundle {output}: {len(binaries)} binaries + {len(libs)} libraries + assets + "
        f"{len(carried)} scripts, {os.path.getsize(output) / 2**20:.1f} MiB "
        f"(commit {commit[:10]}{', dirty tree' if dirty else ''})")
    return manifest


def find_cuda_lib_dirs(search_path=()):
    """Directories holding the image's own CUDA libraries (cudart, cuBLAS, cuDNN)
    and, where mounted apart, the driver's libcuda."""
    dirs = []
    roots = ["/usr/local/cuda/lib64", "/usr/local/cuda/lib",
             "/usr/local/cuda/targets/x86_64-linux/lib"]
    for entry in search_path:
        nvidia = os.path.join(entry, "nvidia")
        if os.path.isdir(nvidia):
            roots.append(nvidia)
    for root in roots:
        for dirpath, _, names in os.walk(root):
            if any(name in names for name in CUDA_LIBS) and dirpath not in dirs:
                dirs.append(dirpath)
    # The driver (libcuda.so.1, which cudart loads) where a container mounts
    # it outside the loader's default path.
    for driver in ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"):
        if os.path.exists(os.path.join(driver, "libcuda.so.1")) and driver not in dirs:
            dirs.append(driver)
    return dirs


def _extract(archive, into):
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:
            tar.extractall(into)


def is_bundle_dir(path):
    """Whether `path` is an extracted bundle (its BUNDLE_DIR folder)."""
    return os.path.isfile(os.path.join(path, "MANIFEST.json")) and os.path.isdir(
        os.path.join(path, "bin"))


def unpack(bundle, work, search_path=()):
    """The bundle BUNDLE, a tarball (extracted into WORK/bundle, once per
    tarball) or an extracted bundle folder: (bin dir, assets dir, manifest,
    environment with LD_LIBRARY_PATH set to its libraries and the GPU
    machine's CUDA libraries)."""
    bundle = os.path.abspath(bundle)
    if os.path.isdir(bundle):
        if not is_bundle_dir(bundle):
            raise SystemExit(f"{bundle} is not an extracted bundle (no MANIFEST.json and bin/)")
        root = bundle
    elif os.path.isfile(bundle):
        target = os.path.join(os.path.abspath(work), "bundle")
        marker = os.path.join(target, ".unpacked")
        if not os.path.exists(marker) or os.path.getmtime(marker) < os.path.getmtime(bundle):
            shutil.rmtree(target, ignore_errors=True)
            os.makedirs(target)
            _extract(bundle, target)
            open(marker, "w").close()
        root = os.path.join(target, BUNDLE_DIR)
    else:
        raise SystemExit(f"{bundle} not found: make the bundle where the project builds first "
                         "(python3 tools/gpu_run/gpu_run.py bundle)")
    with open(os.path.join(root, "MANIFEST.json")) as f:
        manifest = json.load(f)
    env = dict(os.environ)
    dirs = [os.path.join(root, "lib")] + find_cuda_lib_dirs(search_path)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = ":".join(dirs + ([old] if old else []))
    return os.path.join(root, "bin"), os.path.join(root, "assets"), manifest, env


def missing_libraries(binary, env):
    """The `ldd` lines of libraries `binary` cannot find under `env`."""
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, env=env)
    return [line.strip() for line in ldd.stdout.splitlines() if "not found" in line]

#!/usr/bin/python3
"""What can be checked of the CUDA worker image without its nvidia/cuda base
(docs/operations.md): every shared library the CUDA-enabled iosfarm-worker
built here loads is either owned by a Debian package, which
docker/runtime-packages.sh lists so that the image's runtime stage installs
it, or one of the CUDA libraries the nvidia/cuda cudnn-runtime base provides
(CUDA runtime, cuBLAS, cuBLASLt, cuDNN). A library that is neither would be
missing from the image. Also runs docker/runtime-packages.sh on the binary.

Usage: cuda_worker_libraries_test.py SOURCE_DIR WORKER_BINARY
"""
import os
import re
import subprocess
import sys

# What nvidia/cuda:13.0.x-cudnn-runtime-ubuntu24.04 provides (CUDA 13, cuDNN 9).
BASE_PROVIDES = re.compile(r"lib(cudart\.so\.13|cublas\.so\.13|cublasLt\.so\.13|cudnn\.so\.9)$")


def main():
    source_dir, binary = sys.argv[1], sys.argv[2]
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    cuda, debian, missing = [], [], []
    for line in ldd.splitlines():
        parts = line.split()
        if "not found" in line:
            missing.append(parts[0])
            continue
        if len(parts) < 3 or parts[1] != "=>":
            continue  # the vDSO and the loader
        name, path = parts[0], parts[2]
        if BASE_PROVIDES.search(name):
            cuda.append(name)
            continue
        owned = False
        real = os.path.realpath(path)
        for candidate in {path, real, "/usr" + path, "/usr" + real, path.removeprefix("/usr"),
                          real.removeprefix("/usr")}:
            if subprocess.run(["dpkg", "-S", candidate], capture_output=True).returncode == 0:
                owned = True
                break
        (debian if owned else missing).append(name)
    if missing:
        sys.exit(f"FAILED: {binary} loads libraries neither a Debian package nor the "
                 f"cudnn-runtime base provides: {missing}")
    if not cuda:
        sys.exit(f"FAILED: {binary} loads no CUDA library: not a CUDA build?")
    packages = subprocess.run([os.path.join(source_dir, "docker", "runtime-packages.sh"), binary],
                              capture_output=True, text=True)
    if packages.returncode != 0:
        sys.exit(f"FAILED: runtime-packages.sh: {packages.stderr}")
    print(f"CUDA libraries from the base: {sorted(cuda)}")
    print(f"{len(debian)} libraries from Debian packages: "
          f"{' '.join(sorted(set(packages.stdout.split())))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

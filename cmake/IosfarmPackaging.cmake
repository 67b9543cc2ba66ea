# The Debian package of the whole project (`cpack -G DEB` in a build tree,
# scripts/build-deb.sh): what `cmake --install` installs (the CLI, server and
# worker, the runtime library, its header and CMake package, the Python
# package), under /usr. Its Depends come from the libraries the binaries
# load (dpkg-shlibdeps), plus python3 and numpy for the Python package; what
# only some uses need (PyTorch for iosfarm.optimize, grpcio and tqdm for
# iosfarm.Farm) is suggested. A build with the CUDA backend loads CUDA,
# cuBLAS and cuDNN, which Debian 12 does not package: the .deb is built
# without it (scripts/build-deb.sh) and GPU workers ship as the worker-cuda
# image.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME iosfarm)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "iosfarm")
set(CPACK_PACKAGE_CONTACT "iosfarm maintainers <iosfarm@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "tuning farm for CNN inference: IOS search, farm server and workers, runtime")
set(CPACK_PACKAGE_DESCRIPTION
    "Inter-operator scheduling (IOS) search for CNNs, a gRPC farm server and worker daemons \
that measure stage latencies into a SQLite latency database, the iosfarm CLI, and a runtime \
(C++ library and Python package) that runs a model with its tuned schedule.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # iosfarm_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, python3-numpy")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "python3-torch, python3-torchvision, python3-onnx, python3-grpcio, python3-tqdm")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
include(CPack)

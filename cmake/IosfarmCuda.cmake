# Enables the CUDA language and cuDNN when nvcc and cuDNN are present.
#
# IOSFARM_CUDA=AUTO (default) builds the CUDA backend's device side when both
# are found and silently skips it otherwise; ON makes their absence an error;
# OFF skips. Its host planner (iosfarm_cuda_planner, worker/backends/cuda/planner)
# needs neither and is built and tested either way.
# Sets IOSFARM_HAVE_CUDA and, when true, the imported target iosfarm::cudnn.
set(IOSFARM_HAVE_CUDA OFF)
if(NOT IOSFARM_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  find_path(IOSFARM_CUDNN_INCLUDE_DIR cudnn.h
    HINTS /usr/local/cuda/include ENV CUDNN_ROOT PATH_SUFFIXES include)
  find_library(IOSFARM_CUDNN_LIBRARY cudnn
    HINTS /usr/local/cuda/lib64 ENV CUDNN_ROOT PATH_SUFFIXES lib64 lib)
  if(CMAKE_CUDA_COMPILER AND IOSFARM_CUDNN_INCLUDE_DIR AND IOSFARM_CUDNN_LIBRARY)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # 75 keeps a portable baseline; 90 is the H100/H200.
      set(CMAKE_CUDA_ARCHITECTURES 75 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 flags for nvcc
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    add_library(iosfarm::cudnn UNKNOWN IMPORTED)
    set_target_properties(iosfarm::cudnn PROPERTIES
      IMPORTED_LOCATION "${IOSFARM_CUDNN_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${IOSFARM_CUDNN_INCLUDE_DIR}")
    set(IOSFARM_HAVE_CUDA ON)
    message(STATUS "iosfarm: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                   "archs ${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${IOSFARM_CUDNN_LIBRARY})")
  elseif(IOSFARM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "IOSFARM_CUDA=ON but nvcc or cuDNN was not found")
  else()
    message(STATUS "iosfarm: CUDA backend OFF (nvcc or cuDNN not found)")
  endif()
endif()

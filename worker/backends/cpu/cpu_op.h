// CpuOp: one compiled operator of the cpu backend, a fixed list of steps
// (oneDNN primitives with bound arguments, or host functions) that runs
// without allocating. Built by the op compilers (op_compiler.h); owns its
// primitives, weights and scratch memories. Run may throw dnnl::error (the
// stage program turns it into a Status on the thread that ran it). One op is
// run by one thread at a time.
#ifndef IOSFARM_WORKER_BACKENDS_CPU_CPU_OP_H_
#define IOSFARM_WORKER_BACKENDS_CPU_CPU_OP_H_

#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "graph/tensor.h"

namespace iosfarm::worker::cpu {

class CpuOp {
 public:
  explicit CpuOp(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  // How it runs, e.g. "jit:avx512_core" or "reference loop"; for logs/tests.
  const std::string& implementation() const { return implementation_; }
  void set_implementation(std::string impl) { implementation_ = std::move(impl); }

  void AddPrimitive(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args) {
    steps_.push_back({std::move(primitive), std::move(args), nullptr});
  }
  void AddFunction(std::function<void()> function) {
    steps_.push_back({dnnl::primitive(), {}, std::move(function)});
  }
  // Appends a reorder from `from` to `to` (different layouts of one tensor).
  void AddReorder(const dnnl::memory& from, const dnnl::memory& to);

  void Run(dnnl::stream& stream) const;

 private:
  struct Step {
    dnnl::primitive primitive;
    std::unordered_map<int, dnnl::memory> args;
    std::function<void()> function;
  };
  std::string name_;
  std::string implementation_;
  std::vector<Step> steps_;
};

// A plain (row-major) copy of a stored value for ops that need one: `memory`
// is the stored memory itself when it is plain; otherwise a scratch memory
// that `AddPlainInput` fills with a reorder step.
dnnl::memory AddPlainInput(CpuOp& op, const dnnl::memory& stored, const graph::Shape& shape);

// Where an op writes a value in plain layout: the stored memory itself when
// plain, else a scratch memory; FinishPlainOutput then appends the reorder
// into the stored memory (call it after the computing steps).
dnnl::memory PlainOutputBuffer(const dnnl::memory& stored, const graph::Shape& shape);
void FinishPlainOutput(CpuOp& op, const dnnl::memory& plain, const dnnl::memory& stored);

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_CPU_OP_H_

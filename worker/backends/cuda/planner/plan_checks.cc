#include "worker/backends/cuda/planner/plan_checks.h"

#include <algorithm>

#include "common/strings.h"
#include "worker/backends/cuda/planner/memory_plan.h"

namespace iosfarm::worker::cuda {
namespace {

// A half-open byte range of the arena.
struct Extent {
  int64_t begin = 0;
  int64_t end = 0;
};

bool Overlap(const Extent& a, const Extent& b) { return a.begin < b.end && b.begin < a.end; }

bool AnyOverlap(const std::vector<Extent>& a, const std::vector<Extent>& b) {
  for (const Extent& x : a) {
    for (const Extent& y : b) {
      if (Overlap(x, y)) return true;
    }
  }
  return false;
}

class Checker {
 public:
  explicit Checker(const ExecutionPlan& plan) : plan_(plan) {}

  Status Run() {
    RETURN_IF_ERROR(CheckBuffers());
    for (size_t s = 0; s < plan_.stages.size(); ++s) {
      const StageProgram& stage = plan_.stages[s];
      std::vector<std::vector<Extent>> group_reads(stage.groups.size());
      std::vector<std::vector<Extent>> group_writes(stage.groups.size());
      for (size_t g = 0; g < stage.groups.size(); ++g) {
        for (size_t i = 0; i < stage.groups[g].steps.size(); ++i) {
          const Step& step = stage.groups[g].steps[i];
          std::vector<Extent> reads, writes;
          Status status = StepExtents(step, reads, writes);
          if (status.ok()) {
            if (AnyOverlap(reads, writes)) {
              status = absl::InternalError("it writes memory it reads");
            }
            for (size_t a = 0; a < writes.size() && status.ok(); ++a) {
              for (size_t b = a + 1; b < writes.size(); ++b) {
                if (Overlap(writes[a], writes[b])) {
                  status = absl::InternalError("two of its outputs share memory");
                  break;
                }
              }
            }
          }
          if (!status.ok()) {
            return absl::InternalError(StrCat("cuda plan: stage ", s, " group ", g, " step ", i,
                                              " (", StepKindName(step.kind), " '", step.label,
                                              "'): ", ToStd(status.message())));
          }
          group_reads[g].insert(group_reads[g].end(), reads.begin(), reads.end());
          group_writes[g].insert(group_writes[g].end(), writes.begin(), writes.end());
        }
      }
      for (size_t g = 0; g < stage.groups.size(); ++g) {
        for (size_t h = 0; h < stage.groups.size(); ++h) {
          if (g == h) continue;
          if (AnyOverlap(group_writes[g], group_reads[h]) ||
              AnyOverlap(group_writes[g], group_writes[h])) {
            return absl::InternalError(StrCat("cuda plan: stage ", s, " ('", stage.label,
                                              "'): group ", g, " writes memory group ", h,
                                              " uses concurrently"));
          }
        }
      }
    }
    for (const Preset& preset : plan_.presets) {
      RETURN_IF_ERROR(RefExtent(preset.ref, preset.label).status());
    }
    for (const RuntimeInput& input : plan_.runtime_inputs) {
      RETURN_IF_ERROR(RefExtent(input.ref, "runtime input").status());
    }
    for (const TensorRef& output : plan_.outputs) {
      RETURN_IF_ERROR(RefExtent(output, "output").status());
    }
    return absl::OkStatus();
  }

 private:
  Status CheckBuffers() {
    for (size_t i = 0; i < plan_.buffers.size(); ++i) {
      const BufferSpec& a = plan_.buffers[i];
      if (a.byte_offset < 0 || a.byte_offset % kArenaAlignment != 0 ||
          a.byte_offset + AlignedBytes(a.elements) > plan_.arena_bytes ||
          a.first_stage > a.last_stage) {
        return absl::InternalError(StrCat("cuda plan: buffer '", a.label, "' is misplaced"));
      }
      for (size_t j = i + 1; j < plan_.buffers.size(); ++j) {
        const BufferSpec& b = plan_.buffers[j];
        const Extent ea{a.byte_offset, a.byte_offset + AlignedBytes(a.elements)};
        const Extent eb{b.byte_offset, b.byte_offset + AlignedBytes(b.elements)};
        if (LifetimesOverlap(a, b) && Overlap(ea, eb)) {
          return absl::InternalError(StrCat("cuda plan: buffers '", a.label, "' and '", b.label,
                                            "' are alive together and share memory"));
        }
      }
    }
    return absl::OkStatus();
  }

  // The bytes elements [first, end) of buffer `buffer` span, after checking
  // they lie inside it.
  StatusOr<Extent> Range(int buffer, int64_t first, int64_t end, std::string_view what) const {
    if (buffer < 0 || buffer >= static_cast<int>(plan_.buffers.size())) {
      return absl::InternalError(StrCat(what, " refers to buffer ", buffer));
    }
    const BufferSpec& spec = plan_.buffers[buffer];
    if (first < 0 || end < first || end > spec.elements) {
      return absl::InternalError(StrCat(what, " elements [", first, ", ", end,
                                        ") leave buffer '", spec.label, "' of ", spec.elements));
    }
    constexpr int64_t kF = static_cast<int64_t>(sizeof(float));
    return Extent{spec.byte_offset + first * kF, spec.byte_offset + end * kF};
  }

  StatusOr<Extent> RefExtent(const TensorRef& ref, std::string_view what) const {
    return Range(ref.buffer, ref.offset, ref.offset + ref.num_elements(), what);
  }

  // The bytes a strided copy touches starting `offset` elements after `ref`:
  // from its first row's start to its last row's end (conservative: the gaps
  // between rows count as touched).
  Status RowExtent(const TensorRef& ref, int64_t offset, int64_t pitch, const CopyRows& c,
                   std::vector<Extent>& out) const {
    if (c.rows < 1 || c.width < 1 || pitch < c.width) {
      return absl::InternalError("malformed copy");
    }
    const int64_t first = ref.offset + offset;
    const int64_t end = first + (c.rows - 1) * pitch + c.width;
    ASSIGN_OR_RETURN(Extent e, Range(ref.buffer, first, end, "copy"));
    out.push_back(e);
    return absl::OkStatus();
  }

  Status StepExtents(const Step& step, std::vector<Extent>& reads,
                     std::vector<Extent>& writes) const {
    for (const WeightRef& w : step.weights) {
      if (w.offset < 0 || w.offset + w.num_elements() > static_cast<int64_t>(plan_.weights.size())) {
        return absl::InternalError("a weight lies outside the packed weights");
      }
    }
    if (step.kind == StepKind::kCopyRows) {
      if (step.inputs.size() != 1 || step.outputs.size() != 1) {
        return absl::InternalError("a copy needs one input and one output");
      }
      RETURN_IF_ERROR(RowExtent(step.inputs[0], step.copy.src_offset, step.copy.src_pitch,
                                step.copy, reads));
      return RowExtent(step.outputs[0], step.copy.dst_offset, step.copy.dst_pitch, step.copy,
                       writes);
    }
    for (const TensorRef& ref : step.inputs) {
      ASSIGN_OR_RETURN(Extent e, RefExtent(ref, "input"));
      reads.push_back(e);
    }
    for (const TensorRef& ref : step.outputs) {
      ASSIGN_OR_RETURN(Extent e, RefExtent(ref, "output"));
      writes.push_back(e);
    }
    return absl::OkStatus();
  }

  const ExecutionPlan& plan_;
};

}  // namespace

Status CheckPlanHazards(const ExecutionPlan& plan) { return Checker(plan).Run(); }

}  // namespace iosfarm::worker::cuda

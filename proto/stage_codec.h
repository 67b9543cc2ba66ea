// The one stage encoder/decoder of the wire (iosfarm.v1.StageSpec), shared by
// the server (encodes the stages of a build) and the worker (decodes them and
// checks them against the server's signatures).
//
// The server canonicalises every stage before it sends it, so the worker must
// find the same signature; a mismatch means the two disagree about the graph
// or the signature algorithm (kSignatureVersion), and measuring would store a
// latency under the wrong key.
//
// Every function is pure and thread-safe.
#ifndef IOSFARM_PROTO_STAGE_CODEC_H_
#define IOSFARM_PROTO_STAGE_CODEC_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "iosfarm/v1/farm.pb.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::proto {

// "0123456789abcdef": a signature as 16 lower-case hex digits.
std::string SignatureHex(scheduler::ios::Signature signature);

// The wire form of `stage`: its strategy's name, its groups with their ops in
// the listed order, and `signature` (the sender's; StageFromSpec checks it).
// The merged description of a merge stage is not sent: the receiver computes
// it.
v1::StageSpec EncodeStage(const scheduler::ios::Stage& stage,
                          scheduler::ios::Signature signature);

// The stage `spec` describes, canonicalised (CanonicalizeStage: groups and ops
// in the order the signature assumes; `merged` set for merge stages).
// InvalidArgument for an unknown strategy, an empty stage or group, or a node
// id out of range, a Constant or listed twice; FailedPrecondition when a merge
// stage's convolutions cannot merge or when the signature differs from
// spec.signature. Every message starts with "stage <index>: ".
StatusOr<scheduler::ios::Stage> StageFromSpec(const graph::Graph& graph,
                                              const v1::StageSpec& spec, int index);

// StageFromSpec for every spec, in order; the first error.
StatusOr<std::vector<scheduler::ios::Stage>> StagesFromSpecs(
    const graph::Graph& graph, const google::protobuf::RepeatedPtrField<v1::StageSpec>& specs);

}  // namespace iosfarm::proto

#endif  // IOSFARM_PROTO_STAGE_CODEC_H_

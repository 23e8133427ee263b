#include "drover/control/effects.h"

namespace drover::control {
namespace {

// One call operator per alternative, and no generic one: std::visit does not compile while an
// alternative of Effect lacks its operator here.
struct SinkVisitor {
  EffectSink& sink;
  void operator()(const LaunchWorker& effect) const { sink.LaunchWorker(effect); }
  void operator()(const StopWorker& effect) const { sink.StopWorker(effect); }
  void operator()(const SetWorkerTimeout& effect) const { sink.SetWorkerTimeout(effect); }
  void operator()(const PublishOutputs& effect) const { sink.PublishOutputs(effect); }
  void operator()(const DiscardOutputs& effect) const { sink.DiscardOutputs(effect); }
  void operator()(const ForgetPublication& effect) const { sink.ForgetPublication(effect); }
  void operator()(const SubmitExternal& effect) const { sink.SubmitExternal(effect); }
  void operator()(const CancelExternal& effect) const { sink.CancelExternal(effect); }
};

}  // namespace

void Dispatch(const Effect& effect, EffectSink& sink) { std::visit(SinkVisitor{sink}, effect); }

}  // namespace drover::control

package main

import (
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/notes"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
)

// The adapters' interfaces the commands plug together, checked when the
// command is compiled rather than described in comments.
var (
	_ web.AttemptReader    = (*store.DB)(nil)
	_ web.Versioner        = (*store.DB)(nil)
	_ pipeline.Store       = (*store.DB)(nil)
	_ pipeline.ReplayStore = (*store.DB)(nil)
	_ metrics.Snapshotter  = (*store.DB)(nil)
	_ notes.Ledger         = (*store.DB)(nil)
	_ loki.Sink            = (*pipeline.Live)(nil)
	_ pipeline.FindingSink = (*loki.Pusher)(nil)
	_ pipeline.FindingSink = (*notes.Writer)(nil)
	// The counting components declare the metrics they need; a nil
	// *metrics.Metrics in them counts nothing (its methods take a nil
	// receiver).
	_ pipeline.Metrics     = (*metrics.Metrics)(nil)
	_ loki.ReceiverMetrics = (*metrics.Metrics)(nil)
	_ loki.PusherMetrics   = (*metrics.Metrics)(nil)
)

package domain

// Label values of the analyzer's live counters. The components that count
// (the Loki push receiver and pusher, the journal follower) pass them to
// their metrics interface, and package metrics exports every one of them at
// 0 (so that increase() sees a series' first event); they are defined here,
// once, because both sides need them and neither may import the other.
// Like the verdict ids, they are part of what alerts and dashboards read.

// Sources of ingested entries (label "source").
const (
	IngestSourcePush    = "loki_push" // POST /loki/api/v1/push
	IngestSourceJournal = "journal"   // the local journal (live following)
)

// Reasons of analyzer_ingest_errors_total (a request or record refused).
const (
	IngestErrUnauthorized    = "unauthorized"      // missing or wrong bearer token
	IngestErrTooLarge        = "too_large"         // body above the size limit
	IngestErrContentType     = "content_type"      // neither JSON nor protobuf
	IngestErrEncoding        = "content_encoding"  // unsupported Content-Encoding
	IngestErrDecompress      = "decompress"        // bad gzip / deflate stream
	IngestErrSnappy          = "snappy"            // protobuf body not snappy block data
	IngestErrProtobuf        = "protobuf"          // snappy ok, protobuf invalid
	IngestErrJSON            = "json"              // JSON body invalid
	IngestErrLabels          = "labels"            // stream labels do not parse
	IngestErrTimestamp       = "timestamp"         // an entry's timestamp is invalid
	IngestErrSaturated       = "saturated"         // the pipeline queue is full (429)
	IngestErrMethod          = "method"            // not a POST
	IngestErrReadBody        = "read_body"         // the client went away mid-body
	IngestErrMalformedRecord = "malformed_record"  // a journal record that does not parse
	IngestErrPipeline        = "pipeline_rejected" // the pipeline refused decoded entries
)

// IngestErrorReasons lists the reasons of the push endpoint, exported at 0
// (the journal source exports IngestErrMalformedRecord).
var IngestErrorReasons = []string{
	IngestErrUnauthorized, IngestErrTooLarge, IngestErrContentType, IngestErrEncoding,
	IngestErrDecompress, IngestErrSnappy, IngestErrProtobuf, IngestErrJSON, IngestErrLabels,
	IngestErrTimestamp, IngestErrSaturated, IngestErrMethod, IngestErrReadBody, IngestErrPipeline,
}

// Reasons of analyzer_ingest_lines_skipped_total (lines not fed to the
// tracker).
const (
	IngestSkipDuplicate = "duplicate" // the same record was pushed again (client retry)
	IngestSkipEmpty     = "empty"     // no message and no field to go by
	IngestSkipSaturated = "saturated" // dropped with a request refused for backpressure
	// IngestSkipMalformed: an entry that does not decode, or every entry of
	// a stream whose labels do not parse or break Loki's label limits;
	// the rest of the push is taken.
	IngestSkipMalformed = "malformed"
)

// IngestSkipReasons lists the skip reasons exported at 0.
var IngestSkipReasons = []string{IngestSkipDuplicate, IngestSkipEmpty, IngestSkipSaturated, IngestSkipMalformed}

// Reasons of analyzer_loki_push_failures_total (findings not delivered to
// Loki).
const (
	LokiPushRejected  = "rejected"          // Loki answered 4xx other than 429: not retried
	LokiPushTooOld    = "too_old"           // older than Loki accepts (reject_old_samples_max_age): not sent
	LokiPushExhausted = "retries_exhausted" // 429/5xx/network errors until the retry budget ran out
	LokiPushQueueFull = "queue_full"        // the push queue was full
	LokiPushShutdown  = "shutdown"          // still queued when the process stopped
	LokiPushEncode    = "encode"            // the request could not be built
)

// LokiPushFailureReasons lists the push failure reasons exported at 0.
var LokiPushFailureReasons = []string{
	LokiPushRejected, LokiPushTooOld, LokiPushExhausted, LokiPushQueueFull, LokiPushShutdown, LokiPushEncode,
}

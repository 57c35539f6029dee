package loki

// ReceiverMetrics counts what the push receiver takes and refuses
// (*metrics.Metrics has it). Sources and reasons are domain's label values
// (domain.IngestSourcePush, domain.IngestErr..., domain.IngestSkip...).
// Methods are called from concurrent requests.
type ReceiverMetrics interface {
	// IngestEntries counts n entries handed to the sink.
	IngestEntries(source string, n int)
	// IngestBytes counts n bytes of request bodies as received.
	IngestBytes(source string, n int64)
	// IngestError counts one refused request.
	IngestError(source, reason string)
	// LinesSkipped counts n lines received but not handed to the sink.
	LinesSkipped(source, reason string, n int)
	// PushRequest counts one answer with its HTTP status code.
	PushRequest(code int)
	// HostsEvicted counts n hosts whose state was dropped to make room
	// for others (ReceiverOptions.MaxHosts).
	HostsEvicted(n int)
}

// PusherMetrics counts the findings the pusher sends to Loki
// (*metrics.Metrics has it). Reasons are domain.LokiPush... label values.
type PusherMetrics interface {
	// LokiDelivered counts n findings Loki acknowledged.
	LokiDelivered(n int)
	// LokiFailed counts n findings not delivered, by reason.
	LokiFailed(reason string, n int)
	// LokiRetry counts one retried request.
	LokiRetry()
	// LokiRequest counts one request with its status code, or "error".
	LokiRequest(code string)
	// LokiQueue sets the number of findings waiting.
	LokiQueue(n int)
}

// noMetrics counts nothing: it stands for a Metrics left unset, so that
// the receiver and the pusher never call a method of a nil interface.
type noMetrics struct{}

func (noMetrics) IngestEntries(string, int)        {}
func (noMetrics) IngestBytes(string, int64)        {}
func (noMetrics) IngestError(string, string)       {}
func (noMetrics) LinesSkipped(string, string, int) {}
func (noMetrics) PushRequest(int)                  {}
func (noMetrics) HostsEvicted(int)                 {}
func (noMetrics) LokiDelivered(int)                {}
func (noMetrics) LokiFailed(string, int)           {}
func (noMetrics) LokiRetry()                       {}
func (noMetrics) LokiRequest(string)               {}
func (noMetrics) LokiQueue(int)                    {}

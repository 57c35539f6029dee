package domain

import "time"

// AttemptJSON is an attempt in the `analyzer explain --format json` contract
// of the spec; the JSON API serves the same object. Unknown fields are omitted.
type AttemptJSON struct {
	ID                  string         `json:"id,omitempty"`
	Unit                string         `json:"unit,omitempty"`
	InvocationID        string         `json:"invocation_id,omitempty"`
	Container           string         `json:"container,omitempty"`
	Host                string         `json:"host,omitempty"`
	Engine              string         `json:"engine,omitempty"`
	EngineVersion       string         `json:"engine_version,omitempty"`
	StartedAt           string         `json:"started_at,omitempty"`
	EndedAt             string         `json:"ended_at,omitempty"`
	ReadyAt             string         `json:"ready_at,omitempty"`
	ReachedReady        bool           `json:"reached_ready,omitempty"`
	Phase               Phase          `json:"phase"`
	Verdict             Verdict        `json:"verdict"`
	Findings            []string       `json:"findings"`
	Rule                string         `json:"rule,omitempty"`
	Note                string         `json:"note,omitempty"`
	ExitStatus          *int           `json:"exit_status,omitempty"`
	EndedBy             string         `json:"ended_by,omitempty"`
	RestartCounter      *int           `json:"restart_counter,omitempty"`
	RestartCounterAfter *int           `json:"restart_counter_after,omitempty"`
	Shape               Shape          `json:"shape"`
	Evidence            []EvidenceJSON `json:"evidence,omitempty"`
	Fingerprint         string         `json:"fingerprint,omitempty"`
}

// EvidenceJSON is an evidence line in the explain contract.
type EvidenceJSON struct {
	Time    string `json:"time,omitempty"`
	Cursor  string `json:"cursor,omitempty"`
	Message string `json:"message"`
}

// TimeFormat is RFC 3339 with microseconds, the journal's resolution.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(TimeFormat)
}

// JSON converts the attempt to its contract form.
func (a *Attempt) JSON() AttemptJSON {
	j := AttemptJSON{
		ID: a.ID, Unit: a.Unit, InvocationID: a.InvocationID, Container: a.Container,
		Host: a.Host, Engine: a.Engine, EngineVersion: a.EngineVersion,
		StartedAt: formatTime(a.StartedAt), EndedAt: formatTime(a.EndedAt),
		ReadyAt: formatTime(a.ReadyAt), ReachedReady: !a.ReadyAt.IsZero(),
		Phase: a.Phase, Verdict: a.Verdict, Findings: a.FindingIDs(), Rule: a.Rule, Note: a.Note,
		ExitStatus: a.ExitStatus, EndedBy: a.EndedBy, RestartCounter: a.RestartCounter,
		RestartCounterAfter: a.RestartCounterAfter, Shape: a.Shape, Fingerprint: a.Fingerprint,
	}
	if j.Shape == nil {
		j.Shape = Shape{}
	}
	for _, e := range a.Evidence {
		j.Evidence = append(j.Evidence, EvidenceJSON{Time: formatTime(e.Time), Cursor: e.Cursor, Message: e.Message})
	}
	return j
}

// MarshalJSON renders the attempt in the explain contract
// (AttemptJSON.AppendJSON: what json.Marshal of a.JSON() writes).
func (a *Attempt) MarshalJSON() ([]byte, error) {
	j := a.JSON()
	return j.AppendJSON(nil)
}

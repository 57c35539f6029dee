package domain

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// Engines lists the spec's engine families ("Engines"), in the spec's order;
// "unknown" is an attempt whose engine was not detected.
var Engines = []string{
	"vllm", "sglang", "llamacpp", "tgi", "ollama", "trtllm", "lmdeploy",
	"exllama", "halogen", "gufo", "unknown",
}

// FindingNames lists every id a finding may have: the verdicts that are
// decided by a rule (all but running and ready), then the non-root findings.
func FindingNames() []string {
	var out []string
	for _, v := range Verdicts {
		if v != VerdictRunning && v != VerdictReady {
			out = append(out, string(v))
		}
	}
	return append(out, NonRootFindings...)
}

// VerdictNames lists the spec's verdicts as strings, in the spec's order.
func VerdictNames() []string {
	out := make([]string, 0, len(Verdicts))
	for _, v := range Verdicts {
		out = append(out, string(v))
	}
	return out
}

// FailureVerdicts lists the verdicts that are failures (Verdict.IsFailure),
// in the spec's order: the verdicts a failure group can have.
func FailureVerdicts() []string {
	var out []string
	for _, v := range Verdicts {
		if v.IsFailure() {
			out = append(out, string(v))
		}
	}
	return out
}

// SearchMinLength is the shortest prefix of an id, invocation id or
// container id that AttemptFilter.Search matches; shorter text must match
// whole.
const SearchMinLength = 8

// PageCursor names the attempt a page of a list starts after, by its key in
// the list's order: newest start first (unknown starts last), then id
// descending. A page that begins after a key stays the same when newer
// attempts are inserted (keyset pagination).
type PageCursor struct {
	// StartedAt is the attempt's start in µs since the epoch; nil when
	// its start is unknown.
	StartedAt *int64 `json:"s,omitempty"`
	// ID is the attempt's id.
	ID string `json:"i"`
	// Backward asks for the page before the attempt (the previous page)
	// instead of the page after it.
	Backward bool `json:"b,omitempty"`
}

// CursorOf returns the cursor of a (the page after it).
func CursorOf(a *Attempt) *PageCursor {
	c := &PageCursor{ID: a.ID}
	if !a.StartedAt.IsZero() {
		us := a.StartedAt.UnixMicro()
		c.StartedAt = &us
	}
	return c
}

// Encode returns the cursor as an opaque URL-safe token.
func (c *PageCursor) Encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrBadCursor is returned by ParsePageCursor for a token it did not make.
var ErrBadCursor = errors.New("not a cursor of this list (use the next or prev value of a response)")

// ParsePageCursor reads a token made by PageCursor.Encode.
func ParsePageCursor(token string) (*PageCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, ErrBadCursor
	}
	var c PageCursor
	if err := json.Unmarshal(b, &c); err != nil || c.ID == "" {
		return nil, ErrBadCursor
	}
	return &c, nil
}

// AttemptPage is one page of a list of attempts (newest first).
type AttemptPage struct {
	Attempts []*Attempt
	// Total counts every attempt the filter matches, on all pages.
	Total int
	// Before counts the matching attempts before this page: the page
	// shows attempts Before+1 to Before+len(Attempts) of Total.
	Before int
	// Next and Prev are the cursors of the following and preceding
	// pages; nil on the last and the first page.
	Next, Prev *PageCursor
}

// RegressionGap is how long a failure group must have been quiet for its
// next occurrence to count as a regression ("came back after N days"), as
// Sentry reopens a resolved issue: a gap of more than 7 days between two
// consecutive attempts of the group.
const RegressionGap = 7 * 24 * time.Hour

// GroupExamples bounds the example attempt ids of a FailureGroup.
const GroupExamples = 5

// FailureGroup is the failed attempts that share a verdict, the rule that
// decided it and a fingerprint (Attempt.Fingerprint: the masked last
// exception of an unknown failure, "" for most rule verdicts): one "issue"
// in Sentry's sense.
type FailureGroup struct {
	// ID is GroupID(Verdict, Rule, Fingerprint).
	ID          string
	Verdict     Verdict
	Rule        string
	Fingerprint string
	Count       int
	// FirstSeen and LastSeen are the earliest and latest start (the end
	// when the start is unknown) of the group's attempts, with the offset
	// of their source; zero when none is known.
	FirstSeen, LastSeen time.Time
	// AttemptIDs are up to GroupExamples ids, newest first; the first is
	// the newest attempt of the group.
	AttemptIDs []string
	// Hosts and Units are the distinct hosts and units, sorted.
	Hosts, Units []string
	// Regressions counts the gaps of more than RegressionGap between
	// consecutive attempts of the group.
	Regressions int
	// CameBackAt is the first attempt after the latest such gap and
	// CameBackAfter the length of that gap; zero when the group never
	// came back.
	CameBackAt    time.Time
	CameBackAfter time.Duration
}

// GroupID is the stable id of a failure group: 12 hex digits of a hash of
// verdict, rule and fingerprint.
func GroupID(v Verdict, rule, fingerprint string) string {
	h := sha1.Sum([]byte(string(v) + "\x00" + rule + "\x00" + fingerprint))
	return hex.EncodeToString(h[:6])
}

// ValidGroupID reports whether s has the form of a GroupID: 12 lowercase
// hex digits.
func ValidGroupID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

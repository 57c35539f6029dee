package web

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/when"
)

// Query parameters of the attempts list (GET / and GET /api/v1/attempts).
// host, unit, engine, verdict and finding may repeat: any of the values.
var listParams = []string{"host", "unit", "engine", "verdict", "finding", "failed", "group", "q", "since", "until", "limit", "cursor", "tz"}

// Query parameters of the failure groups (GET /failures, GET
// /api/v1/failures); /unknown and /api/v1/unknown take them but verdict.
var failureParams = []string{"host", "unit", "engine", "verdict", "group", "since", "until", "limit"}

// multiParams may be given more than once.
var multiParams = []string{"host", "unit", "engine", "verdict", "finding"}

// paramError is a bad query parameter: its name, what is wrong, and the
// values (or, for an unknown parameter, the parameters) that are allowed.
type paramError struct {
	Msg     string   `json:"error"`
	Param   string   `json:"parameter"`
	Allowed []string `json:"allowed,omitempty"`
}

func (e *paramError) Error() string { return e.Msg }

// queryOpts says how parseQuery reads the query of one route.
type queryOpts struct {
	// params are the parameters the route takes.
	params []string
	// verdicts are the allowed verdicts (default: all of the spec).
	verdicts []string
	// limit is the default limit (0: none); a larger one than maxLimit is
	// refused.
	limit, maxLimit int
	// loc reads since/until without an offset (the page's datetime-local
	// inputs, its zone); nil: UTC (the API).
	loc *time.Location
	// engines returns the engines stored in the database, allowed besides
	// domain.Engines (rule files may add engines); nil: none.
	engines func() ([]string, error)
}

// parseQuery reads an AttemptFilter from a query string: unknown
// parameters, repeated single parameters and values outside the allowed
// ones are a *paramError that names what is allowed. Empty values (a form's
// "all") do not filter.
func parseQuery(q url.Values, o queryOpts) (domain.AttemptFilter, error) {
	f := domain.AttemptFilter{Limit: o.limit}
	var names []string
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.Contains(o.params, name) {
			return f, &paramError{Param: name, Msg: fmt.Sprintf("unknown parameter %q; allowed parameters: %s", name, strings.Join(o.params, ", ")), Allowed: o.params}
		}
		if len(q[name]) > 1 && !slices.Contains(multiParams, name) {
			return f, &paramError{Param: name, Msg: fmt.Sprintf("parameter %q may be given once", name)}
		}
	}
	values := func(name string) []string {
		var out []string
		for _, v := range q[name] {
			if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}
	oneOf := func(name string, allowed []string) ([]string, error) {
		vs := values(name)
		for _, v := range vs {
			if !slices.Contains(allowed, v) {
				return nil, &paramError{Param: name, Msg: fmt.Sprintf("%s %q is not one of: %s", name, v, strings.Join(allowed, ", ")), Allowed: allowed}
			}
		}
		return vs, nil
	}
	var err error
	f.Hosts, f.Units = values("host"), values("unit")
	verdicts := o.verdicts
	if verdicts == nil {
		verdicts = domain.VerdictNames()
	}
	if f.Verdicts, err = oneOf("verdict", verdicts); err != nil {
		return f, err
	}
	if f.Findings, err = oneOf("finding", domain.FindingNames()); err != nil {
		return f, err
	}
	if engines := values("engine"); len(engines) > 0 {
		allowed := slices.Clone(domain.Engines)
		if o.engines != nil {
			stored, err := o.engines()
			if err != nil {
				return f, err
			}
			for _, e := range stored {
				if !slices.Contains(allowed, e) {
					allowed = append(allowed, e)
				}
			}
		}
		if f.Engines, err = oneOf("engine", allowed); err != nil {
			return f, err
		}
	}
	switch v := strings.ToLower(q.Get("failed")); v {
	case "", "0", "false", "no":
	case "1", "true", "yes", "on":
		f.Failed = true
	default:
		return f, &paramError{Param: "failed", Msg: fmt.Sprintf("failed %q is not one of: 1, 0 (also true, false)", q.Get("failed")), Allowed: []string{"1", "0"}}
	}
	if g := strings.TrimSpace(q.Get("group")); g != "" {
		if !domain.ValidGroupID(g) {
			return f, &paramError{Param: "group", Msg: fmt.Sprintf("group %q is not a failure group id (12 hex digits, as GET /api/v1/failures gives)", g)}
		}
		f.Group = g
	}
	f.Search = strings.TrimSpace(q.Get("q"))
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if *p.dst, err = parseTimeParam(q.Get(p.name), o.loc); err != nil {
			return f, &paramError{Param: p.name, Msg: p.name + " " + err.Error()}
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > o.maxLimit {
			return f, &paramError{Param: "limit", Msg: fmt.Sprintf("limit must be a positive integer of at most %d (the cap), not %q", o.maxLimit, v)}
		}
		f.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		if f.Cursor, err = domain.ParsePageCursor(v); err != nil {
			return f, &paramError{Param: "cursor", Msg: "cursor " + err.Error()}
		}
	}
	return f, nil
}

// parseTimeParam reads since/until: empty (no bound), or what the CLI's
// --since takes (when.Query: RFC 3339, an unencoded '+' of the offset
// arriving as a space; dates and datetime-local values read in loc, UTC
// for the API; today, yesterday, now, a duration ago). The errors say
// what is accepted.
func parseTimeParam(v string, loc *time.Location) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := when.Query(loc).Parse(v)
	if err != nil && loc != nil {
		return time.Time{}, errors.New(err.Error() + " (the date picker gives one)")
	}
	return t, err
}

// storedEngines returns the engines of the database, for parseQuery.
func (s *server) storedEngines(ctx context.Context) func() ([]string, error) {
	return func() ([]string, error) {
		_, _, engines, _, err := s.db.Facets(ctx)
		return engines, err
	}
}

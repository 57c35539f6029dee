package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/when"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/pipeline"
)

// fromLokiFlags are replay's flags of the Loki backfill (--from-loki).
type fromLokiFlags struct {
	url, query, since, until      string
	user, password, token, tenant string
	limit                         int
	timeout                       time.Duration
	maxBytes                      int64
}

var fromLokiOnly = []string{"query", "since", "until", "from-loki-user", "from-loki-password", "from-loki-token",
	"from-loki-tenant", "from-loki-limit", "from-loki-timeout", "from-loki-max-bytes"}

func addFromLokiFlags(fs *pflag.FlagSet) *fromLokiFlags {
	f := &fromLokiFlags{}
	fs.StringVar(&f.url, "from-loki", "", "read the journal entries from this Loki's query_range API (http://HOST:3100) instead of FILEs")
	fs.StringVar(&f.query, "query", loki.DefaultQuery, "--from-loki: LogQL log query selecting the hosts' journal streams")
	fs.StringVar(&f.since, "since", "30d", "--from-loki: first entry time (RFC 3339, 2026-01-01[ 10:00], yesterday, today, or a duration ago: 30d, -12h)")
	fs.StringVar(&f.until, "until", "now", "--from-loki: end of the range, exclusive (same forms as --since)")
	fs.StringVar(&f.user, "from-loki-user", "", "basic-auth user for --from-loki")
	fs.StringVar(&f.password, "from-loki-password", os.Getenv("ANALYZER_FROM_LOKI_PASSWORD"), "basic-auth password for --from-loki (default $ANALYZER_FROM_LOKI_PASSWORD)")
	fs.StringVar(&f.token, "from-loki-token", os.Getenv("ANALYZER_FROM_LOKI_TOKEN"), "bearer token for --from-loki (default $ANALYZER_FROM_LOKI_TOKEN)")
	fs.StringVar(&f.tenant, "from-loki-tenant", "", "tenant sent as X-Scope-OrgID to --from-loki")
	fs.IntVar(&f.limit, "from-loki-limit", loki.DefaultQueryLimit, "--from-loki: entries per query_range page (Loki's max_entries_limit_per_query is 5000 by default)")
	fs.DurationVar(&f.timeout, "from-loki-timeout", loki.DefaultQueryTimeout, "--from-loki: time limit of one page's request")
	fs.Int64Var(&f.maxBytes, "from-loki-max-bytes", loki.DefaultQueryMaxBytes, "--from-loki: largest response body of one page, in bytes")
	return f
}

// config checks the flags and returns the query's configuration.
func (f *fromLokiFlags) config(now time.Time) (loki.QueryConfig, error) {
	cli := when.Parser{Loc: time.Local, Now: func() time.Time { return now }}
	start, err := cli.Parse(f.since)
	if err != nil {
		return loki.QueryConfig{}, usageError{msg: "--since " + err.Error()}
	}
	end, err := cli.Parse(f.until)
	if err != nil {
		return loki.QueryConfig{}, usageError{msg: "--until " + err.Error()}
	}
	if !start.Before(end) {
		return loki.QueryConfig{}, usageError{msg: fmt.Sprintf("--since %s is not before --until %s", f.since, f.until)}
	}
	if f.limit <= 0 || f.maxBytes <= 0 || f.timeout <= 0 {
		return loki.QueryConfig{}, usageError{msg: "--from-loki-limit, --from-loki-max-bytes and --from-loki-timeout must be positive"}
	}
	if f.token != "" && f.user != "" {
		return loki.QueryConfig{}, usageError{msg: "--from-loki-user and --from-loki-token are exclusive"}
	}
	return loki.QueryConfig{URL: f.url, Query: f.query, Start: start, End: end, Limit: f.limit,
		Username: f.user, Password: f.password, BearerToken: f.token, TenantID: f.tenant,
		Timeout: f.timeout, MaxBytes: f.maxBytes}, nil
}

// lokiInput is a Loki query as replay's input (loki.ReadQuery).
func lokiInput(cfg loki.QueryConfig, qs *loki.QueryStats) pipeline.Input {
	return pipeline.Input{Name: cfg.URL, NoProgress: true, Read: func(ctx context.Context, opt ingest.Options, fn func(domain.Entry) error) (ingest.Stats, error) {
		return loki.ReadQuery(ctx, cfg, qs, opt, fn)
	}}
}

package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/llmfleet/analyzer/deploy"
	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
)

// files lists every file of deploy/ (embedded).
func files(t *testing.T) []string {
	t.Helper()
	var out []string
	err := fs.WalkDir(deploy.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 8 {
		t.Fatalf("deploy/ has only %d files", len(out))
	}
	return out
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := deploy.Files.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryFileParses parses each file of deploy/ by its kind.
func TestEveryFileParses(t *testing.T) {
	for _, p := range files(t) {
		src := read(t, p)
		switch ext := filepath.Ext(p); ext {
		case ".yaml", ".yml":
			dec := yaml.NewDecoder(strings.NewReader(src))
			for {
				var doc any
				if err := dec.Decode(&doc); err != nil {
					if err.Error() == "EOF" {
						break
					}
					t.Errorf("%s: %v", p, err)
					break
				}
			}
		case ".json":
			var doc any
			if err := json.Unmarshal([]byte(src), &doc); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		case ".alloy":
			if _, err := deploy.ParseAlloy(src); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		case ".service":
			checkUnit(t, p, src)
		case ".catalog":
			// journalctl --update-catalog runs on it in TestJournalCatalog.
			if !regexp.MustCompile(`(?m)^-- [0-9a-f]{32}$`).MatchString(src) {
				t.Errorf("%s: no catalog entry", p)
			}
		case ".env":
			for i, line := range strings.Split(src, "\n") {
				line = strings.TrimSpace(line)
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				if !regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(line) {
					t.Errorf("%s:%d: not KEY=value: %q", p, i+1, line)
				}
			}
		default:
			t.Errorf("%s: no check for %q files; add one", p, ext)
		}
	}
}

// checkUnit parses a systemd unit file: sections, Key=Value lines, and the
// keys a service needs.
func checkUnit(t *testing.T, p, src string) {
	sections := map[string]map[string][]string{}
	cur := ""
	sc := bufio.NewScanner(strings.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			cur = line[1 : len(line)-1]
			sections[cur] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || cur == "" || !regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`).MatchString(k) {
				t.Errorf("%s:%d: not Key=Value in a section: %q", p, n, line)
				continue
			}
			sections[cur][k] = append(sections[cur][k], v)
		}
	}
	for _, want := range []string{"Unit", "Service", "Install"} {
		if sections[want] == nil {
			t.Errorf("%s: no [%s] section", p, want)
		}
	}
	exec := strings.Join(sections["Service"]["ExecStart"], " ")
	if !strings.Contains(exec, "analyzer serve") || !strings.Contains(exec, "--db") || !strings.Contains(exec, "--listen") {
		t.Errorf("%s: ExecStart %q does not run analyzer serve with --db and --listen", p, exec)
	}
	if len(sections["Install"]["WantedBy"]) == 0 {
		t.Errorf("%s: no WantedBy", p)
	}
}

// alloySchema lists, per component, the attributes and blocks the shipped
// config may use (from the Alloy reference of each component).
var alloySchema = map[string][]string{
	"loki.relabel":                           {"forward_to", "max_cache_size", "rule"},
	"loki.relabel/rule":                      {"source_labels", "separator", "regex", "modulus", "target_label", "replacement", "action"},
	"loki.source.journal":                    {"format_as_json", "max_age", "path", "relabel_rules", "matches", "forward_to", "labels"},
	"loki.process":                           {"forward_to", "stage.structured_metadata", "stage.labels", "stage.label_drop", "stage.static_labels", "stage.drop", "stage.match", "stage.decolorize"},
	"loki.process/stage.structured_metadata": {"values", "regex"},
	"loki.write":                             {"endpoint", "external_labels", "max_streams"},
	"loki.write/endpoint": {"url", "name", "headers", "batch_wait", "batch_size", "remote_timeout", "tenant_id",
		"bearer_token", "bearer_token_file", "min_backoff_period", "max_backoff_period", "max_backoff_retries",
		"retry_on_http_429", "basic_auth", "authorization", "tls_config", "proxy_url"},
}

// TestAlloyConfig checks the Alloy config's components, their attribute
// and block names, the references between components, and that the
// journal pipeline carries every journald field the analyzer uses, under a
// name the push receiver maps back to that field.
func TestAlloyConfig(t *testing.T) {
	src := read(t, "alloy/config.alloy")
	root, err := deploy.ParseAlloy(src)
	if err != nil {
		t.Fatal(err)
	}
	// The same component headers, found with a plain regex, as a cross-check
	// of the reader.
	headers := regexp.MustCompile(`(?m)^([a-z]+(?:\.[a-z_]+)+)\s+"([A-Za-z0-9_]+)"\s*\{`).FindAllStringSubmatch(src, -1)
	if len(headers) != len(root.Blocks) {
		t.Errorf("regex finds %d components, the reader %d", len(headers), len(root.Blocks))
	}
	components := map[string]bool{}
	for _, b := range root.Blocks {
		if b.Label == "" {
			t.Errorf("line %d: top-level block %s has no label", b.Line, b.Name)
		}
		components[b.Name+"."+b.Label] = true
		allowed, ok := alloySchema[b.Name]
		if !ok {
			t.Errorf("line %d: component %s is not one the analyzer's deployment expects", b.Line, b.Name)
			continue
		}
		checkNames(t, b, b.Name, allowed)
	}
	for _, want := range []string{"loki.source.journal", "loki.relabel", "loki.process", "loki.write"} {
		if len(root.Find(want)) == 0 {
			t.Errorf("no %s component", want)
		}
	}
	// Every reference names a component of the file, with its export.
	ref := regexp.MustCompile(`^(loki\.[a-z_.]+?)\.([A-Za-z0-9_]+)\.(receiver|rules)$`)
	for _, b := range root.Blocks {
		var refs []deploy.Value
		if v, ok := b.Attrs["forward_to"]; ok {
			refs = append(refs, v.List...)
		}
		if v, ok := b.Attrs["relabel_rules"]; ok {
			refs = append(refs, v)
		}
		for _, r := range refs {
			m := ref.FindStringSubmatch(r.Str)
			if m == nil || !components[m[1]+"."+m[2]] {
				t.Errorf("%s %q refers to %q, which is not a component of the file", b.Name, b.Label, r.Str)
			}
		}
	}
	// The analyzer's endpoint: the push path, with the token.
	var toAnalyzer bool
	for _, w := range root.Find("loki.write") {
		for _, ep := range w.Find("endpoint") {
			if strings.Contains(ep.Attrs["url"].Str, "ANALYZER_PUSH_URL") {
				toAnalyzer = true
				if !strings.Contains(ep.Attrs["bearer_token"].Str, "ANALYZER_PUSH_TOKEN") {
					t.Error("the analyzer endpoint sends no bearer token")
				}
			}
		}
	}
	if !toAnalyzer {
		t.Error("no loki.write endpoint points at the analyzer")
	}

	// The journal fields the tracker and ingest read survive the pipeline.
	aj, err := deploy.JournalPipeline(root)
	if err != nil {
		t.Fatal(err)
	}
	needed := []string{"_HOSTNAME", "_SYSTEMD_UNIT", "_SYSTEMD_INVOCATION_ID", "_PID", "SYSLOG_IDENTIFIER",
		"_TRANSPORT", "_STREAM_ID", "_LINE_BREAK", "PRIORITY", "UNIT", "INVOCATION_ID", "MESSAGE_ID", "JOB_TYPE",
		"N_RESTARTS", "EXIT_CODE", "EXIT_STATUS", "UNIT_RESULT", "OBJECT_SYSTEMD_UNIT", "CONTAINER_NAME",
		"CONTAINER_ID", "CONTAINER_ID_FULL", "CONTAINER_PARTIAL_MESSAGE", "CONTAINER_PARTIAL_ID",
		"CONTAINER_PARTIAL_ORDINAL", "CONTAINER_PARTIAL_LAST", "PODMAN_EVENT", "PODMAN_NAME", "PODMAN_ID"}
	fields := map[string]string{}
	for i, f := range needed {
		fields[f] = "v" + string(rune('a'+i%26)) + f
	}
	fields["MESSAGE"] = "hello"
	labels, meta, keep := aj.Entry(fields)
	if !keep {
		t.Fatal("the pipeline drops a plain entry")
	}
	back := map[string]string{}
	for _, src := range []map[string]string{labels, meta} {
		for name, v := range src {
			if f := loki.FieldName(name); f != "" {
				back[f] = v
			}
		}
	}
	for _, f := range needed {
		if back[f] != fields[f] {
			t.Errorf("journal field %s does not reach the analyzer (got %q)", f, back[f])
		}
	}
	// Stream labels stay low-cardinality.
	for name := range labels {
		switch name {
		case "job", "host", "unit":
		default:
			t.Errorf("stream label %s would multiply Loki streams; send it as structured metadata", name)
		}
	}
	if _, ok := labels["__journal_message"]; ok || back["MESSAGE"] != "" {
		t.Error("MESSAGE must be the line, not a label")
	}
}

func checkNames(t *testing.T, b *deploy.Block, path string, allowed []string) {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, a := range b.Order {
		if !ok[a] {
			t.Errorf("line %d: %s has no attribute %s", b.Line, path, a)
		}
	}
	for _, c := range b.Blocks {
		if !ok[c.Name] {
			t.Errorf("line %d: %s has no block %s", c.Line, path, c.Name)
			continue
		}
		if inner, has := alloySchema[path+"/"+c.Name]; has {
			checkNames(t, c, path+"/"+c.Name, inner)
		}
	}
}

// exportedTypes is each family's type (COUNTER, GAUGE, ...), set by exported.
var exportedTypes map[string]string

// exported gathers /metrics after replaying the fixtures (and one event of
// each live kind) and returns each family's label names.
func exported(t *testing.T) map[string]map[string]bool {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, f := range []string{"dankserver-night-ladder", "dankclaw-day"} {
		as := fixturetest.Attempts(t, "../examples/"+f+".journal.json")
		if err := db.SaveAttempts(context.Background(), as, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A boot in progress (started a minute ago, nothing before it), so
	// that the stall gauge, which exists only while a unit boots, is there.
	booting := &domain.Attempt{ID: "booting", Host: "gpu9", Unit: "booting.service", InvocationID: "inv", Engine: "vllm",
		StartedAt: time.Now().Add(-time.Minute), Phase: domain.PhaseWeights, Verdict: domain.VerdictRunning, Shape: domain.Shape{}}
	if err := db.SaveAttempts(context.Background(), []*domain.Attempt{booting}, nil); err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Options{Store: db, Progress: db, NoProcessMetrics: true})
	m.JournalEntry("dankserver", time.Now())
	m.LokiRequest("204")
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	exportedTypes = map[string]string{}
	for _, mf := range mfs {
		exportedTypes[mf.GetName()] = mf.GetType().String()
		labels := map[string]bool{}
		for _, s := range mf.GetMetric() {
			for _, lp := range s.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		out[mf.GetName()] = labels
	}
	return out
}

// query is one PromQL or LogQL expression of the provisioning files.
type query struct {
	where string
	ds    string // "prometheus" or "loki"
	expr  string
}

// queries collects the expressions of the alert rules and the dashboard.
func queries(t *testing.T) []query {
	t.Helper()
	dsKind := map[string]string{}
	var ds struct {
		Datasources []struct{ UID, Type string } `yaml:"datasources"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "grafana/provisioning/datasources/analyzer.yaml")), &ds); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Datasources {
		dsKind[d.UID] = d.Type
	}
	var out []query
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				UID  string `yaml:"uid"`
				Data []struct {
					RefID         string         `yaml:"refId"`
					DatasourceUID string         `yaml:"datasourceUid"`
					Model         map[string]any `yaml:"model"`
				} `yaml:"data"`
				Condition string `yaml:"condition"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "grafana/provisioning/alerting/analyzer.yaml")), &rules); err != nil {
		t.Fatal(err)
	}
	uids := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			uids[r.UID] = true
			refs := map[string]bool{}
			for _, d := range r.Data {
				refs[d.RefID] = true
				if d.DatasourceUID == "__expr__" {
					continue
				}
				kind := dsKind[d.DatasourceUID]
				if kind == "" {
					t.Errorf("rule %s: data source %q is not provisioned", r.UID, d.DatasourceUID)
				}
				expr, _ := d.Model["expr"].(string)
				out = append(out, query{where: "alert " + r.UID, ds: kind, expr: expr})
			}
			if !refs[r.Condition] {
				t.Errorf("rule %s: condition %s is not one of its queries", r.UID, r.Condition)
			}
		}
	}
	for _, want := range []string{"analyzer-new-failed-attempt", "analyzer-crash-loop", "analyzer-clean-exit-death",
		"analyzer-journal-lag", "analyzer-critical-finding"} {
		if !uids[want] {
			t.Errorf("no alert rule %s", want)
		}
	}
	var dash struct {
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name    string          `json:"name"`
				Type    string          `json:"type"`
				Query   json.RawMessage `json:"query"`
				Current struct {
					Value any `json:"value"`
				} `json:"current"`
			} `json:"list"`
		} `json:"templating"`
		Annotations struct {
			List []struct {
				Name       string `json:"name"`
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"list"`
		} `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(read(t, "grafana/dashboards/analyzer.json")), &dash); err != nil {
		t.Fatal(err)
	}
	// A data source variable (${prom}) stands for a data source of its
	// type; its default must be a provisioned one of that type.
	for _, v := range dash.Templating.List {
		if v.Type != "datasource" {
			continue
		}
		var typ string
		if err := json.Unmarshal(v.Query, &typ); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		if cur := fmt.Sprint(v.Current.Value); dsKind[cur] != typ {
			t.Errorf("variable %s: default %q is no provisioned %s data source", v.Name, cur, typ)
		}
		dsKind["${"+v.Name+"}"] = typ
	}
	titles := map[string]bool{}
	for _, p := range dash.Panels {
		titles[p.Title] = true
		for _, tg := range p.Targets {
			uid := tg.Datasource.UID
			if uid == "" {
				uid = p.Datasource.UID
			}
			kind := dsKind[uid]
			if kind == "" {
				t.Errorf("panel %q: data source %q is not provisioned", p.Title, uid)
			}
			out = append(out, query{where: "panel " + p.Title, ds: kind, expr: tg.Expr})
		}
	}
	for _, want := range []string{"Attempts over time by verdict", "Current unit states"} {
		if !titles[want] {
			t.Errorf("the dashboard has no panel %q", want)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		out = append(out, query{where: "variable " + v.Name, ds: "prometheus", expr: q.Query})
	}
	for _, a := range dash.Annotations.List {
		kind := dsKind[a.Datasource.UID]
		if kind == "" {
			t.Errorf("annotation %q: data source %q is not provisioned", a.Name, a.Datasource.UID)
		}
		out = append(out, query{where: "annotation " + a.Name, ds: kind, expr: a.Expr})
	}
	return out
}

var (
	metricRE  = regexp.MustCompile(`\banalyzer_[a-z0-9_]+\b`)
	matcherRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"`)
	groupRE   = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	lvRE      = regexp.MustCompile(`label_values\((?:[^,]*),\s*([A-Za-z_][A-Za-z0-9_]*)\)`)
	selRE     = regexp.MustCompile(`\{[^}]*\}`)
	funcOfRE  = regexp.MustCompile(`\b(increase|rate|irate|delta|deriv)\(\s*(analyzer_[a-z0-9_]+)`)
)

// TestQueriesUseExportedNames checks that every metric an alert rule or a
// dashboard panel queries is exported by /metrics, with the labels the
// query matches or groups by; that the Loki queries select the findings
// stream by the labels the pusher sets; and that the failed-attempt rule
// lists exactly the failure verdicts.
func TestQueriesUseExportedNames(t *testing.T) {
	fams := exported(t)
	lokiLabels := map[string]bool{"job": true, "host": true, "unit": true, "engine": true, "finding": true, "verdict": true, "severity": true}
	qs := queries(t)
	if len(qs) < 10 {
		t.Fatalf("only %d queries found", len(qs))
	}
	for _, q := range qs {
		if strings.TrimSpace(q.expr) == "" {
			t.Errorf("%s: empty query", q.where)
			continue
		}
		var allowed map[string]bool
		switch q.ds {
		case "prometheus":
			// The target labels Prometheus adds to every scraped series,
			// and its own up series of the analyzer's scrape job.
			allowed = map[string]bool{"instance": true, "job": true}
			names := metricRE.FindAllString(q.expr, -1)
			if len(names) == 0 && !strings.Contains(q.expr, `up{job="analyzer"}`) {
				t.Errorf("%s: %q queries no analyzer metric", q.where, q.expr)
			}
			for _, n := range names {
				ls, ok := fams[n]
				if !ok {
					t.Errorf("%s: metric %s is not exported by /metrics", q.where, n)
					continue
				}
				// increase() on a gauge that goes down counts a reset, and
				// delta() on a counter misses one: each wants its kind.
				for _, m := range funcOfRE.FindAllStringSubmatch(q.expr, -1) {
					if m[2] != n {
						continue
					}
					switch typ := exportedTypes[n]; {
					case (m[1] == "increase" || m[1] == "rate" || m[1] == "irate") && typ != "COUNTER":
						t.Errorf("%s: %s() of %s, a %s", q.where, m[1], n, typ)
					case (m[1] == "delta" || m[1] == "deriv") && typ != "GAUGE":
						t.Errorf("%s: %s() of %s, a %s", q.where, m[1], n, typ)
					}
				}
				for l := range ls {
					allowed[l] = true
				}
			}
		case "loki":
			allowed = lokiLabels
			if !strings.Contains(q.expr, `job="analyzer"`) {
				t.Errorf("%s: %q does not select the findings stream job=\"analyzer\"", q.where, q.expr)
			}
		default:
			t.Errorf("%s: unknown data source kind %q", q.where, q.ds)
			continue
		}
		var used []string
		for _, sel := range selRE.FindAllString(q.expr, -1) {
			for _, m := range matcherRE.FindAllStringSubmatch(sel, -1) {
				used = append(used, m[1])
			}
		}
		for _, g := range groupRE.FindAllStringSubmatch(q.expr, -1) {
			for _, l := range strings.Split(g[1], ",") {
				if l = strings.TrimSpace(l); l != "" {
					used = append(used, l)
				}
			}
		}
		for _, m := range lvRE.FindAllStringSubmatch(q.expr, -1) {
			used = append(used, m[1])
		}
		for _, l := range used {
			if !allowed[l] {
				t.Errorf("%s: label %s is not exported with the metrics of %q", q.where, l, q.expr)
			}
		}
	}

	// The failed-attempt rule reads when a unit last failed, which /metrics
	// exports for failure verdicts only (metrics.TestLastFailedTimestamp),
	// never a counter that backfills and restarts move.
	for _, q := range qs {
		if q.where == "alert analyzer-new-failed-attempt" &&
			(!strings.Contains(q.expr, "analyzer_attempt_last_failed_timestamp_seconds") || strings.Contains(q.expr, "increase(")) {
			t.Errorf("the failed-attempt rule does not read the last-failed time: %s", q.expr)
		}
	}
}

// TestPrometheusRules runs the real promtool on the Prometheus rule file:
// `promtool check rules` and `promtool test rules` (a never-seen unit's
// first failure fires, a known unit's too, a restarted analyzer does not
// page for old failures), and checks that the Grafana-managed alert uses
// the same expression.
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus; scripts/install-deps.sh test installs it)")
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var prom struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
				For   string `yaml:"for"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "prometheus/rules.yaml")), &prom); err != nil {
		t.Fatal(err)
	}
	var gr struct {
		Groups []struct {
			Rules []struct {
				UID  string `yaml:"uid"`
				For  string `yaml:"for"`
				Data []struct {
					DatasourceUID string         `yaml:"datasourceUid"`
					Model         map[string]any `yaml:"model"`
				} `yaml:"data"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "grafana/provisioning/alerting/analyzer.yaml")), &gr); err != nil {
		t.Fatal(err)
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	norm := func(d string) string {
		if d == "" {
			return "0s"
		}
		return d
	}
	// Every alert in both forms: Grafana's query A with threshold C
	// ("lt 900") is a Prometheus alert's expression with its comparison
	// ("... < 900"), with the same pending time. Rules on Loki (LogQL)
	// have no Prometheus form.
	promFor := map[string]string{}
	for _, g := range prom.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				promFor[squash(r.Expr)] = norm(r.For)
			}
		}
	}
	grafanaFor := map[string]string{}
	for _, g := range gr.Groups {
		for _, r := range g.Rules {
			if len(r.Data) != 3 || r.Data[0].DatasourceUID != "analyzer-prometheus" {
				continue
			}
			expr, _ := r.Data[0].Model["expr"].(string)
			conds, _ := r.Data[2].Model["conditions"].([]any)
			if len(conds) != 1 {
				t.Errorf("%s: %d threshold conditions, want 1", r.UID, len(conds))
				continue
			}
			ev, _ := conds[0].(map[string]any)["evaluator"].(map[string]any)
			params, _ := ev["params"].([]any)
			op := map[string]string{"lt": "<", "gt": ">"}[fmt.Sprint(ev["type"])]
			if op == "" || len(params) != 1 {
				t.Errorf("%s: threshold %v", r.UID, ev)
				continue
			}
			grafanaFor[squash(fmt.Sprintf("%s %s %v", expr, op, params[0]))] = norm(r.For)
		}
	}
	if len(grafanaFor) < 2 {
		t.Fatalf("only %d Grafana rules on Prometheus", len(grafanaFor))
	}
	for e, f := range grafanaFor {
		if pf, ok := promFor[e]; !ok {
			t.Errorf("Grafana alert %q has no Prometheus rule", e)
		} else if pf != f {
			t.Errorf("%q: pending %s in Grafana, %s in Prometheus", e, f, pf)
		}
	}
	for e := range promFor {
		if _, ok := grafanaFor[e]; !ok {
			t.Errorf("Prometheus alert %q has no Grafana rule", e)
		}
	}
}

// TestJournalCatalog: the shipped catalog has an entry for every
// MESSAGE_ID a note can carry (every rule's, and the tracker's own), and
// the real journalctl --update-catalog accepts it and finds each entry.
func TestJournalCatalog(t *testing.T) {
	catalog := read(t, "systemd/analyzer.catalog")
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^-- ([0-9a-f]{32})$`).FindAllStringSubmatch(catalog, -1) {
		ids[m[1]] = true
	}
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, r := range set.Rules() {
		if r.MessageID != "" {
			want[r.MessageID] = r.ID
		}
	}
	for _, id := range []string{"c4deb1c694538b4d8d75dce263d1534e", "d7bd97a9522bf7b670303457da23dd0c"} { // unknown_failure, log_loss
		want[id] = "tracker"
	}
	for id, rule := range want {
		if !ids[id] {
			t.Errorf("MESSAGE_ID %s (%s) has no catalog entry", id, rule)
		}
	}
	journalctl, err := exec.LookPath("journalctl")
	if err != nil {
		t.Skip("no journalctl")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "usr/lib/systemd/catalog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "analyzer.catalog"), []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(journalctl, "--root="+root, "--update-catalog").CombinedOutput(); err != nil {
		t.Fatalf("journalctl --update-catalog: %v: %s", err, out)
	}
	for id := range ids {
		out, err := exec.Command(journalctl, "--root="+root, "--dump-catalog", id).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Subject: ") || !strings.Contains(string(out), "@OBJECT_SYSTEMD_UNIT@") {
			t.Errorf("journalctl --dump-catalog %s: %v: %s", id, err, out)
		}
	}
}

// TestUnitWithSystemdTools runs the real systemd-analyze on the shipped
// unit: `verify` finds nothing but the binary missing on this machine, and
// `security --offline` rates its exposure at most 2.5.
func TestUnitWithSystemdTools(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("no systemd-analyze")
	}
	unit := filepath.Join(t.TempDir(), "analyzer.service")
	if err := os.WriteFile(unit, []byte(read(t, "systemd/analyzer.service")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(sa, "verify", unit).CombinedOutput()
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.Contains(l, "/usr/local/bin/analyzer is not executable") {
			t.Errorf("systemd-analyze verify: %s", l)
		}
	}
	out, err = exec.Command(sa, "security", "--offline=true", unit).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for analyzer.service: (\d+\.\d)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("systemd-analyze security: %v: %s", err, out)
	}
	if v, err := strconv.ParseFloat(m[1], 64); err != nil || v > 2.5 {
		t.Errorf("exposure %s, want at most 2.5", m[1])
	}
}

// TestAlloyIndentedWithTabs: `alloy fmt` indents with tabs (spaces only
// align), so a shipped file indented with spaces is not fmt-clean. Alloy's
// own formatter (github.com/grafana/alloy/syntax) is not served by the
// module proxy here; this checks the part of its output that differed.
func TestAlloyIndentedWithTabs(t *testing.T) {
	n := 0
	for _, p := range files(t) {
		if !strings.HasSuffix(p, ".alloy") {
			continue
		}
		n++
		for i, l := range strings.Split(read(t, p), "\n") {
			if lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]; strings.Contains(lead, " ") {
				t.Errorf("%s:%d: indented with spaces: %q", p, i+1, l)
			}
		}
	}
	if n == 0 {
		t.Fatal("no .alloy file found")
	}
}

// TestAlloyJobMatchesReplayQuery: the job label the shipped Alloy config
// gives the journal streams is the one `replay --from-loki` selects by
// default, so the defaults read what the defaults ship.
func TestAlloyJobMatchesReplayQuery(t *testing.T) {
	src := read(t, "alloy/config.alloy")
	m := regexp.MustCompile(`(?m)^\s*labels\s*=\s*\{\s*job\s*=\s*"([^"]+)"\s*\}`).FindStringSubmatch(src)
	q := regexp.MustCompile(`job="([^"]+)"`).FindStringSubmatch(loki.DefaultQuery)
	if m == nil || q == nil || m[1] != q[1] {
		t.Fatalf("Alloy labels job %v, replay --from-loki selects %s", m, loki.DefaultQuery)
	}
}

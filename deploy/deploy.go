// Package deploy holds what runs the analyzer in a fleet, as plain files:
//
//	systemd/analyzer.service          the analyzer as a service (serve, /metrics, Loki push in)
//	systemd/analyzer.env              its environment file (/etc/default/analyzer)
//	alloy/config.alloy                Grafana Alloy on each inference host: journal → Loki and → the analyzer
//	prometheus/scrape.yaml            the scrape job for /metrics
//	grafana/provisioning/datasources  the Prometheus and Loki data sources (fixed UIDs)
//	grafana/provisioning/alerting     alert rules on /metrics and on the Loki findings stream
//	grafana/provisioning/dashboards   the dashboard provider
//	grafana/dashboards/analyzer.json  attempts over time by verdict, current unit states
//
// The files are embedded (Files) so tests, and the binary, can read them;
// deploy_test.go parses every one and checks that the queries name metrics
// and labels that /metrics really exports. AlloyJournal models what the
// Alloy config sends for a journal entry.
package deploy

import "embed"

// Files are the deployment files, by their path under deploy/.
//
//go:embed alloy grafana prometheus systemd
var Files embed.FS

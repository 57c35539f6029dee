package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	toolkit "github.com/prometheus/exporter-toolkit/web"
	"gopkg.in/yaml.v3"
)

// maxWebConfigBytes caps the web config file read for its summary.
const maxWebConfigBytes = 1 << 20

// webConfig is what serve needs to know of a --web.config.file before it
// starts: whether it turns on TLS and basic auth. The file itself is read
// and applied by github.com/prometheus/exporter-toolkit/web (the format of
// https://prometheus.io/docs/prometheus/latest/configuration/https/), on
// every new connection, so a renewed certificate is taken without a restart.
type webConfig struct {
	path      string
	tls       bool
	basicAuth bool
}

// loadWebConfig validates the file as the toolkit will read it (YAML, bcrypt
// hashes, certificate and key files) and summarises it; "" is no file.
func loadWebConfig(path string) (webConfig, error) {
	wc := webConfig{path: path}
	if path == "" {
		return wc, nil
	}
	if err := toolkit.Validate(path); err != nil {
		return wc, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return wc, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxWebConfigBytes+1))
	if err != nil {
		return wc, err
	}
	if len(b) > maxWebConfigBytes {
		return wc, fmt.Errorf("--web.config.file %s: over %d bytes", path, maxWebConfigBytes)
	}
	var doc struct {
		TLS struct {
			CertFile string `yaml:"cert_file"`
			Cert     string `yaml:"cert"`
		} `yaml:"tls_server_config"`
		Users map[string]string `yaml:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return wc, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	wc.tls = doc.TLS.CertFile != "" || doc.TLS.Cert != ""
	wc.basicAuth = len(doc.Users) > 0
	return wc, nil
}

// scheme is the URL scheme the server answers with.
func (wc webConfig) scheme() string {
	if wc.tls {
		return "https"
	}
	return "http"
}

// serve runs srv on ln, with TLS and basic auth as the web config says.
func (wc webConfig) serve(srv *http.Server, ln net.Listener) error {
	path := wc.path
	addrs := []string{ln.Addr().String()}
	no := false
	logger := slog.New(quieter{slog.Default().Handler(), slog.LevelWarn})
	return toolkit.Serve(ln, srv, &toolkit.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &no, WebConfigFile: &path}, logger)
}

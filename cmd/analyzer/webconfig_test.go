package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/llmfleet/analyzer/loki"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "analyzer test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestServeWebConfigTLSAndBasicAuth runs serve with a Prometheus web
// config file (tls_server_config, basic_auth_users with a bcrypt hash) and
// talks to it with a real TLS client: plain HTTP and an untrusting client
// fail, no or wrong credentials get 401, the right ones reach /-/healthy,
// /-/ready, /metrics and the push endpoint.
func TestServeWebConfigTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("right horse"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+
		"\nbasic_auth_users:\n  alloy: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	t.Setenv("ANALYZER_PUSH_TOKEN", "")
	stop := serveInProcess(t, "--db", filepath.Join(dir, "s.db"), "--no-journal", "--listen", addr, "--web.config.file", cfg)
	t.Cleanup(stop)
	base := "https://" + addr
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	do := func(method, path, user, pass string, body []byte) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			return -1, err.Error(), nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	waitFor(t, "serve to answer over TLS", func() bool {
		code, _, _ := do("GET", "/-/healthy", "alloy", "right horse", nil)
		return code == 200
	})
	if code, body, _ := do("GET", "/-/healthy", "alloy", "right horse", nil); code != 200 || body != "Healthy.\n" {
		t.Errorf("/-/healthy: %d %q", code, body)
	}
	for _, path := range []string{"/-/healthy", "/-/ready", "/metrics", "/api/v1/attempts"} {
		t.Run(path, func(t *testing.T) {
			if code, _, h := do("GET", path, "", "", nil); code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("%s without credentials: %d %v, want 401 asking for Basic", path, code, h)
			}
			if code, _, _ := do("GET", path, "alloy", "wrong horse", nil); code != 401 {
				t.Errorf("%s with a wrong password: %d, want 401", path, code)
			}
			if code, _, _ := do("GET", path, "mallory", "right horse", nil); code != 401 {
				t.Errorf("%s with an unknown user: %d, want 401", path, code)
			}
		})
	}
	if code, body, _ := do("GET", "/-/ready", "alloy", "right horse", nil); code != 200 || !strings.HasPrefix(body, "ok\n") {
		t.Errorf("/-/ready: %d %q", code, body)
	}
	if code, body, _ := do("GET", "/metrics", "alloy", "right horse", nil); code != 200 || !strings.Contains(body, "analyzer_build_info{") {
		t.Errorf("/metrics: %d %.200q", code, body)
	}
	push := []byte(`{"streams":[{"stream":{"job":"systemd-journal","host":"h1","unit":"vllm.service"},"values":[["1767225600000000000","INFO hello"]]}]}`)
	if code, body, _ := do("POST", loki.PushPath, "alloy", "wrong horse", push); code != 401 {
		t.Errorf("push with a wrong password: %d %s", code, body)
	}
	if code, body, _ := do("POST", loki.PushPath, "alloy", "right horse", push); code != 204 {
		t.Errorf("push with basic auth: %d %s", code, body)
	}
	// Plain HTTP to the TLS port is refused; a client that does not trust
	// the certificate does not get through.
	if resp, err := http.Get("http://" + addr + "/-/healthy"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP: %d, want 400 (Go's answer to HTTP on a TLS port)", resp.StatusCode)
		}
	}
	if _, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/-/healthy"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusting client: %v, want a certificate error", err)
	}
}

// TestServeWebConfigRefused: a web config whose password is not a bcrypt
// hash, or that names a missing certificate, stops serve before it
// listens; basic auth with a push token is a usage error.
func TestServeWebConfigRefused(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ANALYZER_PUSH_TOKEN", "")
	for name, content := range map[string]string{
		"plain password":   "basic_auth_users:\n  alloy: right horse\n",
		"missing cert":     "tls_server_config:\n  cert_file: " + dir + "/nope.pem\n  key_file: " + dir + "/nope.key\n",
		"unknown key":      "tls_server_config:\n  cert_fil: x\n",
		"not yaml mapping": "- a\n- b\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(dir, "web.yml")
			if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			err := run(t.Context(), []string{"serve", "--db", filepath.Join(dir, "x.db"), "--no-journal", "--listen", "127.0.0.1:0", "--web.config.file", cfg})
			if err == nil || !strings.Contains(err.Error(), "--web.config.file") {
				t.Errorf("%s: %v, want an error naming --web.config.file", name, err)
			}
		})
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte("x"), bcrypt.MinCost)
	cfg := filepath.Join(dir, "auth.yml")
	if err := os.WriteFile(cfg, []byte("basic_auth_users:\n  alloy: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(t.Context(), []string{"serve", "--db", filepath.Join(dir, "x.db"), "--no-journal", "--listen", "127.0.0.1:0",
		"--web.config.file", cfg, "--push-token", "t"})
	if _, ok := err.(usageError); !ok {
		t.Errorf("basic auth and --push-token: %v, want a usage error", err)
	}
}

// TestHealthyIsLiveness: /-/healthy answers GET and HEAD with 200 on plain
// HTTP without a web config.
func TestHealthyIsLiveness(t *testing.T) {
	base := startServe(t)
	for _, m := range []string{"GET", "HEAD"} {
		req, _ := http.NewRequest(m, base+"/-/healthy", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || (m == "GET" && string(b) != "Healthy.\n") {
			t.Errorf("%s /-/healthy: %d %q", m, resp.StatusCode, b)
		}
	}
}
